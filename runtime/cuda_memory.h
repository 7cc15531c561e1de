// The CUDA caching allocator's statistics and cache control, and pinned (page-locked)
// host memory. Free of CUDA headers. In a build or on a machine without CUDA the
// statistics are all zero and empty_cache() does nothing; pinned memory raises.
#pragma once

#include <mixt/runtime/caching_allocator.h>
#include <mixt/runtime/device.h>
#include <mixt/runtime/dtype.h>
#include <mixt/runtime/shape.h>

namespace mixt {
class Tensor;
}

namespace mixt::cuda {

// The caching allocator's counters for `device` (Note [Stream-ordered caching allocator]):
// allocated, reserved and cached bytes, the peak, segments, cache hits, device mallocs
// and frees. All zero before the device's first allocation.
CachingPoolStats memory_stats(Device device);
// Returns every wholly free cached segment of every device, and of pinned host memory,
// to the driver (memory still allocated, or freed but in use on other streams, stays).
void empty_cache();
// Sets the peak allocated bytes of `device` to what is allocated now.
void reset_peak_memory_stats(Device device);

// An uninitialized CPU tensor in pinned host memory (cudaHostAlloc, cached like device
// memory): transfers from and to it run asynchronously at full speed.
Tensor empty_pinned(const Shape& sizes, ScalarType dtype);
// True when `t` is a CPU tensor whose memory came from empty_pinned().
bool is_pinned(const Tensor& t);
// The pinned host memory pool's counters.
CachingPoolStats pinned_memory_stats();

}  // namespace mixt::cuda
