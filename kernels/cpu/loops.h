// CPU loop drivers over a StridedLayout: the innermost dim is handed to a
// kernel-supplied 1-D loop; large iteration spaces are split across threads
// with OpenMP. See Note [CPU loops].
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

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

// Note [Loop drivers compiled once]: the thread split and the walk over a strided layout
// are compiled once, in loops.cpp; a kernel hands them its body through a function
// pointer and a context. A template driver was instantiated (an OpenMP region and an
// odometer) for every op x dtype x operand form, which made the elementwise and reduction
// files the slowest of the build; the indirect call costs a few nanoseconds per thread
// part or per run of the innermost dim.
using RangeBody = void (*)(void* ctx, int64_t begin, int64_t end);
using RunBody = void (*)(void* ctx, char** ptrs, const int64_t* strides, int64_t count);

// Runs body(ctx, begin, end) over [0, n), split across threads_for(n, grain) threads.
void parallel_for_erased(int64_t n, int64_t grain, RangeBody body, void* ctx);

// Runs body(ctx, ptrs, inner_strides, count) over every run of `count` elements along
// dim 0 of the layout, ptrs[i] pointing at operand i's first element of the run, spaced
// by inner_strides[i] bytes; in parallel (over the linear range) when the layout is large.
void for_each_erased(const StridedLayout& L, char* const* base, int64_t grain, RunBody body, void* ctx);

using ThreadBody = void (*)(void* ctx, int thread, int threads);

// Runs body(ctx, t, T) on each thread t of an OpenMP team of `threads` asked for (T: the
// team's size, which the runtime may make smaller).
void parallel_threads_erased(int threads, ThreadBody body, void* ctx);

// Calls f(t, T) on each thread t of a team of `threads` asked for (T: those granted).
template <class F>
void parallel_threads(int threads, F&& f) {
  using Fn = std::remove_reference_t<F>;
  parallel_threads_erased(threads, [](void* ctx, int t, int nt) { (*static_cast<Fn*>(ctx))(t, nt); },
                          const_cast<void*>(static_cast<const void*>(&f)));
}

// Calls f(begin, end) over [0, n) split across threads.
template <class F>
void parallel_for(int64_t n, int64_t grain, F&& f) {
  using Fn = std::remove_reference_t<F>;
  parallel_for_erased(n, grain, [](void* ctx, int64_t b, int64_t e) { (*static_cast<Fn*>(ctx))(b, e); },
                      const_cast<void*>(static_cast<const void*>(&f)));
}

// Runs `inner(ptrs, inner_strides, count)` over the whole layout (see for_each_erased),
// in parallel when it is large.
template <class Inner>
void for_each(const StridedLayout& L, char* const* base, Inner&& inner, int64_t grain = kParallelGrain) {
  using Fn = std::remove_reference_t<Inner>;
  for_each_erased(
      L, base, grain, [](void* ctx, char** p, const int64_t* s, int64_t n) { (*static_cast<Fn*>(ctx))(p, s, n); },
      const_cast<void*>(static_cast<const void*>(&inner)));
}

}  // namespace mixt::cpu
