// Launch shapes of the CUDA kernels, as plain host code so tests run them without a
// GPU (tests/cpu/test_device_logic.cpp): threads per block, the grid of a grid-stride
// loop, and the vector width of the dense fast path.
#pragma once

#include <cstdint>

namespace mixt {

constexpr int kBlockThreads = 256;
constexpr int64_t kMaxBlocks = 65535 * 8;  // grid-stride loops cover the rest
constexpr int kVectorBytes = 16;           // one 128-bit load or store per access

// Blocks of a grid-stride loop over `n` work items (n >= 0): one thread per item up to kMaxBlocks.
constexpr unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kBlockThreads - 1) / kBlockThreads;
  return static_cast<unsigned>(b < 1 ? 1 : b < kMaxBlocks ? b : kMaxBlocks);
}

// Elements per access of a dense run: kVectorBytes / element_size when every address in
// `addresses` (0 for scalar operands, which are skipped) is aligned to kVectorBytes and
// the element size divides it; 1 otherwise. The tail beyond a multiple is done singly.
constexpr int vector_elements(int64_t element_size, const uintptr_t* addresses, int n) {
  if (element_size <= 0 || element_size > kVectorBytes || kVectorBytes % element_size != 0) return 1;
  for (int k = 0; k < n; ++k)
    if (addresses[k] != 0 && addresses[k] % kVectorBytes != 0) return 1;
  return static_cast<int>(kVectorBytes / element_size);
}

}  // namespace mixt
