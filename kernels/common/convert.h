// Value conversion between storage types, usable in host and device code.
// Floating -> integer saturates to int64 (NaN -> 0) and then wraps to the target
// width, so no conversion is undefined behaviour. See Note [Conversions].
#pragma once

#include <cstdint>
#include <type_traits>

#include <mixt/runtime/dtype.h>

namespace mixt {

MIXT_HD inline int64_t saturate_to_int64(double v) {
  if (!(v == v)) return 0;
  if (v >= 9.2233720368547758e18) return INT64_MAX;
  if (v <= -9.2233720368547758e18) return INT64_MIN;
  return static_cast<int64_t>(v);
}

// Converts `v` (a storage or opmath type) to storage type To.
template <class To, class From>
MIXT_HD inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_narrow_float_v<From>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (is_narrow_float_v<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return static_cast<To>(static_cast<uint64_t>(saturate_to_int64(static_cast<double>(v))));
  } else if constexpr (std::is_integral_v<To> && std::is_integral_v<From> && !std::is_same_v<From, bool>) {
    return static_cast<To>(static_cast<uint64_t>(static_cast<int64_t>(v)));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace mixt
