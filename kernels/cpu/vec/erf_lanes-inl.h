// erf and erfc on float lanes (mixt's own fits; Highway has no erf), for unary_math.cpp.
// Pieces, with the coefficients fitted (Chebyshev, mpmath) to the functions named:
//   |x| < 0.5    erf(x) = x P(x^2), P of degree 5 fitted to erf(sqrt s) / sqrt s on [0, 1/4]
//   0.5 <= y < 4 erfc(y) = exp(-y^2) G(y), G(y) = erfc(y) exp(y^2): degree 13 in (y - 2.25) / 1.75
//   4 <= y       erfc(y) = exp(-y^2) H(1/y^2) / y, H(u) = y erfc(y) exp(y^2): degree 5 on
//                [1/10.5^2, 1/16]; past y = 10.5 the result is below float's smallest subnormal
//   erf(x) = sign(x) (1 - erfc(|x|)) for |x| >= 0.5 (exactly +-1 from |x| = 4 on).
// The fits are good to 3e-10 (P, H) and 2e-8 (G) relative; y^2 is taken exactly (a
// Veltkamp split: no FMA needed) because exp(-y^2) magnifies an error in y^2 by y^2.
// Per-target include guard (see convert-inl.h).
#if defined(MIXT_KERNELS_CPU_VEC_ERF_LANES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef MIXT_KERNELS_CPU_VEC_ERF_LANES_INL_H_
#undef MIXT_KERNELS_CPU_VEC_ERF_LANES_INL_H_
#else
#define MIXT_KERNELS_CPU_VEC_ERF_LANES_INL_H_
#endif

#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

HWY_BEFORE_NAMESPACE();
namespace mixt::cpu::vec::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// c[0] x^(n-1) + ... + c[n-1] by Horner's rule.
template <size_t kN, class D, class V>
HWY_INLINE V Horner(D d, V x, const float (&c)[kN]) {
  V acc = hn::Set(d, c[0]);
  for (size_t i = 1; i < kN; ++i) acc = hn::MulAdd(acc, x, hn::Set(d, c[i]));
  return acc;
}

// hi + lo = x * x exactly (for |x| < 2^60), by splitting x into two 12-bit halves.
template <class D, class V>
HWY_INLINE void ExactSquare(D d, V x, V& hi, V& lo) {
  const V c = hn::Mul(x, hn::Set(d, 4097.0f));
  const V xh = hn::Sub(c, hn::Sub(c, x));
  const V xl = hn::Sub(x, xh);
  hi = hn::Mul(x, x);
  lo = hn::Add(hn::Add(hn::Sub(hn::Mul(xh, xh), hi), hn::Mul(hn::Add(xh, xh), xl)), hn::Mul(xl, xl));
}

// erfc(y) for y >= 0.5 (other lanes: unspecified), given y^2 = sq_hi + sq_lo.
template <class D, class V>
HWY_INLINE V ErfcTail(D d, V y, V sq_hi, V sq_lo) {
  static constexpr float kG[14] = {-0.00010535949493541476f, 0.00024616474603220953f, -0.00019509483545054619f,
                                   0.0004035037535339093f,   -0.0013111920506456078f, 0.002718932938701253f,
                                   -0.0051428900585514335f,  0.009961537311331167f,   -0.018775570566588795f,
                                   0.033950598502115625f,    -0.058963951485979244f,  0.09797689305812916f,
                                   -0.15485138214224914f,    0.23108726413130376f};
  static constexpr float kH[6] = {-6.333619762940107f,   3.018619595862392f,    -1.032245038413758f,
                                  0.4226176248964773f,   -0.28208943892250576f, 0.5641895627625242f};
  // exp(-hi - lo) = exp(-hi) (1 - lo) to float precision (|lo| <= ulp(hi) / 2).
  const V e = hn::Mul(hn::Exp(d, hn::Neg(sq_hi)), hn::Sub(hn::Set(d, 1.0f), sq_lo));
  const V g = Horner(d, hn::Mul(hn::Sub(y, hn::Set(d, 2.25f)), hn::Set(d, 1.0f / 1.75f)), kG);
  const auto far = hn::Ge(y, hn::Set(d, 4.0f));  // rare in practice: skip its two divisions when no lane needs them
  const V r = hn::AllFalse(d, far) ? hn::Mul(e, g)
                                   : hn::Mul(e, hn::IfThenElse(far, hn::Div(Horner(d, hn::Div(hn::Set(d, 1.0f), sq_hi), kH), y), g));
  return hn::IfThenElseZero(hn::Lt(y, hn::Set(d, 10.5f)), r);
}

// erf(x) for |x| < 0.5 (other lanes: unspecified).
template <class D, class V>
HWY_INLINE V ErfSmall(D d, V x) {
  static constexpr float kP[6] = {-0.0007694534279142308f, 0.005200413724335493f, -0.026863143032249386f,
                                  0.11283774013179539f,    -0.37612638525650693f,  1.1283791670824095f};
  return hn::Mul(x, Horner(d, hn::Mul(x, x), kP));
}

// erf(x) for every float x (NaN stays NaN).
template <class D, class V>
HWY_INLINE V ErfLanes(D d, V x) {
  const V a = hn::Abs(x);
  V sq_hi, sq_lo;
  ExactSquare(d, a, sq_hi, sq_lo);
  const V one = hn::Set(d, 1.0f);
  const V large = hn::IfThenElse(hn::Lt(a, hn::Set(d, 4.0f)), hn::Sub(one, ErfcTail(d, a, sq_hi, sq_lo)), one);
  const V r = hn::IfThenElse(hn::Lt(a, hn::Set(d, 0.5f)), ErfSmall(d, x), hn::CopySignToAbs(large, x));
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}

}  // namespace mixt::cpu::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif  // per-target include guard
