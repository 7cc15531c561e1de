// The conversion of one value between any two storage types, step by step as the
// CPU's convert<To> (convert.h) takes it, with the one step a backend may do in
// hardware left to a policy: rounding a float to a narrow format (float16, bfloat16,
// float8). The CUDA kernels pass their instruction-based rounding (kernels/cuda/convert.cuh);
// SoftwareNarrow is the storage structs' own rounding (runtime/float_types.h), i.e. the CPU's.
// tests/cpu/test_elementwise_lists.cpp checks every pair against the CPU's tensor cast
// (exhaustively for 8- and 16-bit sources); tests/cpu/test_cast_rules.cu repeats it with
// the CUDA rounding, run on the host. Plain C++ with MIXT_HD.
#pragma once

#include <cstdint>
#include <type_traits>

#include <mixt/kernels/common/convert.h>
#include <mixt/runtime/dtype.h>

namespace mixt {

// Rounds a float to narrow storage type To as the storage structs do.
struct SoftwareNarrow {
  template <class To>
  MIXT_HD static To narrow(float f) {
    return To(f);
  }
};

// `v` (a storage or opmath value of type From) as storage type To.
// - same type: the value itself;
// - from a narrow float: widened to float (exact), then as from float;
// - to bool: nonzero (NaN is true);
// - to a narrow float: through float (integers and doubles round to float first), then Narrow;
// - floating to integer: saturated to int64 (NaN -> 0), then wrapped to the width;
// - integer to integer: wrapped through int64; everything else: the C++ conversion.
template <class To, class Narrow = SoftwareNarrow, class From>
MIXT_HD inline To cast_value(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (is_narrow_float_v<From>) {
    return cast_value<To, Narrow>(static_cast<float>(v));
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
