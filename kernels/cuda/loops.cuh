// Device-side loop helpers over a Layout (launch.h): launch geometry and the byte
// offsets of element i of each operand. Indices are int64 throughout. Device code only.
#pragma once

#include <cstdint>

#include <mixt/kernels/cuda/launch.h>

namespace mixt::cuda {

constexpr int kBlockThreads = 256;
constexpr int64_t kMaxBlocks = 65535;  // grid-stride loops cover the rest

// Blocks for `n` elements (n > 0): one thread per element up to kMaxBlocks blocks.
inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kBlockThreads - 1) / kBlockThreads;
  return static_cast<unsigned>(b < kMaxBlocks ? b : kMaxBlocks);
}

// First element and step of the calling thread's grid-stride loop.
__device__ __forceinline__ int64_t grid_start() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_step() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// Byte offsets of linear element `i` in the first N operands of `L`.
template <int N>
__device__ __forceinline__ void layout_offsets(const Layout& L, int64_t i, int64_t (&off)[N]) {
#pragma unroll
  for (int op = 0; op < N; ++op) off[op] = 0;
#pragma unroll
  for (int d = 0; d < kLaunchMaxDims; ++d) {
    if (d >= L.ndim) break;
    const int64_t size = L.sizes[d];
    // Both are non-negative; 32-bit division is much cheaper when they fit.
    const int64_t q = ((static_cast<uint64_t>(i) | static_cast<uint64_t>(size)) >> 32) == 0
                          ? static_cast<int64_t>(static_cast<uint32_t>(i) / static_cast<uint32_t>(size))
                          : i / size;
    const int64_t idx = i - q * size;
    i = q;
#pragma unroll
    for (int op = 0; op < N; ++op) off[op] += idx * L.strides[op][d];
  }
}

}  // namespace mixt::cuda
