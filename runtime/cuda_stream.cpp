// The parts of runtime/cuda_stream.h that need no CUDA call, in every build: stream
// values, the current stream of each thread and device, StreamGuard. The CUDA calls
// are in kernels/cuda/stream.cpp (kernels/cuda/unavailable.cpp without CUDA).
#include <mixt/runtime/cuda_stream.h>

#include <mixt/runtime/check.h>
#include <mixt/runtime/cuda.h>

namespace mixt::cuda {
namespace {

// This thread's current stream per device (nullptr: the default stream).
thread_local void* t_current[Device::kMaxCudaIndex + 1] = {};

}  // namespace

namespace detail {

void check_device(Device device, const char* op) {
  MIXT_CHECK(device.is_cuda(), op, "needs a CUDA device, not {}", device);
  MIXT_CHECK(is_available(), op, "CUDA is not available: {}", unavailable_reason());
  MIXT_CHECK(device.index() < device_count(), op, "{} does not exist: {} CUDA device(s) present", device,
             device_count());
}

void* current_stream_handle(int index) { return t_current[index]; }

}  // namespace detail

Stream Stream::from_handle(Device device, void* handle) {
  MIXT_CHECK(device.is_cuda(), "cuda::Stream", "a CUDA stream belongs to a CUDA device, not {}", device);
  return Stream(device.index(), handle);
}

Stream default_stream(Device device) {
  detail::check_device(device, "cuda::default_stream");
  return Stream::from_handle(device, nullptr);
}

Stream current_stream(Device device) {
  detail::check_device(device, "cuda::current_stream");
  return Stream::from_handle(device, t_current[device.index()]);
}

void set_current_stream(const Stream& stream) {
  detail::check_device(stream.device(), "cuda::set_current_stream");
  t_current[stream.device_index()] = stream.handle();
}

StreamGuard::StreamGuard(const Stream& stream) : previous_(current_stream(stream.device())) {
  set_current_stream(stream);
}

StreamGuard::~StreamGuard() { t_current[previous_.device_index()] = previous_.handle(); }

}  // namespace mixt::cuda
