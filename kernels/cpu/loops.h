// CPU loop drivers over a StridedLayout: the innermost dim is handed to a
// kernel-supplied 1-D loop; large iteration spaces are split across threads
// with OpenMP. See Note [CPU loops].
#pragma once

#include <algorithm>
#include <cstdint>

#include <omp.h>

#include <mixt/kernels/common/strided_layout.h>

namespace mixt::cpu {

// Below this many elements a loop runs on one thread.
constexpr int64_t kParallelGrain = 32768;

// Number of threads a loop of `n` items with `grain` items per thread would use.
inline int threads_for(int64_t n, int64_t grain = kParallelGrain) {
  if (n < 2 * grain || omp_in_parallel()) return 1;
  const int64_t t = n / grain;
  const int max = omp_get_max_threads();
  return static_cast<int>(t < max ? t : max);
}

// Start of part `t` of `parts` equal parts of [0, n); n * t may not fit in int64.
inline int64_t split_point(int64_t n, int64_t t, int64_t parts) {
  return static_cast<int64_t>(static_cast<__int128>(n) * t / parts);
}

// Calls f(begin, end) over [0, n) split across threads.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  const int nt = threads_for(n, grain);
  if (nt <= 1) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(nt)
  {
    const int64_t t = omp_get_thread_num(), T = omp_get_num_threads();
    const int64_t begin = split_point(n, t, T), end = split_point(n, t + 1, T);
    if (begin < end) f(begin, end);
  }
}

// Runs `inner(ptrs, inner_strides, count)` over the linear range [begin, end)
// of the layout, where ptrs[i] points at operand i's first element of a run of
// `count` elements along dim 0, spaced by inner_strides[i] bytes.
template <class Inner>
void for_each_range(const StridedLayout& L, char* const* base, int64_t begin, int64_t end, Inner&& inner) {
  const int nops = L.noperands;
  int64_t idx[kMaxDims];
  int64_t rem = begin;
  for (int d = 0; d < L.ndim; ++d) {
    idx[d] = rem % L.sizes[d];
    rem /= L.sizes[d];
  }
  char* ptrs[kMaxOperands];
  int64_t inner_strides[kMaxOperands];
  for (int op = 0; op < nops; ++op) {
    char* p = base[op];
    for (int d = 0; d < L.ndim; ++d) p += idx[d] * L.strides[op][d];
    ptrs[op] = p;
    inner_strides[op] = L.strides[op][0];
  }
  int64_t pos = begin;
  while (pos < end) {
    const int64_t run = std::min(L.sizes[0] - idx[0], end - pos);
    inner(ptrs, inner_strides, run);
    pos += run;
    if (pos >= end) break;
    // Advance: finish dim 0, carry into the outer dims.
    for (int op = 0; op < nops; ++op) ptrs[op] += (run - 0) * L.strides[op][0];
    idx[0] += run;
    for (int d = 0; d < L.ndim && idx[d] == L.sizes[d]; ++d) {
      for (int op = 0; op < nops; ++op) ptrs[op] -= L.sizes[d] * L.strides[op][d];
      idx[d] = 0;
      if (d + 1 < L.ndim) {
        ++idx[d + 1];
        for (int op = 0; op < nops; ++op) ptrs[op] += L.strides[op][d + 1];
      }
    }
  }
}

// Runs `inner` over the whole layout, in parallel when it is large.
template <class Inner>
void for_each(const StridedLayout& L, char* const* base, Inner&& inner, int64_t grain = kParallelGrain) {
  if (L.numel == 0) return;
  parallel_for(L.numel, grain, [&](int64_t b, int64_t e) { for_each_range(L, base, b, e, inner); });
}

}  // namespace mixt::cpu
