// The order of the CUDA sorting kernels (sort, argsort, topk, unique: kernels/cuda/sort.cu)
// as plain C++ with MIXT_HD, so that tests/cpu/test_sort_logic.cpp runs the same keys and
// the same network on the host against the CPU kernels' order.
// Note [Sort keys] (docs/notes/cuda.md): a 64-bit unsigned key per element whose order is
// the CPU's (NaN largest, -0.0 equal to +0.0), complemented for a descending sort; pairs
// (key, position) sorted ascending give a stable sort.
// Note [Bitonic lines]: each line padded to a power of two with pairs that sort last, then
// sorted by a bitonic network, one launch per (k, j) step.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <mixt/kernels/common/convert.h>
#include <mixt/runtime/macros.h>

namespace mixt::sort_keys {

constexpr uint64_t kSignBit = uint64_t{1} << 63;
// The key of every NaN: a positive quiet NaN's bits with the sign flipped, above +inf's key.
constexpr uint64_t kNanKey = 0xFFF8000000000000ull;
constexpr uint64_t kPadKey = ~uint64_t{0};

MIXT_HD inline uint64_t double_bits(double d) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(d));
#else
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
#endif
}

// The ascending order key of one element of storage type T (Note [Sort keys]).
template <class T>
MIXT_HD inline uint64_t ascending_key(T v) {
  if constexpr (std::is_integral_v<T>) {
    return static_cast<uint64_t>(static_cast<int64_t>(v)) ^ kSignBit;
  } else {
    double d = convert<double>(v);
    if (d != d) return kNanKey;
    if (d == 0) d = 0.0;  // -0.0 sorts as +0.0
    const uint64_t u = double_bits(d);
    return (u & kSignBit) ? ~u : (u | kSignBit);
  }
}

template <class T>
MIXT_HD inline uint64_t order_key(T v, bool descending) {
  const uint64_t k = ascending_key(v);
  return descending ? ~k : k;
}

// True when an ascending key is a NaN's (unique: each NaN is its own group).
MIXT_HD inline bool is_nan_key(uint64_t ascending) { return ascending == kNanKey; }

// The padded length of a line of `len` >= 1 elements: the power of two >= len.
MIXT_HD inline int64_t padded_length(int64_t len) {
  int64_t p = 1;
  while (p < len) p <<= 1;
  return p;
}

// Pair p (0 <= p < P/2) of the step with partner distance j: positions lo < hi = lo | j.
MIXT_HD inline void bitonic_pair(int64_t p, int64_t j, int64_t* lo, int64_t* hi) {
  const int64_t low_bits = p & (j - 1);
  *lo = ((p - low_bits) << 1) | low_bits;
  *hi = *lo | j;
}

// One compare-and-swap of positions lo < hi of a line in the step of block size k.
MIXT_HD inline void bitonic_compare_swap(uint64_t* keys, int64_t* pos, int64_t lo, int64_t hi, int64_t k) {
  const bool ascending = (lo & k) == 0;
  const bool greater = keys[lo] > keys[hi] || (keys[lo] == keys[hi] && pos[lo] > pos[hi]);
  if (greater == ascending) {
    const uint64_t kk = keys[lo];
    keys[lo] = keys[hi];
    keys[hi] = kk;
    const int64_t pp = pos[lo];
    pos[lo] = pos[hi];
    pos[hi] = pp;
  }
}

}  // namespace mixt::sort_keys
