// Host-side checks of the factories that follow from the attributes alone, shared by the
// CPU and CUDA kernels (raises mixt::Error naming the op). Host code only.
#pragma once

#include <cmath>
#include <cstdint>

#include <mixt/dispatcher/op_check.h>
#include <mixt/dispatcher/dispatch.h>

namespace mixt {

inline constexpr int64_t kMaxArange = int64_t{1} << 50;

// Number of arange elements; int64 arithmetic when every bound is an integer.
inline int64_t arange_size(const OpCall& c, bool exact) {
  const auto& a = c.attrs.get<attrs::Arange>();
  const Scalar &s0 = a.start, &s1 = a.end, &s2 = a.step;
  const double start = s0.to_double(), end = s1.to_double(), step = s2.to_double();
  MIXT_CHECK_OP(step > 0 || step < 0, c, "step must be nonzero (got {})", s2);
  MIXT_CHECK_OP(std::isfinite(start) && std::isfinite(end), c, "unsupported range: {} -> {}", s0, s1);
  MIXT_CHECK_OP((step > 0 && end >= start) || (step < 0 && end <= start), c,
                "upper bound {} and lower bound {} are inconsistent with the step's sign ({})", s1, s0, s2);
  if (exact) {
    const __int128 a = s0.to_int(), b = s1.to_int(), st = s2.to_int();
    const __int128 n = (b - a + st - (st > 0 ? 1 : -1)) / st;
    MIXT_CHECK_OP(n <= kMaxArange, c, "range {} -> {} step {} has too many elements", s0, s1, s2);
    return static_cast<int64_t>(n);
  }
  const double n = std::ceil((end - start) / step);
  MIXT_CHECK_OP(n >= 0 && n <= static_cast<double>(kMaxArange), c, "range {} -> {} step {} has too many elements",
                s0, s1, s2);
  return static_cast<int64_t>(n);
}

}  // namespace mixt
