// Floating formats as the tests see them, written from the formats' definitions
// (not from mixt's conversion code): precision, exponent range, largest finite
// value, the spacing of representable values (ulp) at a value, rounding of a
// double to the format, and the tolerance rule "so many ulps of the reference,
// never below the format's subnormal spacing".
//
// Note [Tolerances in ulps]
// A result stored in dtype dt passes when |got - ref| <= ulps * ulp_dt(ref) +
// work * eps(compute) * magnitude: half an ulp of dt for a correctly rounded
// result (ulp_dt never below dt's subnormal spacing), plus `work` roundings of
// the compute type (float32 for the narrow floats, float64 for float64, double
// for the CPU reductions) at the size of the terms they hit. A float8 result
// may be off by half its own ulp, not by an eighth of its magnitude plus an
// eighth. Full text in docs/notes/numerics.md.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include <mixt/runtime/dtype.h>

namespace mixt::testing {

// A binary floating format: `digits` significant bits (the implicit one included),
// normal exponents from `emin`, the largest finite value, and whether it has infinities.
struct Format {
  int digits;
  int emin;
  double max_finite;
  bool has_inf;
};

// The format of a floating dtype (integers and bool: none, digits = 0).
inline Format format_of(ScalarType dt) {
  switch (dt) {
    case kFloat64: return {53, -1022, std::numeric_limits<double>::max(), true};
    case kFloat32: return {24, -126, static_cast<double>(std::numeric_limits<float>::max()), true};
    case kFloat16: return {11, -14, 65504.0, true};
    case kBFloat16: return {8, -126, 0x1.fep127, true};
    case kFloat8_e4m3fn: return {4, -6, 448.0, false};
    case kFloat8_e5m2: return {3, -14, 57344.0, true};
    default: return {0, 0, 0.0, false};
  }
}

// The machine epsilon of `dt` (the spacing just above 1): 2^-52, 2^-23, 2^-10, 2^-7, 2^-3, 2^-2.
inline double epsilon_of(ScalarType dt) { return std::ldexp(1.0, 1 - format_of(dt).digits); }

// The smallest positive (subnormal) value of `dt`.
inline double min_subnormal(ScalarType dt) {
  const Format f = format_of(dt);
  return std::ldexp(1.0, f.emin - f.digits + 1);
}

// The smallest positive normal value of `dt`.
inline double min_normal(ScalarType dt) { return std::ldexp(1.0, format_of(dt).emin); }

// The spacing of `dt`'s values at |x|: 2^(e - digits + 1) for |x| in [2^e, 2^(e+1)), and the
// subnormal spacing below the smallest normal (so it never falls below min_subnormal).
inline double ulp_of(ScalarType dt, double x) {
  const Format f = format_of(dt);
  const double a = std::abs(x);
  if (!(a >= std::ldexp(1.0, f.emin))) return min_subnormal(dt);
  if (std::isinf(a)) return std::ldexp(1.0, std::ilogb(f.max_finite) - f.digits + 1);
  return std::ldexp(1.0, std::ilogb(a) - f.digits + 1);
}

// `x` rounded to the nearest value of `dt`, ties to even, as one IEEE conversion would
// do it: beyond the largest finite value by half an ulp or more gives +-Inf, except in
// float8_e4m3fn, which has no infinity and saturates to +-448 (Note [fp8 overflow]).
// Integer dtypes: truncation toward zero (callers wrap to the width).
inline double round_to(ScalarType dt, double x) {
  if (!is_floating(dt)) return std::trunc(x);
  if (dt == kFloat64 || std::isnan(x) || x == 0) return x;
  const Format f = format_of(dt);
  if (std::isinf(x)) return f.has_inf ? x : std::copysign(f.max_finite, x);
  const double q = ulp_of(dt, x);                 // the spacing at |x|: rounding to a multiple of it
  double r = std::nearbyint(x / q) * q;           // exact scaling by a power of two; ties to even
  if (std::abs(r) > f.max_finite) r = f.has_inf ? std::copysign(INFINITY, x) : std::copysign(f.max_finite, x);
  return r;
}

// `v` wrapped to the range of the integer dtype `dt` (two's complement), bool as != 0.
inline double wrap_to(ScalarType dt, double v) {
  const auto i = static_cast<uint64_t>(static_cast<int64_t>(v));
  switch (dt) {
    case kBool: return v != 0 ? 1.0 : 0.0;
    case kUInt8: return static_cast<uint8_t>(i);
    case kInt8: return static_cast<int8_t>(i);
    case kInt32: return static_cast<int32_t>(i);
    case kInt64: return static_cast<double>(static_cast<int64_t>(i));
    default: return v;
  }
}

// The tolerance of one result, see Note [Tolerances in ulps]:
//   |got - ref| <= ulps * ulp_of(dt, ref) + work * eps(compute) * magnitude
// where the compute type is float64 for float64 results and float32 for every other
// floating result (the narrow floats compute in float32 and round once on store),
// unless the op computes in double (`compute = kFloat64`: the CPU reductions).
struct Tolerance {
  double ulps = 0.5;       // ulps of the result's dtype at the reference value (0.5: correctly rounded)
  double work = 0;         // roundings (or libm ulps) inside the computation, in the compute type...
  double magnitude = 0;    // ...at this magnitude (0: at |ref|), the size of the terms that were rounded
  ScalarType compute = ScalarType::Undefined;  // the compute type when it is wider than the default
};

// The compute type's epsilon for results stored in `dt`.
inline double compute_epsilon(ScalarType dt, const Tolerance& t = {}) {
  if (t.compute == kFloat64 || dt == kFloat64) return epsilon_of(kFloat64);
  return epsilon_of(kFloat32);
}

// The allowed |got - ref| for a result stored in `dt` (ref finite). A narrow float computed in
// double reaches its dtype through float32 (Note [Narrow float conversions]): that first
// rounding may move it by half a float32 ulp more.
inline double allowed_error(ScalarType dt, double ref, const Tolerance& t) {
  const double mag = t.magnitude > 0 ? t.magnitude : std::abs(ref);
  const double through_float = dt != kFloat32 && dt != kFloat64 ? 0.5 * ulp_of(kFloat32, ref) : 0.0;
  return t.ulps * ulp_of(dt, ref) + t.work * compute_epsilon(dt, t) * mag + through_float;
}

// True when `got` (stored in `dt`) matches the exact value `ref`: NaN matches NaN, a
// reference beyond the format's range must give what rounding gives (+-Inf, or +-448 in
// e4m3fn), infinities must be equal, and finite values lie within allowed_error.
inline bool within(ScalarType dt, double got, double ref, const Tolerance& t, double slack = 0) {
  if (std::isnan(ref) || std::isnan(got)) return std::isnan(ref) && std::isnan(got);
  if (!is_floating(dt)) return got == wrap_to(dt, ref);
  const Format f = format_of(dt);
  if (std::isinf(ref) || std::abs(ref) > f.max_finite + 0.5 * ulp_of(dt, f.max_finite)) {
    const double want = round_to(dt, ref);
    if (std::isinf(want) || !f.has_inf) return got == want;
  }
  if (std::isinf(got)) return false;
  return std::abs(got - ref) <= allowed_error(dt, ref, t) + slack;
}

// The bits of a float32, and the float32 of 32 bits.
inline uint32_t float_bits(float f) { return std::bit_cast<uint32_t>(f); }
inline float bits_float(uint32_t u) { return std::bit_cast<float>(u); }

// True when x is +0.0 or -0.0 with the sign of `want_negative` (never compare zeros with ==).
inline bool is_zero_with_sign(double x, bool want_negative) { return x == 0 && std::signbit(x) == want_negative; }

}  // namespace mixt::testing
