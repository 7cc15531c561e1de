// Host-side checks of uniform_ and normal_ that follow from the attributes and the dtype
// alone, shared by the CPU and CUDA kernels (raise mixt::Error naming the op).
// Host code only.
#pragma once

#include <cfloat>
#include <cmath>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt {

// Largest finite value of floating storage type T.
template <class T>
double finite_max() {
  if constexpr (std::is_same_v<T, double>) return DBL_MAX;
  else if constexpr (std::is_same_v<T, float>) return FLT_MAX;
  else if constexpr (std::is_same_v<T, Half>) return 65504.0;
  else if constexpr (std::is_same_v<T, BFloat16>) return static_cast<float>(BFloat16::from_bits(0x7f7f));
  else if constexpr (std::is_same_v<T, Float8_e4m3fn>) return 448.0;
  else return 57344.0;  // Float8_e5m2
}

// uniform_ into `self`: finite bounds, low <= high, both and their difference within self's dtype.
inline void check_uniform(const OpCall& c, const Tensor& self, double low, double high) {
  MIXT_CHECK_OP(std::isfinite(low) && std::isfinite(high), c, "expects finite bounds, got [{}, {})", low, high);
  MIXT_CHECK_OP(low <= high, c, "expects from <= to, got from={} > to={}", low, high);
  check_random_fill(c, self);
  visit_dtype<dtypes::kFloating>(self.dtype(), "uniform_", [&](auto tag) {
    const double max = finite_max<typename decltype(tag)::type>();
    MIXT_CHECK_OP(low >= -max && high <= max && high - low <= max, c,
                  "bounds [{}, {}) and their difference must be within the range of {} (+-{})", low, high,
                  self.dtype(), max);
  });
}

// normal_ into `self`: a finite mean and a finite std >= 0.
inline void check_normal(const OpCall& c, const Tensor& self, double mean, double sd) {
  MIXT_CHECK_OP(sd >= 0.0, c, "expects std >= 0.0, got {}", sd);
  MIXT_CHECK_OP(std::isfinite(mean) && std::isfinite(sd), c, "expects a finite mean and std, got {} and {}", mean, sd);
  check_random_fill(c, self);
}

}  // namespace mixt
