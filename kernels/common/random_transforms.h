// Per-element formulas of the random kernels, shared by the CPU and CUDA backends so
// both draw the same values from (seed, offset). Element i of a call's contiguous,
// row-major output uses Philox block `offset + i / per_block`, lane `i % per_block`:
// 4 lanes of 32 bits for float32, the narrow floats and the 32-bit integer types;
// 2 lanes of 64 bits (two 32-bit words each) for float64 and int64. A call reserves
// exactly blocks_needed(numel, per_block) blocks. See Note [Philox streams].
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include <mixt/kernels/common/convert.h>
#include <mixt/runtime/philox.h>

namespace mixt::rng {

// Elements per Philox block for draws of storage type T (2 for 64-bit types, else 4).
template <class T>
MIXT_HD constexpr int per_block() {
  return sizeof(T) == 8 ? 2 : 4;
}

// Blocks a call over `n` elements reserves.
MIXT_HD constexpr uint64_t blocks_needed(int64_t n, int per_block) {
  return n <= 0 ? 0 : static_cast<uint64_t>((n + per_block - 1) / per_block);
}

// The block element i of a call starting at `offset` draws from (what one CUDA thread computes).
MIXT_HD inline philox::Block block_for(uint64_t seed, uint64_t offset, int64_t i, int per_block) {
  return philox::generate(seed, offset + static_cast<uint64_t>(i / per_block));
}

// Uniform in [0, 1) of a 32-bit lane (0..3), 24 random bits.
MIXT_HD inline double uniform32(const philox::Block& b, int lane) { return philox::uniform_float(b.v[lane]); }
// Uniform in [0, 1) of a 64-bit lane (0..1), 53 random bits from words 2*lane and 2*lane + 1.
MIXT_HD inline double uniform64(const philox::Block& b, int lane) {
  return philox::uniform_double(b.v[2 * lane], b.v[2 * lane + 1]);
}
// 64 random bits of a 64-bit lane (0..1): word 2*lane is the high half.
MIXT_HD inline uint64_t bits64(const philox::Block& b, int lane) {
  return (static_cast<uint64_t>(b.v[2 * lane]) << 32) | b.v[2 * lane + 1];
}

// The Box-Muller pair of uniforms (u_radius, u_angle): *c = r cos(theta), *s = r sin(theta).
// 1 - u_radius is in (0, 1], so the log never sees 0. Computed in double so both backends round alike.
MIXT_HD inline void box_muller(double u_radius, double u_angle, double* c, double* s) {
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  const double r = sqrt(-2.0 * log(1.0 - u_radius));
  const double theta = kTwoPi * u_angle;
  *c = r * cos(theta);
  *s = r * sin(theta);
}
// One normal of a Box-Muller pair: the sine one when `sine`, else the cosine one.
MIXT_HD inline double box_muller(double u_radius, double u_angle, bool sine) {
  double c, s;
  box_muller(u_radius, u_angle, &c, &s);
  return sine ? s : c;
}
// Standard normal of a 32-bit lane: lanes (0, 1) and (2, 3) are Box-Muller pairs (cos, sin).
MIXT_HD inline double normal32(const philox::Block& b, int lane) {
  const int first = lane & 2;
  return box_muller(uniform32(b, first), uniform32(b, first + 1), (lane & 1) != 0);
}
// Standard normal of a 64-bit lane: one pair from two 53-bit uniforms per block (lane 0 cos, lane 1 sin).
MIXT_HD inline double normal64(const philox::Block& b, int lane) {
  return box_muller(uniform64(b, 0), uniform64(b, 1), lane != 0);
}

// low + (bits mod range) for random_ with `range` = high - low > 0 (32- or 64-bit lane).
MIXT_HD inline int64_t randint32(const philox::Block& b, int lane, int64_t low, uint64_t range) {
  return static_cast<int64_t>(static_cast<uint64_t>(low) + b.v[lane] % range);
}
MIXT_HD inline int64_t randint64(const philox::Block& b, int lane, int64_t low, uint64_t range) {
  return static_cast<int64_t>(static_cast<uint64_t>(low) + bits64(b, lane) % range);
}

// The closest value of floating storage type T below `t` (t finite and above T's lowest value).
template <class T>
MIXT_HD T step_down(T t) {
  if constexpr (std::is_same_v<T, double>) {
    return nextafter(t, -HUGE_VAL);
  } else if constexpr (std::is_same_v<T, float>) {
    return nextafterf(t, -HUGE_VALF);
  } else {
    // Sign-magnitude codes: magnitudes grow with the code, so one code step is one value step.
    using Bits = decltype(t.x);
    constexpr Bits sign = static_cast<Bits>(Bits{1} << (8 * sizeof(Bits) - 1));
    if ((t.x & static_cast<Bits>(~sign)) == 0) return T::from_bits(static_cast<Bits>(sign | 1));  // +-0 -> -denorm
    return T::from_bits(static_cast<Bits>((t.x & sign) ? t.x + 1 : t.x - 1));
  }
}

// low + (high - low) * u stored as T and kept in [low, high): a value that rounds up to
// `high` becomes the closest T below it. low == high gives low.
template <class T>
MIXT_HD T uniform_value(double u, double low, double high) {
  T r = convert<T>(low + (high - low) * u);
  if (static_cast<double>(r) >= high) {
    r = step_down(r);
    if (static_cast<double>(r) < low) r = convert<T>(low);
  }
  return r;
}

// Block j of a call over n elements (drawn from Philox block offset + j) fills elements
// [j * per_block, j * per_block + lanes). The CPU walks the blocks in order, one CUDA
// thread takes one block; both use this mapping.
MIXT_HD inline int block_lanes(int64_t j, int64_t n, int per_block) {
  const int64_t left = n - j * per_block;
  return static_cast<int>(left < per_block ? left : per_block);
}

// The values of one Philox block for each random op: out[0, lanes) of storage type T.
// uniform_: low + (high - low) * u kept in [low, high).
template <class T>
MIXT_HD inline void uniform_block(const philox::Block& b, T* out, int lanes, double low, double high) {
  for (int l = 0; l < lanes; ++l) {
    if constexpr (per_block<T>() == 2) out[l] = uniform_value<T>(uniform64(b, l), low, high);
    else out[l] = uniform_value<T>(uniform32(b, l), low, high);
  }
}
// normal_: mean + sd * z with z from Box-Muller pairs (one pair per block for 64-bit
// types, two for the others; the second pair only when lanes 2 and 3 are used).
template <class T>
MIXT_HD inline void normal_block(const philox::Block& b, T* out, int lanes, double mean, double sd) {
  double z[4] = {0.0, 0.0, 0.0, 0.0};
  if constexpr (per_block<T>() == 2) {
    box_muller(uniform64(b, 0), uniform64(b, 1), &z[0], &z[1]);
  } else {
    box_muller(uniform32(b, 0), uniform32(b, 1), &z[0], &z[1]);
    if (lanes > 2) box_muller(uniform32(b, 2), uniform32(b, 3), &z[2], &z[3]);
  }
  for (int l = 0; l < lanes; ++l) out[l] = convert<T>(mean + sd * z[l]);
}
// random_: low + (bits mod range).
template <class T>
MIXT_HD inline void random_block(const philox::Block& b, T* out, int lanes, int64_t low, uint64_t range) {
  for (int l = 0; l < lanes; ++l) {
    if constexpr (per_block<T>() == 2) out[l] = convert<T>(randint64(b, l, low, range));
    else out[l] = convert<T>(randint32(b, l, low, range));
  }
}

}  // namespace mixt::rng
