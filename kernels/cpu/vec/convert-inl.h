// Per-target helpers of the vector kernels: float lanes from and to the storage types
// float, Half and BFloat16, with the rounding of runtime/float_types.h (to nearest,
// ties to even; NaN becomes 0x7e00 / 0x7fc0; overflow gives +-Inf), so every
// instruction set stores the same bits as the scalar conversions. AVX2 and AVX-512
// use F16C for float16; the other targets (and bfloat16 everywhere) use integer
// lanes. Include after <hwy/highway.h> in a HWY_TARGET_INCLUDE unit (dispatch.h).

// Per-target include guard (Highway's convention: toggled once per target).
#if defined(MIXT_KERNELS_CPU_VEC_CONVERT_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MIXT_KERNELS_CPU_VEC_CONVERT_INL_H_
#undef MIXT_KERNELS_CPU_VEC_CONVERT_INL_H_
#else
#define MIXT_KERNELS_CPU_VEC_CONVERT_INL_H_
#endif

#include <cstdint>

#include <hwy/highway.h>

#include <mixt/runtime/float_types.h>

HWY_BEFORE_NAMESPACE();
namespace mixt::cpu::vec::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Float lanes of the float16 codes `h` (one code per 32-bit lane's width of floats).
template <class DF>
HWY_INLINE hn::Vec<DF> HalfToFloat(DF df, hn::Vec<hn::Rebind<uint16_t, DF>> h) {
#if HWY_TARGET <= HWY_AVX2 && HWY_ARCH_X86
  return hn::PromoteTo(df, hn::BitCast(hn::Rebind<hwy::float16_t, DF>(), h));
#else
  const hn::RebindToUnsigned<DF> du;
  const auto bits = hn::PromoteTo(du, h);
  const auto sign = hn::ShiftLeft<16>(hn::And(bits, hn::Set(du, 0x8000u)));
  const auto mag = hn::And(bits, hn::Set(du, 0x7fffu));
  // Finite codes: the magnitude bits placed under float's exponent read as 2^-112 times
  // the value (subnormal codes as float subnormals), so one exact product rescales.
  const auto finite = hn::BitCast(
      du, hn::Mul(hn::BitCast(df, hn::ShiftLeft<13>(mag)), hn::Set(df, 5.192296858534828e33f /* 2^112 */)));
  const auto inf_nan = hn::Or(hn::Set(du, 0x7f800000u), hn::ShiftLeft<13>(hn::And(mag, hn::Set(du, 0x3ffu))));
  const auto is_inf_nan = hn::Gt(hn::BitCast(hn::RebindToSigned<DF>(), mag), hn::Set(hn::RebindToSigned<DF>(), 0x7bff));
  return hn::BitCast(df, hn::Or(sign, hn::IfThenElse(hn::RebindMask(du, is_inf_nan), inf_nan, finite)));
#endif
}

// The float16 codes of float lanes `v`.
template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> FloatToHalf(DF df, hn::Vec<DF> v) {
  const hn::Rebind<uint16_t, DF> d16;
  const hn::RebindToSigned<DF> di;
#if HWY_TARGET <= HWY_AVX2 && HWY_ARCH_X86
  // Every NaN as the positive quiet NaN, which F16C turns into 0x7e00.
  const auto quiet_nan = hn::BitCast(df, hn::Set(di, 0x7fc00000));
  return hn::BitCast(d16, hn::DemoteTo(hn::Rebind<hwy::float16_t, DF>(), hn::IfThenElse(hn::IsNaN(v), quiet_nan, v)));
#else
  const auto is_nan = hn::RebindMask(di, hn::IsNaN(v));
  const auto u = hn::BitCast(di, v);
  const auto mag = hn::And(u, hn::Set(di, 0x7fffffff));
  const auto sign = hn::And(hn::ShiftRight<16>(u), hn::Set(di, 0x8000));
  // Normal results: round the mantissa to 10 bits (ties to even), rebias, saturate to Inf.
  const auto round_bit = hn::And(hn::ShiftRight<13>(mag), hn::Set(di, 1));
  const auto normal = hn::Sub(hn::ShiftRight<13>(hn::Add(mag, hn::Add(hn::Set(di, 0xfff), round_bit))),
                              hn::Set(di, 112 << 10));
  const auto saturated = hn::Min(normal, hn::Set(di, 0x7c00));
  // Subnormal results (|v| < 2^-14): adding 0.5 (whose ulp is 2^-24, float16's smallest
  // step) rounds |v| to a multiple of 2^-24 in hardware; the low bits count the steps.
  const auto sub = hn::Sub(hn::BitCast(di, hn::Add(hn::Abs(v), hn::Set(df, 0.5f))), hn::Set(di, 0x3f000000));
  const auto code = hn::Or(sign, hn::IfThenElse(hn::Lt(mag, hn::Set(di, 0x38800000)), sub, saturated));
  return hn::DemoteTo(d16, hn::IfThenElse(is_nan, hn::Set(di, 0x7e00), code));
#endif
}

// Float lanes of the bfloat16 codes `h`.
template <class DF>
HWY_INLINE hn::Vec<DF> BFloat16ToFloat(DF df, hn::Vec<hn::Rebind<uint16_t, DF>> h) {
  return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(hn::RebindToUnsigned<DF>(), h)));
}

// The bfloat16 codes of float lanes `v`.
template <class DF>
HWY_INLINE hn::Vec<hn::Rebind<uint16_t, DF>> FloatToBFloat16(DF df, hn::Vec<DF> v) {
  const hn::RebindToUnsigned<DF> du;
  const hn::RebindToSigned<DF> di;
  const auto u = hn::BitCast(du, v);
  const auto rounded = hn::ShiftRight<16>(
      hn::Add(u, hn::Add(hn::Set(du, 0x7fffu), hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u)))));
  const auto code = hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), hn::Set(du, 0x7fc0u), rounded);
  return hn::DemoteTo(hn::Rebind<uint16_t, DF>(), hn::BitCast(di, code));
}

// Lanes(df) floats loaded from `p` of storage type float, Half or BFloat16.
template <class DF>
HWY_INLINE hn::Vec<DF> LoadFloat(DF df, const float* p) {
  return hn::LoadU(df, p);
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadFloat(DF df, const Half* p) {
  return HalfToFloat(df, hn::LoadU(hn::Rebind<uint16_t, DF>(), reinterpret_cast<const uint16_t*>(p)));
}
template <class DF>
HWY_INLINE hn::Vec<DF> LoadFloat(DF df, const BFloat16* p) {
  return BFloat16ToFloat(df, hn::LoadU(hn::Rebind<uint16_t, DF>(), reinterpret_cast<const uint16_t*>(p)));
}

// Stores the Lanes(df) floats `v` to `p`, rounded to its storage type.
template <class DF>
HWY_INLINE void StoreFloat(DF df, hn::Vec<DF> v, float* p) {
  hn::StoreU(v, df, p);
}
template <class DF>
HWY_INLINE void StoreFloat(DF df, hn::Vec<DF> v, Half* p) {
  hn::StoreU(FloatToHalf(df, v), hn::Rebind<uint16_t, DF>(), reinterpret_cast<uint16_t*>(p));
}
template <class DF>
HWY_INLINE void StoreFloat(DF df, hn::Vec<DF> v, BFloat16* p) {
  hn::StoreU(FloatToBFloat16(df, v), hn::Rebind<uint16_t, DF>(), reinterpret_cast<uint16_t*>(p));
}

// out[i] = f(in[i]) for i < n, with f on float vectors; In and Out are float, Half or
// BFloat16 (in == out allowed). The tail goes through a zero-padded block, so f sees
// only whole vectors.
template <class In, class Out, class F>
HWY_INLINE void MapFloat(const In* in, Out* out, size_t n, const F& f) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  for (; i + N <= n; i += N) StoreFloat(df, f(df, LoadFloat(df, in + i)), out + i);
  if (i < n) {
    HWY_ALIGN In in_tail[hn::MaxLanes(df)] = {};
    HWY_ALIGN Out out_tail[hn::MaxLanes(df)];
    for (size_t j = i; j < n; ++j) in_tail[j - i] = in[j];
    StoreFloat(df, f(df, LoadFloat(df, in_tail)), out_tail);
    for (size_t j = i; j < n; ++j) out[j] = out_tail[j - i];
  }
}

}  // namespace mixt::cpu::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
