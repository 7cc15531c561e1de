// Per-element math of the grad scaler's ops, shared by the CPU kernels
// (kernels/cpu/amp.cpp) and the CUDA ones (kernels/cuda/amp.cu): the non-finite test
// on the storage bits, the unscale of one element, and the whole scale update
// (growth, backoff, hysteresis, floor) on plain values. See Note [Grad scaler].
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include <mixt/runtime/dtype.h>

namespace mixt::amp_math {

// True when the bits of `v` encode Inf or NaN (exponent all ones): branch-free, vectorizable.
template <class T>
MIXT_HD inline bool non_finite(const T& v) {
  if constexpr (std::is_same_v<T, float>) {
    uint32_t b;
    memcpy(&b, &v, 4);
    return (b & 0x7f800000u) == 0x7f800000u;
  } else if constexpr (std::is_same_v<T, double>) {
    uint64_t b;
    memcpy(&b, &v, 8);
    return (b & 0x7ff0000000000000ull) == 0x7ff0000000000000ull;
  } else if constexpr (std::is_same_v<T, Half>) {
    return (v.x & 0x7c00u) == 0x7c00u;
  } else {
    static_assert(std::is_same_v<T, BFloat16>, "unscaling takes float16, bfloat16, float32 and float64");
    return (v.x & 0x7f80u) == 0x7f80u;
  }
}

// x * inv in opmath, rounded once to T.
template <class T>
MIXT_HD inline T unscale(const T& x, opmath_t<T> inv) {
  if constexpr (std::is_same_v<T, opmath_t<T>>) return x * inv;
  else return T(static_cast<opmath_t<T>>(x) * inv);
}

// The scaler's state (the one-element tensors amp_update_scale_ updates in place).
struct ScaleState {
  float scale;
  int32_t growth_tracker, hysteresis_tracker;
  int64_t skipped_steps, floor_hits;
};

// The update rule (attributes of amp_update_scale_, checked on the host).
struct ScaleRuleValues {
  double growth_factor, backoff_factor, min_scale, max_scale;
  int64_t growth_interval, hysteresis;
  bool consecutive_hysteresis;
};

// True when `f` is neither Inf nor NaN.
MIXT_HD inline bool finite_float(float f) { return !non_finite(f); }

// One update of `s` after an iteration whose gradients were non-finite (found_inf) or not.
// An overflow resets growth and spends one unit of the hysteresis budget; when the budget
// is spent the scale backs off (not below min_scale; a backoff from at or below it counts
// as a floor hit). growth_interval clean steps in a row grow the scale (not above
// max_scale; a growth to Inf is skipped). growth + 1 == interval is exact, as PyTorch.
MIXT_HD inline void update_scale(ScaleState& s, bool found_inf, const ScaleRuleValues& r) {
  if (found_inf) {
    ++s.skipped_steps;
    s.growth_tracker = 0;
    s.hysteresis_tracker = s.hysteresis_tracker > 0 ? s.hysteresis_tracker - 1 : 0;
    if (s.hysteresis_tracker == 0) {  // the budget of tolerated overflows is spent: back off
      if (static_cast<double>(s.scale) <= r.min_scale) ++s.floor_hits;
      const double next = static_cast<double>(s.scale) * r.backoff_factor;
      s.scale = static_cast<float>(next < r.min_scale ? r.min_scale : next);
    }
  } else {
    if (r.consecutive_hysteresis) s.hysteresis_tracker = static_cast<int32_t>(r.hysteresis);
    if (s.growth_tracker + 1 == r.growth_interval) {
      s.growth_tracker = 0;
      s.hysteresis_tracker = static_cast<int32_t>(r.hysteresis);
      const auto next = static_cast<float>(static_cast<double>(s.scale) * r.growth_factor);
      if (finite_float(next)) s.scale = static_cast<double>(next) > r.max_scale ? static_cast<float>(r.max_scale) : next;
    } else {
      ++s.growth_tracker;
    }
  }
}

}  // namespace mixt::amp_math
