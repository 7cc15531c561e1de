// Timing helpers for mixt-bench: best-of-N wall-clock per iteration.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <utility>

#include <omp.h>

namespace mixt::bench {

// Nanoseconds per call of `f`: the best of `reps` runs of `iters` calls.
template <class F>
double ns_per_call(F&& f, int64_t iters, int reps = 7) {
  for (int64_t i = 0; i < iters / 10 + 1; ++i) f();  // warm up
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < iters; ++i) f();
    const auto t1 = std::chrono::steady_clock::now();
    const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(iters);
    if (ns < best) best = ns;
  }
  return best;
}

// Nanoseconds per call of two loops `a(n)` and `b(n)` (each runs n calls), timed
// alternately, best of `reps` each: both figures see the same machine state.
template <class A, class B>
std::pair<double, double> ns_per_call_pair(A&& a, B&& b, int64_t iters, int reps = 7) {
  a(iters / 10 + 1);  // warm up
  b(iters / 10 + 1);
  double best_a = 1e300, best_b = 1e300;
  auto time = [&](auto& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f(iters);
    const auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double, std::nano>(t1 - t0).count() / static_cast<double>(iters);
  };
  for (int r = 0; r < reps; ++r) {
    best_a = std::min(best_a, time(a));
    best_b = std::min(best_b, time(b));
  }
  return {best_a, best_b};
}

// memcpy of `bytes` from `src` to `dst`, split evenly over the OpenMP threads: the copy
// the CPU's memory-bound kernels are measured against.
inline void parallel_memcpy(char* dst, const char* src, int64_t bytes) {
#pragma omp parallel
  {
    const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
    const int64_t b = bytes * t / n, e = bytes * (t + 1) / n;
    std::memcpy(dst + b, src + b, static_cast<size_t>(e - b));
  }
}

// all_reduce's bus bandwidth factor over `ranks` ranks: busbw = algbw * 2(n-1)/n,
// the bytes each rank's link carries in a ring all-reduce per byte of the message
// (0 for one rank, which moves nothing). algbw = message bytes / time.
inline double all_reduce_bus_factor(int ranks) { return 2.0 * (ranks - 1) / ranks; }

}  // namespace mixt::bench
