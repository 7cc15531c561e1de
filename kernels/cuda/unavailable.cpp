// The CUDA entry points of a build without the CUDA backend: CUDA is reported
// unavailable, never an error, and CUDA memory is refused saying so.
#include <mixt/dispatcher/op.h>
#include <mixt/runtime/allocator.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/cuda.h>
#include <mixt/runtime/cuda_memory.h>
#include <mixt/runtime/cuda_stream.h>
#include <mixt/runtime/tensor.h>

namespace mixt {
namespace {

// The CUDA allocator of this build: every request raises, with the reason.
class UnavailableAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device device) override {
    MIXT_FAIL("allocate", "cannot allocate {} bytes on {}: CUDA is not available: {}", nbytes, device,
              cuda::unavailable_reason());
  }
};

UnavailableAllocator g_unavailable;

// Raises from `op`: CUDA is not available, and why.
[[noreturn]] void unavailable(const char* op) {
  MIXT_FAIL(op, "CUDA is not available: {}", cuda::unavailable_reason());
}

}  // namespace

void register_cuda_kernels() { set_allocator(DeviceType::CUDA, &g_unavailable); }

namespace cuda {
bool is_compiled() { return false; }
bool is_emulated() { return false; }
std::string device_name(int) { unavailable("cuda::device_name"); }
bool is_available() { return false; }
int device_count() { return 0; }
std::string unavailable_reason() { return "no CUDA in this build: mixt was built without its CUDA backend (-Dcuda=disabled or no nvcc)"; }
void synchronize() {}
void launch_empty_kernel() { unavailable("cuda::launch_empty_kernel"); }
void launch_empty_kernel(Device) { unavailable("cuda::launch_empty_kernel"); }

// Streams and events: nothing to query, wait for or record without CUDA.
bool Stream::query() const { unavailable("Stream::query"); }
void Stream::synchronize() const { unavailable("Stream::synchronize"); }
int Stream::priority() const { unavailable("Stream::priority"); }
PriorityRange stream_priority_range(Device) { unavailable("cuda::stream_priority_range"); }
Stream create_stream(Device, int) { unavailable("cuda::create_stream"); }
Event::~Event() = default;  // never recorded, so never made
void Event::record(const Stream&) { unavailable("Event::record"); }
void Event::wait(const Stream&) const {}
bool Event::query() const { return true; }
void Event::synchronize() const {}
float Event::elapsed_ms(const Event&) const { unavailable("Event::elapsed_ms"); }
void record_stream(const Tensor&, const Stream&) { unavailable("cuda::record_stream"); }

// Memory: no CUDA allocation ever happened.
CachingPoolStats memory_stats(Device device) {
  MIXT_CHECK(device.is_cuda(), "cuda::memory_stats", "needs a CUDA device, not {}", device);
  return {};
}
void empty_cache() {}
void reset_peak_memory_stats(Device device) {
  MIXT_CHECK(device.is_cuda(), "cuda::reset_peak_memory_stats", "needs a CUDA device, not {}", device);
}
Tensor empty_pinned(const Shape&, ScalarType) { unavailable("cuda::empty_pinned"); }
bool is_pinned(const Tensor&) { return false; }
CachingPoolStats pinned_memory_stats() { return {}; }
}  // namespace cuda

}  // namespace mixt
