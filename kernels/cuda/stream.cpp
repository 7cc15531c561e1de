// The CUDA calls behind streams and events (runtime/cuda_stream.h; the current stream
// of each thread and device is in runtime/cuda_stream.cpp). Streams made here are
// non-blocking and never destroyed, so a stream handle is never reused for another
// stream while the caching allocator still holds blocks keyed by it.
#include <algorithm>

#include <mixt/kernels/cuda/device_error.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/cuda.h>

namespace mixt::cuda {
namespace {

// cudaSuccess -> true, cudaErrorNotReady -> false, anything else raises.
bool ready(cudaError_t err, const char* op) {
  if (err == cudaErrorNotReady) {
    cudaGetLastError();
    return false;
  }
  check(err, op);
  return true;
}

}  // namespace

bool Stream::query() const {
  DeviceGuard guard(device_, "Stream::query");
  return ready(cudaStreamQuery(native(*this)), "Stream::query");
}

void Stream::synchronize() const {
  DeviceGuard guard(device_, "Stream::synchronize");
  check(cudaStreamSynchronize(native(*this)), "Stream::synchronize");
  raise_device_error(device_, "Stream::synchronize");
}

int Stream::priority() const {
  DeviceGuard guard(device_, "Stream::priority");
  int p = 0;
  check(cudaStreamGetPriority(native(*this), &p), "Stream::priority");
  return p;
}

PriorityRange stream_priority_range(Device device) {
  check_device(device, "cuda::stream_priority_range");
  DeviceGuard guard(device.index(), "cuda::stream_priority_range");
  PriorityRange r;
  check(cudaDeviceGetStreamPriorityRange(&r.least, &r.greatest), "cuda::stream_priority_range");
  return r;
}

Stream create_stream(Device device, int priority) {
  const PriorityRange r = stream_priority_range(device);
  DeviceGuard guard(device.index(), "cuda::create_stream");
  cudaStream_t s = nullptr;
  check(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, std::clamp(priority, r.greatest, r.least)),
        "cuda::create_stream");
  return Stream::from_handle(device, s);
}

Event::~Event() {
  if (handle_ && cudaEventDestroy(static_cast<cudaEvent_t>(handle_)) != cudaSuccess) cudaGetLastError();
}

void Event::record(const Stream& stream) {
  DeviceGuard guard(stream.device_index(), "Event::record");
  if (!handle_) {
    cudaEvent_t e = nullptr;
    check(cudaEventCreateWithFlags(&e, timing_ ? cudaEventDefault : cudaEventDisableTiming), "Event::record");
    handle_ = e;
    device_ = static_cast<int8_t>(stream.device_index());
  }
  MIXT_CHECK(device_ == stream.device_index(), "Event::record",
             "the event belongs to cuda:{} and cannot be recorded on a stream of {}", static_cast<int>(device_),
             stream.device());
  check(cudaEventRecord(static_cast<cudaEvent_t>(handle_), native(stream)), "Event::record");
}

void Event::wait(const Stream& stream) const {
  if (!handle_) return;
  DeviceGuard guard(stream.device_index(), "Event::wait");
  check(cudaStreamWaitEvent(native(stream), static_cast<cudaEvent_t>(handle_), 0), "Event::wait");
}

bool Event::query() const {
  if (!handle_) return true;
  DeviceGuard guard(device_, "Event::query");
  return ready(cudaEventQuery(static_cast<cudaEvent_t>(handle_)), "Event::query");
}

void Event::synchronize() const {
  if (!handle_) return;
  DeviceGuard guard(device_, "Event::synchronize");
  check(cudaEventSynchronize(static_cast<cudaEvent_t>(handle_)), "Event::synchronize");
  raise_device_error(device_, "Event::synchronize");
}

float Event::elapsed_ms(const Event& end) const {
  MIXT_CHECK(handle_ && end.handle_, "Event::elapsed_ms", "both events must have been recorded");
  MIXT_CHECK(timing_ && end.timing_, "Event::elapsed_ms", "both events must be made with enable_timing = true");
  DeviceGuard guard(device_, "Event::elapsed_ms");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(handle_), static_cast<cudaEvent_t>(end.handle_)),
        "Event::elapsed_ms");
  return ms;
}

}  // namespace mixt::cuda
