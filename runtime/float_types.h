// Software storage types for the narrow floating formats: float16, bfloat16,
// float8_e4m3fn and float8_e5m2. Usable in host and device code; every conversion
// from float rounds to nearest, ties to even. See Note [Narrow float conversions].
#pragma once

#include <cstdint>
#include <cstring>
#include <iosfwd>

#include "macros.h"

namespace mixt {
namespace detail {

MIXT_HD inline uint32_t float_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

MIXT_HD inline float bits_float(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// Round a non-negative float to the nearest integer, ties to even (exact for < 2^23).
MIXT_HD inline uint32_t round_half_even(float x) {
  uint32_t whole = static_cast<uint32_t>(x);
  float frac = x - static_cast<float>(whole);
  if (frac > 0.5f || (frac == 0.5f && (whole & 1u))) ++whole;
  return whole;
}

// Encodes the magnitude of a finite, non-negative float into a format with
// `M` mantissa bits and exponent bias `B` (no sign bit). The result may exceed
// the format's largest finite code: callers apply their overflow rule.
template <int M, int B>
MIXT_HD inline uint32_t encode_magnitude(float a) {
  const uint32_t u = float_bits(a);
  const int exp = static_cast<int>(u >> 23) - 127;
  if (exp < 1 - B) {
    // Subnormal (or zero) in the target: count units of 2^(1-B-M). The scaling by
    // a power of two is exact, and a carry into 2^M encodes the smallest normal.
    const float scaled = a * bits_float(static_cast<uint32_t>(127 + B - 1 + M) << 23);
    return round_half_even(scaled);
  }
  constexpr uint32_t shift = 23 - M;
  const uint32_t rounded = u + ((1u << (shift - 1)) - 1u) + ((u >> shift) & 1u);
  return (rounded >> shift) - (static_cast<uint32_t>(127 - B) << M);
}

// Decodes a magnitude code (no sign bit) of a format with `M` mantissa bits and
// bias `B`; the exponent field must not be the format's Inf/NaN field.
template <int M, int B>
MIXT_HD inline float decode_magnitude(uint32_t code) {
  const uint32_t exp = code >> M;
  const uint32_t man = code & ((1u << M) - 1u);
  if (exp == 0) {
    // man * 2^(1-B-M), exact in float for every format here.
    return static_cast<float>(man) * bits_float(static_cast<uint32_t>(127 + 1 - B - M) << 23);
  }
  return bits_float(((exp - B + 127) << 23) | (man << (23 - M)));
}

MIXT_HD inline bool float_is_nan(float f) { return (float_bits(f) & 0x7fffffffu) > 0x7f800000u; }

}  // namespace detail

// IEEE binary16. Overflow (|x| >= 65520) gives +-Inf; NaN gives 0x7e00.
struct Half {
  uint16_t x = 0;
  Half() = default;
  MIXT_HD static constexpr Half from_bits(uint16_t b) { Half h; h.x = b; return h; }
  MIXT_HD Half(float f) {
    const uint32_t u = detail::float_bits(f);
    const uint32_t sign = (u >> 16) & 0x8000u;
    const uint32_t mag = u & 0x7fffffffu;
    if (mag > 0x7f800000u) { x = 0x7e00; return; }
    uint32_t code = mag >= 0x7f800000u ? 0x7c00u : detail::encode_magnitude<10, 15>(detail::bits_float(mag));
    if (code > 0x7c00u) code = 0x7c00u;
    x = static_cast<uint16_t>(sign | code);
  }
  MIXT_HD Half(double d) : Half(static_cast<float>(d)) {}
  MIXT_HD operator float() const {
    const uint32_t sign = static_cast<uint32_t>(x & 0x8000u) << 16;
    const uint32_t mag = x & 0x7fffu;
    if (mag >= 0x7c00u) return detail::bits_float(sign | 0x7f800000u | ((mag & 0x3ffu) << 13));
    return detail::bits_float(sign | detail::float_bits(detail::decode_magnitude<10, 15>(mag)));
  }
};

// bfloat16: the upper half of a float32. Overflow gives +-Inf; NaN gives 0x7fc0.
struct BFloat16 {
  uint16_t x = 0;
  BFloat16() = default;
  MIXT_HD static constexpr BFloat16 from_bits(uint16_t b) { BFloat16 h; h.x = b; return h; }
  MIXT_HD BFloat16(float f) {
    const uint32_t u = detail::float_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) { x = 0x7fc0; return; }
    x = static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  MIXT_HD BFloat16(double d) : BFloat16(static_cast<float>(d)) {}
  MIXT_HD operator float() const { return detail::bits_float(static_cast<uint32_t>(x) << 16); }
};

// float8 e4m3fn: no Inf. Overflow and +-Inf saturate to +-448 (the hardware
// SATFINITE rule); NaN gives 0x7f. See Note [fp8 overflow].
struct Float8_e4m3fn {
  uint8_t x = 0;
  Float8_e4m3fn() = default;
  MIXT_HD static constexpr Float8_e4m3fn from_bits(uint8_t b) { Float8_e4m3fn h; h.x = b; return h; }
  MIXT_HD Float8_e4m3fn(float f) {
    const uint32_t u = detail::float_bits(f);
    const uint32_t sign = (u >> 24) & 0x80u;
    const uint32_t mag = u & 0x7fffffffu;
    if (mag > 0x7f800000u) { x = 0x7f; return; }
    uint32_t code = mag == 0x7f800000u ? 0x7eu : detail::encode_magnitude<3, 7>(detail::bits_float(mag));
    if (code > 0x7eu) code = 0x7eu;
    x = static_cast<uint8_t>(sign | code);
  }
  MIXT_HD Float8_e4m3fn(double d) : Float8_e4m3fn(static_cast<float>(d)) {}
  MIXT_HD operator float() const {
    const uint32_t sign = static_cast<uint32_t>(x & 0x80u) << 24;
    const uint32_t mag = x & 0x7fu;
    if (mag == 0x7fu) return detail::bits_float(sign | 0x7fc00000u);
    return detail::bits_float(sign | detail::float_bits(detail::decode_magnitude<3, 7>(mag)));
  }
};

// float8 e5m2: IEEE-like with Inf. Overflow (|x| >= 61440) gives +-Inf; NaN gives 0x7f.
struct Float8_e5m2 {
  uint8_t x = 0;
  Float8_e5m2() = default;
  MIXT_HD static constexpr Float8_e5m2 from_bits(uint8_t b) { Float8_e5m2 h; h.x = b; return h; }
  MIXT_HD Float8_e5m2(float f) {
    const uint32_t u = detail::float_bits(f);
    const uint32_t sign = (u >> 24) & 0x80u;
    const uint32_t mag = u & 0x7fffffffu;
    if (mag > 0x7f800000u) { x = 0x7f; return; }
    uint32_t code = mag == 0x7f800000u ? 0x7cu : detail::encode_magnitude<2, 15>(detail::bits_float(mag));
    if (code > 0x7cu) code = 0x7cu;
    x = static_cast<uint8_t>(sign | code);
  }
  MIXT_HD Float8_e5m2(double d) : Float8_e5m2(static_cast<float>(d)) {}
  MIXT_HD operator float() const {
    const uint32_t sign = static_cast<uint32_t>(x & 0x80u) << 24;
    const uint32_t mag = x & 0x7fu;
    if (mag >= 0x7cu) return detail::bits_float(sign | 0x7f800000u | ((mag & 0x3u) << 21));
    return detail::bits_float(sign | detail::float_bits(detail::decode_magnitude<2, 15>(mag)));
  }
};

// Print the float value (as `os << float(x)` would; fmt: <mixt/runtime/formatters.h>).
std::ostream& operator<<(std::ostream& os, Half x);
std::ostream& operator<<(std::ostream& os, BFloat16 x);
std::ostream& operator<<(std::ostream& os, Float8_e4m3fn x);
std::ostream& operator<<(std::ostream& os, Float8_e5m2 x);

}  // namespace mixt
