// The value formulas of the factories arange and linspace, shared by the CPU kernels
// (kernels/cpu/factory.cpp) and the CUDA ones (kernels/cuda/factory.cu): element i is
// computed from i alone (no running sum), in double (in wrapping int64 arithmetic for an
// integer arange of an integer dtype) and rounded once on store, so both backends give
// the same bits (device code is compiled with --fmad=false: start + i * step rounds twice
// on both).
#pragma once

#include <cstdint>

#include <mixt/runtime/macros.h>

namespace mixt::factory_math {

// Element i of an integer arange: start + i * step with two's-complement wrap-around.
MIXT_HD inline int64_t arange_int(uint64_t start, uint64_t step, int64_t i) {
  return static_cast<int64_t>(start + static_cast<uint64_t>(i) * step);
}

// Element i of a floating arange.
MIXT_HD inline double arange_double(double start, double step, int64_t i) { return start + static_cast<double>(i) * step; }

// linspace(start, end, steps): the first half counts up from start, the second half down
// from end, so both endpoints are exact; one step gives start.
struct Linspace {
  double start, end, step;
  int64_t steps, halfway;
};

MIXT_HD inline Linspace make_linspace(double start, double end, int64_t steps) {
  return {start, end, steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0, steps, steps / 2};
}

MIXT_HD inline double linspace_value(const Linspace& l, int64_t i) {
  if (l.steps == 1) return l.start;
  return i < l.halfway ? l.start + l.step * static_cast<double>(i) : l.end - l.step * static_cast<double>(l.steps - 1 - i);
}

}  // namespace mixt::factory_math
