// Timing helpers for mixt-bench: best-of-N wall-clock per iteration.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

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

// Value of `--name N` in argv, or `fallback`.
inline int64_t int_option(int argc, char** argv, const char* name, int64_t fallback) {
  for (int i = 0; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::strtoll(argv[i + 1], nullptr, 10);
  return fallback;
}

}  // namespace mixt::bench
