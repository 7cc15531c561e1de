// Device-side loop helpers: the grid-stride loop and the per-element operand offsets
// (kernels/common/layout_index.h, shared with host tests). Device code only.
#pragma once

#include <cstdint>

#include <mixt/kernels/common/layout_index.h>
#include <mixt/kernels/cuda/launch.h>
#include <mixt/kernels/cuda/launch_kernel.cuh>

namespace mixt::cuda {

// First element and step of the calling thread's grid-stride loop.
__device__ __forceinline__ int64_t grid_start() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_step() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

}  // namespace mixt::cuda
