// Device-side loop helpers: the grid-stride loop, the per-element operand offsets
// (kernels/common/layout_index.h, shared with host tests) and the raw-move type of an
// element size. Device code only.
#pragma once

#include <cstdint>

#include <mixt/kernels/common/layout_index.h>
#include <mixt/kernels/cuda/launch.h>
#include <mixt/kernels/cuda/launch_kernel.cuh>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cuda {

// First element and step of the calling thread's grid-stride loop.
__device__ __forceinline__ int64_t grid_start() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_step() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// Launchers of raw moves: calls f(TypeTag<U>) with the unsigned type of `size` bytes.
template <class F>
cudaError_t visit_size(int size, F&& f) {
  switch (size) {
    case 1: return f(TypeTag<uint8_t>{});
    case 2: return f(TypeTag<uint16_t>{});
    case 4: return f(TypeTag<uint32_t>{});
    case 8: return f(TypeTag<uint64_t>{});
    default: return cudaErrorInvalidValue;
  }
}

}  // namespace mixt::cuda
