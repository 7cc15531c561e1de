// Index math over a StridedLayout that host and device code share: the byte offsets
// of linear element i in each operand. The CUDA loops (kernels/cuda/elementwise.cuh)
// call it per element; tests/cpu/test_device_logic.cpp runs it on the host against
// the CPU's own walk. Dim 0 is the fastest. Plain C++ with MIXT_HD (nvcc and g++).
#pragma once

#include <cstdint>

#include <mixt/kernels/common/strided_layout.h>
#include <mixt/runtime/macros.h>

namespace mixt {

// i / size for non-negative values: 32-bit division when both fit (much cheaper on GPUs).
MIXT_HD inline int64_t div_nonneg(int64_t i, int64_t size) {
  return ((static_cast<uint64_t>(i) | static_cast<uint64_t>(size)) >> 32) == 0
             ? static_cast<int64_t>(static_cast<uint32_t>(i) / static_cast<uint32_t>(size))
             : i / size;
}

// Byte offsets of linear element `i` (0 <= i < L.numel) in the first N operands of `L`.
template <int N>
MIXT_HD inline void element_offsets(const StridedLayout& L, int64_t i, int64_t (&off)[N]) {
  static_assert(N >= 1 && N <= kMaxOperands, "a StridedLayout has at most kMaxOperands operands");
  for (int op = 0; op < N; ++op) off[op] = 0;
  for (int d = 0; d < kMaxDims; ++d) {
    if (d >= L.ndim) break;
    const int64_t q = div_nonneg(i, L.sizes[d]);
    const int64_t idx = i - q * L.sizes[d];
    i = q;
    for (int op = 0; op < N; ++op) off[op] += idx * L.strides[op][d];
  }
}

}  // namespace mixt
