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

// Rounds a float to narrow storage type To as the storage structs do (runtime/float_types.h).
struct SoftwareNarrow {
  template <class To>
  MIXT_HD static To narrow(float f) {
    return To(f);
  }
};

// Converts `v` (a storage or opmath type) to storage type To, for every pair of types:
// - from a narrow float: widened to float (exact), then as from float;
// - to bool: nonzero (NaN is true);
// - to a narrow float: through float (integers and doubles round to float first), then
//   rounded by Narrow: the CPU's SoftwareNarrow, or the CUDA conversion instructions
//   (kernels/cuda/convert.cuh), which tests/cpu/test_cuda_cast_rules.cu checks against it;
// - floating to integer: saturated to int64 (NaN -> 0), then wrapped to the width;
// - integer to integer: wrapped through int64; everything else: the C++ conversion.
template <class To, class Narrow = SoftwareNarrow, class From>
MIXT_HD inline To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_narrow_float_v<From>) {
    return convert<To, Narrow>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (is_narrow_float_v<To>) {
    return Narrow::template narrow<To>(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return static_cast<To>(static_cast<uint64_t>(saturate_to_int64(static_cast<double>(v))));
  } else if constexpr (std::is_integral_v<To> && std::is_integral_v<From> && !std::is_same_v<From, bool>) {
    return static_cast<To>(static_cast<uint64_t>(static_cast<int64_t>(v)));
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace mixt
