// Vectorised unary math and pow (unary_math.h), compiled once per instruction set: the worked
// example of the pattern described in dispatch.h. Highway's contrib/math gives exp,
// expm1, log, log1p, sin, cos and tanh; erf and erfc are mixt's (erf_lanes-inl.h), and
// every function here adds the IEEE special values Highway leaves out.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "mixt/kernels/cpu/vec/unary_math.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <cmath>

#include <mixt/kernels/cpu/vec/convert-inl.h>
#include <mixt/kernels/cpu/vec/erf_lanes-inl.h>
#include <mixt/kernels/cpu/vec/unary_math.h>

HWY_BEFORE_NAMESPACE();
namespace mixt::cpu::vec::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// NaN lanes of x, else y.
template <class V>
HWY_INLINE V KeepNaN(V x, V y) {
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

// exp(x): overflow gives +Inf (Highway's Exp covers x <= 104), NaN stays NaN.
template <class D, class V>
HWY_INLINE V ExpLanes(D d, V x) {
  const V y = hn::IfThenElse(hn::Gt(x, hn::Set(d, 88.72283935546875f)), hn::Inf(d), hn::Exp(d, x));
  return KeepNaN(x, y);
}

// log(x) with log(0) = -Inf, log(+Inf) = +Inf, log(x < 0) = NaN.
template <class D, class V>
HWY_INLINE V LogLanes(D d, V x) {
  V y = hn::Log(d, x);
  y = hn::IfThenElse(hn::Eq(x, hn::Zero(d)), hn::Neg(hn::Inf(d)), y);
  y = hn::IfThenElse(hn::Eq(x, hn::Inf(d)), x, y);
  y = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::NaN(d), y);
  return KeepNaN(x, y);
}

// 1 / (1 + exp(-x)) without overflow: with e = exp(-|x|), 1 / (1 + e) for x >= 0 and
// e / (1 + e) below, so the far negative tail keeps its (subnormal) digits.
template <class D, class V>
HWY_INLINE V SigmoidLanes(D d, V x) {
  const V e = ExpLanes(d, hn::Neg(hn::Abs(x)));
  const V r = hn::Div(hn::Set(d, 1.0f), hn::Add(hn::Set(d, 1.0f), e));
  return KeepNaN(x, hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Mul(e, r), r));
}

// sin or cos: Highway's reduction holds for |x| <= 39000; larger (and infinite) lanes
// take the C library, lane by lane, so a lane's result never depends on its neighbours.
template <bool kSin, class D, class V>
HWY_INLINE V SinCosLanes(D d, V x) {
  const V y = kSin ? hn::Sin(d, x) : hn::Cos(d, x);
  const auto large = hn::Not(hn::Le(hn::Abs(x), hn::Set(d, 39000.0f)));
  if (HWY_LIKELY(hn::AllFalse(d, large))) return y;
  HWY_ALIGN float xs[hn::MaxLanes(d)];
  HWY_ALIGN float ys[hn::MaxLanes(d)];
  hn::Store(x, d, xs);
  hn::Store(y, d, ys);
  for (size_t i = 0; i < hn::Lanes(d); ++i)
    if (!(std::fabs(xs[i]) <= 39000.0f)) ys[i] = kSin ? std::sin(xs[i]) : std::cos(xs[i]);
  return hn::Load(d, ys);
}

// x sigmoid(x); below x = -80 as x exp(x + 20) e^-20, so that neither factor leaves the
// normal range before the product does (x + 20 is exact there).
template <class D, class V>
HWY_INLINE V SiluLanes(D d, V x) {
  const V tail = hn::Mul(hn::Mul(x, ExpLanes(d, hn::Add(x, hn::Set(d, 20.0f)))), hn::Set(d, 2.0611536224385579e-09f));
  return hn::IfThenElse(hn::Lt(x, hn::Set(d, -80.0f)), tail, hn::Mul(x, SigmoidLanes(d, x)));
}

// x tanh(softplus(x)) = x n / (n + 2) with n = e (e + 2), e = exp(x): tanh(log(1 + e))
// without tanh or log. Above x = 20 the factor rounds to 1 (and n would overflow from
// x = 44); below x = -80 n / (n + 2) is e to float precision, taken as silu's tail is.
template <class D, class V>
HWY_INLINE V MishLanes(D d, V x) {
  const V e = ExpLanes(d, x);
  const V n = hn::Mul(e, hn::Add(e, hn::Set(d, 2.0f)));
  const V y = hn::Mul(x, hn::Div(n, hn::Add(n, hn::Set(d, 2.0f))));
  const V tail = hn::Mul(hn::Mul(x, ExpLanes(d, hn::Add(x, hn::Set(d, 20.0f)))), hn::Set(d, 2.0611536224385579e-09f));
  const V body = hn::IfThenElse(hn::Gt(x, hn::Set(d, 20.0f)), x, y);
  return KeepNaN(x, hn::IfThenElse(hn::Lt(x, hn::Set(d, -80.0f)), tail, body));
}

// expm1(x): overflow gives +Inf (Highway's Expm1 covers x <= 88.7), NaN stays NaN.
template <class D, class V>
HWY_INLINE V Expm1Lanes(D d, V x) {
  const V y = hn::IfThenElse(hn::Gt(x, hn::Set(d, 88.72283935546875f)), hn::Inf(d), hn::Expm1(d, x));
  return KeepNaN(x, y);
}

template <UnaryMath kOp, class D, class V>
HWY_INLINE V Apply(D d, V x, const UnaryMathParams& p) {
  const V one = hn::Set(d, 1.0f), half = hn::Set(d, 0.5f);
  if constexpr (kOp == UnaryMath::Exp) {
    return ExpLanes(d, x);
  } else if constexpr (kOp == UnaryMath::Expm1) {
    return Expm1Lanes(d, x);
  } else if constexpr (kOp == UnaryMath::Log) {
    return LogLanes(d, x);
  } else if constexpr (kOp == UnaryMath::Log2) {
    return hn::Mul(LogLanes(d, x), hn::Set(d, 1.44269504088896340736f));
  } else if constexpr (kOp == UnaryMath::Log10) {
    return hn::Mul(LogLanes(d, x), hn::Set(d, 0.434294481903251827651f));
  } else if constexpr (kOp == UnaryMath::Log1p) {
    V y = hn::Log1p(d, x);
    y = hn::IfThenElse(hn::Eq(x, hn::Set(d, -1.0f)), hn::Neg(hn::Inf(d)), y);
    y = hn::IfThenElse(hn::Eq(x, hn::Inf(d)), x, y);
    y = hn::IfThenElse(hn::Lt(x, hn::Set(d, -1.0f)), hn::NaN(d), y);
    return KeepNaN(x, y);
  } else if constexpr (kOp == UnaryMath::Sin) {
    return SinCosLanes<true>(d, x);
  } else if constexpr (kOp == UnaryMath::Cos) {
    return SinCosLanes<false>(d, x);
  } else if constexpr (kOp == UnaryMath::Tanh) {
    return KeepNaN(x, hn::Tanh(d, x));
  } else if constexpr (kOp == UnaryMath::Sigmoid) {
    return SigmoidLanes(d, x);
  } else if constexpr (kOp == UnaryMath::Silu) {
    return SiluLanes(d, x);
  } else if constexpr (kOp == UnaryMath::Softplus) {
    // log1p(exp(beta x)) / beta, or x where beta x > threshold (the functor's rule).
    const V bx = hn::Mul(x, hn::Set(d, p.beta));
    const V e = ExpLanes(d, bx);
    V y = hn::IfThenElse(hn::Eq(e, hn::Inf(d)), e, hn::Log1p(d, e));
    y = hn::Div(y, hn::Set(d, p.beta));
    return KeepNaN(x, hn::IfThenElse(hn::Gt(bx, hn::Set(d, p.threshold)), x, y));
  } else if constexpr (kOp == UnaryMath::Sqrt) {
    return hn::Sqrt(x);  // correctly rounded: the scalar functor's bits
  } else if constexpr (kOp == UnaryMath::Rsqrt) {
    return hn::Div(one, hn::Sqrt(x));  // the scalar functor's two roundings, not an estimate
  } else if constexpr (kOp == UnaryMath::Reciprocal) {
    return hn::Div(one, x);
  } else if constexpr (kOp == UnaryMath::Mish) {
    return MishLanes(d, x);
  } else if constexpr (kOp == UnaryMath::Floor) {
    // The roundings are exact, so every instruction set gives the functors' bits. A rounded
    // value has x's sign (floor(-0) = -0, ceil(-0.5) = -0), which Highway's portable target
    // does not keep for zeros: the sign is copied back.
    return hn::CopySign(hn::Floor(x), x);
  } else if constexpr (kOp == UnaryMath::Ceil) {
    return hn::CopySign(hn::Ceil(x), x);
  } else if constexpr (kOp == UnaryMath::Trunc) {
    return hn::CopySign(hn::Trunc(x), x);
  } else if constexpr (kOp == UnaryMath::Round) {
    return hn::CopySign(hn::Round(x), x);  // to nearest, ties to even, as nearbyint in the default rounding mode
  } else if constexpr (kOp == UnaryMath::Elu) {
    // The functor's two sides; expm1 keeps -0 (Highway's gives +0), so elu(-0) = -0 as libm's.
    const V t = hn::Mul(x, hn::Set(d, p.elu_input_scale));
    const V e = hn::IfThenElse(hn::Eq(t, hn::Zero(d)), t, Expm1Lanes(d, t));
    return hn::IfThenElse(hn::Gt(x, hn::Zero(d)), hn::Mul(x, hn::Set(d, p.elu_scale)),
                          hn::Mul(e, hn::Set(d, p.elu_alpha_scale)));
  } else if constexpr (kOp == UnaryMath::LeakyRelu) {
    return hn::IfThenElse(hn::Gt(x, hn::Zero(d)), x, hn::Mul(x, hn::Set(d, p.slope)));
  } else if constexpr (kOp == UnaryMath::Frac) {
    return hn::Sub(x, hn::CopySign(hn::Trunc(x), x));  // exact; NaN at +-Inf, as x - trunc(x)
  } else if constexpr (kOp == UnaryMath::Erf) {
    return ErfLanes(d, x);
  } else if constexpr (kOp == UnaryMath::GeluErf) {
    // 0.5 x (1 + erf(y)), y = x / sqrt 2, from one erfc: for |y| >= 0.5 with a = |y|,
    // x - 0.5 x erfc(a) (x > 0) or 0.5 x erfc(a) (x < 0: no cancellation). a^2 = x^2 / 2
    // is taken exactly from x (not from the rounded y); |y| < 0.5 uses erf's polynomial.
    const V y = hn::Mul(x, hn::Set(d, 0.70710678118654752f));
    const V half_x = hn::Mul(half, x);
    V sq_hi, sq_lo;
    ExactSquare(d, x, sq_hi, sq_lo);
    const V erfc = ErfcTail(d, hn::Abs(y), hn::Mul(half, sq_hi), hn::Mul(half, sq_lo));
    const V tail = hn::Mul(half_x, erfc);  // NaN at x = -inf, as the scalar functor's
    // x = +inf: inf - inf * 0 would be NaN; the tail is 0 wherever erfc is.
    const V far = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), tail, hn::Sub(x, hn::IfThenElseZero(hn::Gt(erfc, hn::Zero(d)), tail)));
    const V near = hn::Mul(half_x, hn::Add(one, ErfSmall(d, y)));  // keeps gelu(-0) = -0
    return KeepNaN(x, hn::IfThenElse(hn::Lt(hn::Abs(y), half), near, far));
  } else {
    static_assert(kOp == UnaryMath::GeluTanh);
    // 0.5 x (1 + tanh(z)) = x sigmoid(2 z), z = sqrt(2/pi) (x + 0.044715 x^3): no
    // cancellation where tanh(z) nears -1.
    const V x3 = hn::Mul(hn::Mul(x, x), x);
    const V z2 = hn::Mul(hn::Set(d, 2.0f * 0.79788456080286536f), hn::Add(x, hn::Mul(hn::Set(d, 0.044715f), x3)));
    // x^3 overflowing for huge |x| still gives x (x > 0) or -0 (x < 0), as the limits do.
    return KeepNaN(x, hn::Mul(x, SigmoidLanes(d, z2)));
  }
}

// The ops with f(-0) = -0 that Highway's version returns as +0.
constexpr bool keeps_signed_zero(UnaryMath op) {
  return op == UnaryMath::Expm1 || op == UnaryMath::Log1p || op == UnaryMath::Sin || op == UnaryMath::Tanh;
}

template <UnaryMath kOp>
HWY_NOINLINE void Run(const UnaryMathParams& p, const float* in, float* out, size_t n) {
  MapFloat(in, out, n, [&p](auto d, auto x) {
    const auto y = Apply<kOp>(d, x, p);
    if constexpr (keeps_signed_zero(kOp)) return hn::IfThenElse(hn::Eq(x, hn::Zero(d)), x, y);
    return y;
  });
}

// pow(x, y) on float lanes as C's powf: |x|^y = exp(y log|x|) taken in double, so the
// float result is the correctly rounded one unless it lies within ~1e-13 (relative) of a
// rounding boundary; then the signs and special values of C99 (Annex F). `dh` holds as
// many floats as a double vector holds doubles.
template <class DH, class V>
HWY_INLINE V PowLanes(DH dh, V x, V y) {
  const hn::Rebind<double, DH> dd;
  const hn::RebindToSigned<DH> di;
  const auto ax = hn::PromoteTo(dd, hn::Abs(x));
  auto l = hn::Log(dd, ax);
  l = hn::IfThenElse(hn::Eq(ax, hn::Zero(dd)), hn::Neg(hn::Inf(dd)), l);
  l = hn::IfThenElse(hn::Eq(ax, hn::Inf(dd)), ax, l);
  // e^+-200 is finite in double and overflows (underflows) every float: the clamp keeps
  // Exp in its range without changing a float result (NaN lanes are set below).
  const auto t = hn::Min(hn::Max(hn::Mul(hn::PromoteTo(dd, y), l), hn::Set(dd, -200.0)), hn::Set(dd, 200.0));
  const auto e = hn::Exp(dd, t);
  // Round-to-nearest sends e from 2^128 - 2^103 up to +Inf; some targets' demotion
  // saturates at FLT_MAX instead, so the overflow is set here.
  const auto big = hn::IfThenElseZero(hn::Ge(e, hn::Set(dd, 3.4028235677973366e38)), hn::Set(dd, 1.0));
  const auto overflow = hn::Eq(hn::DemoteTo(dh, big), hn::Set(dh, 1.0f));  // the mask in float lanes
  V r = hn::IfThenElse(overflow, hn::Inf(dh), hn::DemoteTo(dh, e));
  // y is an integer (every float from 2^23 on is; those from 2^24 on are even), and odd.
  const auto y_int = hn::Eq(hn::Round(y), y);
  const auto y_small = hn::Lt(hn::Abs(y), hn::Set(dh, 16777216.0f));
  const auto yi = hn::ConvertTo(di, hn::IfThenElseZero(y_small, y));
  const auto y_odd = hn::And(hn::And(y_int, y_small),
                             hn::RebindMask(dh, hn::Eq(hn::And(yi, hn::Set(di, 1)), hn::Set(di, 1))));
  const auto x_negative = hn::RebindMask(dh, hn::Lt(hn::BitCast(di, x), hn::Zero(di)));  // sign bit: -0 too
  r = hn::IfThenElse(hn::And(y_odd, x_negative), hn::Neg(r), r);
  const auto finite = hn::And(hn::IsFinite(x), hn::IsFinite(y));
  r = hn::IfThenElse(hn::And(hn::And(hn::Lt(x, hn::Zero(dh)), finite), hn::Not(y_int)), hn::NaN(dh), r);
  r = hn::IfThenElse(hn::Or(hn::IsNaN(x), hn::IsNaN(y)), hn::NaN(dh), r);
  const V one = hn::Set(dh, 1.0f);
  const auto is_one = hn::Or(hn::Or(hn::Eq(y, hn::Zero(dh)), hn::Eq(x, one)),
                             hn::And(hn::Eq(x, hn::Neg(one)), hn::IsInf(y)));
  return hn::IfThenElse(is_one, one, r);
}

HWY_NOINLINE void PowF32(const float* x, const float* y, float* out, size_t n) {
  const hn::Rebind<float, hn::ScalableTag<double>> dh;
  const size_t N = hn::Lanes(dh);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(PowLanes(dh, hn::LoadU(dh, x + i), hn::LoadU(dh, y + i)), dh, out + i);
  if (i < n) {
    HWY_ALIGN float xt[hn::MaxLanes(dh)] = {}, yt[hn::MaxLanes(dh)] = {}, rt[hn::MaxLanes(dh)];
    for (size_t j = i; j < n; ++j) xt[j - i] = x[j], yt[j - i] = y[j];
    hn::Store(PowLanes(dh, hn::Load(dh, xt), hn::Load(dh, yt)), dh, rt);
    for (size_t j = i; j < n; ++j) out[j] = rt[j - i];
  }
}

void UnaryMathF32(UnaryMath op, const UnaryMathParams& p, const float* in, float* out, size_t n) {
  switch (op) {
#define MIXT_VEC_CASE(name) \
  case UnaryMath::name: return Run<UnaryMath::name>(p, in, out, n);
    MIXT_VEC_CASE(Exp) MIXT_VEC_CASE(Expm1) MIXT_VEC_CASE(Log) MIXT_VEC_CASE(Log1p) MIXT_VEC_CASE(Log2)
    MIXT_VEC_CASE(Log10) MIXT_VEC_CASE(Sin) MIXT_VEC_CASE(Cos) MIXT_VEC_CASE(Tanh) MIXT_VEC_CASE(Sigmoid)
    MIXT_VEC_CASE(Silu) MIXT_VEC_CASE(Softplus) MIXT_VEC_CASE(Erf) MIXT_VEC_CASE(GeluErf) MIXT_VEC_CASE(GeluTanh)
    MIXT_VEC_CASE(Sqrt) MIXT_VEC_CASE(Rsqrt) MIXT_VEC_CASE(Reciprocal) MIXT_VEC_CASE(Mish)
    MIXT_VEC_CASE(Floor) MIXT_VEC_CASE(Ceil) MIXT_VEC_CASE(Trunc) MIXT_VEC_CASE(Round) MIXT_VEC_CASE(Frac)
    MIXT_VEC_CASE(LeakyRelu) MIXT_VEC_CASE(Elu)
#undef MIXT_VEC_CASE
  }
}

}  // namespace mixt::cpu::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <mixt/kernels/cpu/vec/dispatch.h>
#include <mixt/runtime/check.h>

namespace mixt::cpu::vec {
namespace {
using UnaryMathFn = void (*)(UnaryMath, const UnaryMathParams&, const float*, float*, size_t);
const IsaTable<UnaryMathFn> kUnaryMath = MIXT_VEC_TABLE(UnaryMathF32);
using PowFn = void (*)(const float*, const float*, float*, size_t);
const IsaTable<PowFn> kPow = MIXT_VEC_TABLE(PowF32);
}  // namespace

void pow_math(const float* x, const float* y, float* out, size_t n) { kPow.get()(x, y, out, n); }

void pow_math(const float* x, const float* y, float* out, size_t n, Isa isa) {
  MIXT_CHECK(isa_supported(isa), "pow_math", "instruction set '{}' is not supported by this CPU", isa_name(isa));
  kPow.get(isa)(x, y, out, n);
}

void unary_math(UnaryMath op, const UnaryMathParams& p, const float* in, float* out, size_t n) {
  kUnaryMath.get()(op, p, in, out, n);
}

void unary_math(UnaryMath op, const UnaryMathParams& p, const float* in, float* out, size_t n, Isa isa) {
  MIXT_CHECK(isa_supported(isa), "unary_math", "instruction set '{}' is not supported by this CPU", isa_name(isa));
  kUnaryMath.get(isa)(op, p, in, out, n);
}

}  // namespace mixt::cpu::vec
#endif  // HWY_ONCE
