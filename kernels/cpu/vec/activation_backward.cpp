// gelu's and silu's backward in vector lanes (activation_backward.h), compiled once per
// instruction set (dispatch.h). Each function is the lane form of its scalar twin in
// kernels/common/backward_math.h (same pieces, same clamps and tails); erf and erfc are
// erf_lanes-inl.h's, as the forward gelu's (unary_math.cpp). Highway's Exp gives 0 (not
// NaN) for a NaN lane, so every result takes x's NaN back at the end.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "mixt/kernels/cpu/vec/activation_backward.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <mixt/kernels/cpu/vec/activation_backward.h>
#include <mixt/kernels/cpu/vec/erf_lanes-inl.h>

HWY_BEFORE_NAMESPACE();
namespace mixt::cpu::vec::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

constexpr float kExpMinus40 = 4.2483542552915889e-18f;

// x clamped to [-limit, limit]; NaN stays NaN (backward_math::detail::clamp_abs).
template <class D, class V>
HWY_INLINE V ClampAbs(D d, V x, float limit) {
  const V hi = hn::Set(d, limit), lo = hn::Set(d, -limit);
  return hn::IfThenElse(hn::Gt(x, hi), hi, hn::IfThenElse(hn::Lt(x, lo), lo, x));
}

// sigmoid(w) and sigmoid(-w) from one exp, neither by a subtraction.
template <class D, class V>
HWY_INLINE void SigmoidPair(D d, V w, V& s, V& s_neg) {
  const V one = hn::Set(d, 1.0f);
  const V e = hn::Exp(d, hn::Neg(hn::Abs(w)));
  const V r = hn::Div(one, hn::Add(one, e));
  const V er = hn::Mul(e, r);
  const auto neg = hn::Lt(w, hn::Zero(d));
  s = hn::IfThenElse(neg, er, r);
  s_neg = hn::IfThenElse(neg, r, er);
}

// (1 + slope) exp(w + 40) e^-40: s (1 + (1 - s) slope) where s = sigmoid(w) would be subnormal.
template <class D, class V>
HWY_INLINE V FarTail(D d, V w, V slope) {
  const V body = hn::Mul(hn::Add(hn::Set(d, 1.0f), slope), hn::Exp(d, hn::Add(w, hn::Set(d, 40.0f))));
  return hn::Mul(body, hn::Set(d, kExpMinus40));
}

// Phi(x) + x phi(x) (backward_math::gelu_grad). Phi from erf near 0 and erfc beyond, as the
// forward gelu; x^2 split exactly (ExactSquare) for both exps.
template <class D, class V>
HWY_INLINE V GeluErfSlope(D d, V x) {
  const V one = hn::Set(d, 1.0f), half = hn::Set(d, 0.5f);
  x = ClampAbs(d, x, 15.0f);
  V sq_hi, sq_lo;
  ExactSquare(d, x, sq_hi, sq_lo);
  const V y = hn::Mul(x, hn::Set(d, 0.70710678118654752f));
  const V ay = hn::Abs(y);
  const V half_tail = hn::Mul(half, ErfcTail(d, ay, hn::Mul(half, sq_hi), hn::Mul(half, sq_lo)));
  const V cdf_far = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), half_tail, hn::Sub(one, half_tail));
  const V cdf_near = hn::MulAdd(half, ErfSmall(d, y), half);
  const V cdf = hn::IfThenElse(hn::Lt(ay, half), cdf_near, cdf_far);
  // x phi(x) = x exp(-x^2 / 2) / sqrt(2 pi), as exp(16 - x^2 / 2) e^-16 past |x| = 12.
  const auto far = hn::Gt(hn::Abs(x), hn::Set(d, 12.0f));
  const V shift = hn::IfThenElseZero(far, hn::Set(d, 16.0f));
  const V scale = hn::IfThenElse(far, hn::Set(d, 1.1253517471925911451e-07f), one);
  const V e = hn::Exp(d, hn::NegMulAdd(half, sq_hi, shift));
  const V x_c = hn::Mul(hn::Mul(x, hn::Set(d, 0.39894228040143267794f)), hn::NegMulAdd(half, sq_lo, one));
  return hn::Add(cdf, hn::Mul(hn::Mul(x_c, e), scale));
}

// s (1 + (1 - s) 2 x z'), s = sigmoid(2 z) (backward_math::gelu_tanh_grad).
template <class D, class V>
HWY_INLINE V GeluTanhSlope(D d, V x) {
  const V one = hn::Set(d, 1.0f), k2 = hn::Set(d, 2.0f * 0.79788456080286535588f), c = hn::Set(d, 0.044715f);
  x = ClampAbs(d, x, 20.0f);
  const V sq = hn::Mul(x, x);
  const V w = hn::Mul(k2, hn::MulAdd(hn::Mul(c, sq), x, x));
  const V xw = hn::Mul(hn::Mul(k2, x), hn::MulAdd(hn::Set(d, 3.0f * 0.044715f), sq, one));
  V s, s_neg;
  SigmoidPair(d, w, s, s_neg);
  const V body = hn::Mul(s, hn::MulAdd(s_neg, xw, one));
  const auto tail = hn::Lt(w, hn::Set(d, -64.0f));
  return hn::AllFalse(d, tail) ? body : hn::IfThenElse(tail, FarTail(d, w, xw), body);
}

// s (1 + x (1 - s)), s = sigmoid(x) (backward_math::silu_grad).
template <class D, class V>
HWY_INLINE V SiluSlope(D d, V x) {
  x = ClampAbs(d, x, 150.0f);
  V s, s_neg;
  SigmoidPair(d, x, s, s_neg);
  const V body = hn::Mul(s, hn::MulAdd(x, s_neg, hn::Set(d, 1.0f)));
  const auto tail = hn::Lt(x, hn::Set(d, -64.0f));
  return hn::AllFalse(d, tail) ? body : hn::IfThenElse(tail, FarTail(d, x, x), body);
}

template <ActivationGrad kOp, class D, class V>
HWY_INLINE V Grad(D d, V g, V x) {
  V slope;
  if constexpr (kOp == ActivationGrad::GeluErf)
    slope = GeluErfSlope(d, x);
  else if constexpr (kOp == ActivationGrad::GeluTanh)
    slope = GeluTanhSlope(d, x);
  else
    slope = SiluSlope(d, x);
  return hn::IfThenElse(hn::IsNaN(x), x, hn::Mul(g, slope));
}

// out = Grad(g, x) over n floats; the tail through zero-padded blocks, so Grad sees only whole vectors.
template <ActivationGrad kOp>
HWY_NOINLINE void Run(const float* g, const float* x, float* out, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(Grad<kOp>(d, hn::LoadU(d, g + i), hn::LoadU(d, x + i)), d, out + i);
  if (i == n) return;
  HWY_ALIGN float g_tail[hn::MaxLanes(d)] = {};
  HWY_ALIGN float x_tail[hn::MaxLanes(d)] = {};
  for (size_t j = i; j < n; ++j) {
    g_tail[j - i] = g[j];
    x_tail[j - i] = x[j];
  }
  hn::Store(Grad<kOp>(d, hn::Load(d, g_tail), hn::Load(d, x_tail)), d, g_tail);
  for (size_t j = i; j < n; ++j) out[j] = g_tail[j - i];
}

void ActivationBackwardF32(ActivationGrad op, const float* g, const float* x, float* out, size_t n) {
  switch (op) {
    case ActivationGrad::GeluErf: return Run<ActivationGrad::GeluErf>(g, x, out, n);
    case ActivationGrad::GeluTanh: return Run<ActivationGrad::GeluTanh>(g, x, out, n);
    case ActivationGrad::Silu: return Run<ActivationGrad::Silu>(g, x, out, n);
  }
}

}  // namespace mixt::cpu::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <mixt/kernels/cpu/vec/dispatch.h>
#include <mixt/runtime/check.h>

namespace mixt::cpu::vec {
namespace {
using ActivationBackwardFn = void (*)(ActivationGrad, const float*, const float*, float*, size_t);
const IsaTable<ActivationBackwardFn> kActivationBackward = MIXT_VEC_TABLE(ActivationBackwardF32);
}  // namespace

void activation_backward(ActivationGrad op, const float* g, const float* x, float* out, size_t n) {
  kActivationBackward.get()(op, g, x, out, n);
}

void activation_backward(ActivationGrad op, const float* g, const float* x, float* out, size_t n, Isa isa) {
  MIXT_CHECK(isa_supported(isa), "activation_backward", "instruction set '{}' is not supported by this CPU",
             isa_name(isa));
  kActivationBackward.get(isa)(op, g, x, out, n);
}

}  // namespace mixt::cpu::vec
#endif  // HWY_ONCE
