// Backward formulas of the elementwise ops. In-place forms share the
// out-of-place formula (the node saves a copy of self when the formula reads it).
#include <cmath>
#include <limits>
#include <numbers>

#include <mixt/kernels/common/elementwise_ops.h>
#include <mixt/runtime/autograd/derivatives.h>
#include <mixt/runtime/ops/nn.h>

namespace mixt::autograd {
namespace {

const Tensor& G(const Grads& g) { return g[0]; }

// ---- unary ----
Grads neg_bw(const BackwardContext&, const Grads& g) { return {neg(G(g))}; }
Grads abs_bw(const BackwardContext& c, const Grads& g) { return {mul(G(g), sign(c.input(0)))}; }
Grads zero_bw(const BackwardContext& c, const Grads& g) { return {zeros_like(G(g))}; }
Grads exp_bw(const BackwardContext& c, const Grads& g) { return {mul(G(g), c.output(0))}; }
Grads expm1_bw(const BackwardContext& c, const Grads& g) { return {mul(G(g), add(c.output(0), 1))}; }
Grads log_bw(const BackwardContext& c, const Grads& g) { return {div(G(g), c.input(0))}; }
Grads log1p_bw(const BackwardContext& c, const Grads& g) { return {div(G(g), add(c.input(0), 1))}; }
Grads log2_bw(const BackwardContext& c, const Grads& g) {
  return {div(G(g), mul(c.input(0), std::numbers::ln2))};
}
Grads log10_bw(const BackwardContext& c, const Grads& g) {
  return {div(G(g), mul(c.input(0), std::numbers::ln10))};
}
Grads sqrt_bw(const BackwardContext& c, const Grads& g) { return {div(G(g), mul(c.output(0), 2))}; }
Grads rsqrt_bw(const BackwardContext& c, const Grads& g) {
  const Tensor y = c.output(0);
  return {mul(mul(G(g), mul(mul(y, y), y)), -0.5)};
}
Grads reciprocal_bw(const BackwardContext& c, const Grads& g) {
  const Tensor y = c.output(0);
  return {neg(mul(G(g), mul(y, y)))};
}
Grads sin_bw(const BackwardContext& c, const Grads& g) { return {mul(G(g), cos(c.input(0)))}; }
Grads cos_bw(const BackwardContext& c, const Grads& g) { return {neg(mul(G(g), sin(c.input(0))))}; }
Grads tan_bw(const BackwardContext& c, const Grads& g) {
  const Tensor y = c.output(0);
  return {mul(G(g), add(mul(y, y), 1))};
}
Grads tanh_bw(const BackwardContext& c, const Grads& g) {
  const Tensor y = c.output(0);
  return {mul(G(g), sub(1, mul(y, y)))};
}
Grads sigmoid_bw(const BackwardContext& c, const Grads& g) {
  const Tensor y = c.output(0);
  return {mul(G(g), mul(y, sub(1, y)))};
}
Grads relu_bw(const BackwardContext& c, const Grads& g) { return {mul(G(g), gt(c.output(0), 0))}; }
// gelu and silu: one fused backward op each (Note [Fused backward ops]).
Grads gelu_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0);
  const bool tanh = c.attrs().get<attrs::Gelu>().approximate == GeluApprox::Tanh;
  return {nn::functional::gelu_backward(G(g).to(x.dtype()), x, tanh ? "tanh" : "none")};
}
Grads silu_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0);
  return {nn::functional::silu_backward(G(g).to(x.dtype()), x)};
}
Grads softplus_bw(const BackwardContext& c, const Grads& g) {
  const auto& a = c.attrs().get<attrs::Softplus>();
  const double beta = a.beta, threshold = a.threshold;
  const Tensor z = mul(c.input(0), beta);
  return {mul(G(g), where(gt(z, threshold), ones_like(z), sigmoid(z)))};
}
Grads erf_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0);
  return {mul(G(g), mul(exp(neg(mul(x, x))), 2.0 / std::sqrt(std::numbers::pi)))};
}
Grads erfinv_bw(const BackwardContext& c, const Grads& g) {
  const Tensor y = c.output(0);
  return {mul(G(g), mul(exp(mul(y, y)), std::sqrt(std::numbers::pi) / 2))};
}
// 1 / sqrt(1 - x^2)
Tensor unit_circle_slope(const Tensor& x) { return rsqrt(sub(1, mul(x, x))); }
Grads acos_bw(const BackwardContext& c, const Grads& g) { return {neg(mul(G(g), unit_circle_slope(c.input(0))))}; }
Grads asin_bw(const BackwardContext& c, const Grads& g) { return {mul(G(g), unit_circle_slope(c.input(0)))}; }
Grads sinh_bw(const BackwardContext& c, const Grads& g) { return {mul(G(g), cosh(c.input(0)))}; }
Grads cosh_bw(const BackwardContext& c, const Grads& g) { return {mul(G(g), sinh(c.input(0)))}; }
Grads asinh_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0);
  return {mul(G(g), rsqrt(add(mul(x, x), 1)))};
}
Grads acosh_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0);
  return {mul(G(g), rsqrt(sub(mul(x, x), 1)))};
}
Grads atanh_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0);
  return {div(G(g), sub(1, mul(x, x)))};
}
Grads identity_bw(const BackwardContext&, const Grads& g) { return {G(g)}; }
// 1 / (x (1 - x)); with eps, 0 where the input was clamped; without, NaN outside [0, 1] (PyTorch's rules).
Grads logit_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0);
  const Tensor d = div(G(g), mul(x, sub(1, x)));
  const std::optional<double> eps = c.attrs().get<attrs::Logit>().eps;
  if (eps && *eps >= 0) return {where(logical_or(lt(x, *eps), gt(x, 1 - *eps)), Scalar(0.0), d)};
  return {where(logical_or(lt(x, 0), gt(x, 1)), Scalar(std::numeric_limits<double>::quiet_NaN()), d)};
}
// 1 strictly inside (min_val, max_val), 0 at and beyond the bounds (PyTorch's hardtanh_backward).
Grads hardtanh_bw(const BackwardContext& c, const Grads& g) {
  const auto& a = c.attrs().get<attrs::Hardtanh>();
  const Tensor x = c.input(0);
  return {mul(G(g), logical_and(gt(x, a.min_val), lt(x, a.max_val)))};
}
// 0 below -3, x / 3 + 1 / 2 on [-3, 3], 1 above (the kinks take the middle piece, as PyTorch).
Grads hardswish_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0);
  const Tensor d = where(lt(x, -3), Scalar(0.0), where(le(x, 3), add(div(x, 3), 0.5), ones_like(x)));
  return {mul(G(g), d)};
}
// 1 / 6 strictly inside (-3, 3), else 0.
Grads hardsigmoid_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0);
  return {mul(mul(G(g), logical_and(gt(x, -3), lt(x, 3))), 1.0 / 6)};
}
// 1 where x > 0, negative_slope at and below 0.
Grads leaky_relu_bw(const BackwardContext& c, const Grads& g) {
  const double slope = c.attrs().get<attrs::LeakyRelu>().negative_slope;
  return {where(gt(c.input(0), 0), G(g), mul(G(g), slope))};
}
// scale where x > 0; at and below 0, scale alpha input_scale exp(input_scale x).
Tensor elu_grad(const Tensor& x, const Tensor& g, double alpha, double scale, double input_scale) {
  return where(gt(x, 0), mul(g, scale), mul(g, mul(exp(mul(x, input_scale)), alpha * scale * input_scale)));
}
Grads elu_bw(const BackwardContext& c, const Grads& g) {
  const auto& a = c.attrs().get<attrs::Elu>();
  return {elu_grad(c.input(0), G(g), a.alpha, a.scale, a.input_scale)};
}
Grads selu_bw(const BackwardContext& c, const Grads& g) {
  return {elu_grad(c.input(0), G(g), ew::kSeluAlpha, ew::kSeluScale, 1.0)};
}
// tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2), sp = softplus(x).
Grads mish_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0), t = tanh(log1p(exp(x)));
  return {mul(G(g), add(t, mul(mul(x, sigmoid(x)), sub(1, mul(t, t)))))};
}
Grads clamp_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0);
  Tensor keep = ones_like(x, {.dtype = kBool});
  const auto& a = c.attrs().get<attrs::Clamp>();
  if (a.min.has_value()) keep = logical_and(keep, ge(x, a.min));
  if (a.max.has_value()) keep = logical_and(keep, le(x, a.max));
  return {mul(G(g), keep)};
}

// ---- binary ----
Grads add_bw(const BackwardContext& c, const Grads& g) {
  const Scalar alpha = c.attrs().get<attrs::Alpha>().alpha;
  return {sum_to(G(g), c.input_meta(0).sizes), sum_to(mul(G(g), alpha), c.input_meta(1).sizes)};
}
Grads sub_bw(const BackwardContext& c, const Grads& g) {
  const double alpha = c.attrs().get<attrs::Alpha>().alpha.to_double();
  return {sum_to(G(g), c.input_meta(0).sizes), sum_to(mul(G(g), -alpha), c.input_meta(1).sizes)};
}
Grads mul_bw(const BackwardContext& c, const Grads& g) {
  Grads out(2);
  if (c.needs_grad(0)) out[0] = sum_to(mul(G(g), c.input(1)), c.input_meta(0).sizes);
  if (c.needs_grad(1)) out[1] = sum_to(mul(G(g), c.input(0)), c.input_meta(1).sizes);
  return out;
}
Grads div_bw(const BackwardContext& c, const Grads& g) {
  if (c.attrs().get<attrs::Div>().rounding_mode != Rounding::True)  // piecewise constant
    return {zeros(c.input_meta(0).sizes, {.dtype = G(g).dtype(), .device = G(g).device()}), Tensor()};
  const Tensor a = c.input(0), b = c.input(1);
  Grads out(2);
  if (c.needs_grad(0)) out[0] = sum_to(div(G(g), b), c.input_meta(0).sizes);
  if (c.needs_grad(1)) out[1] = sum_to(neg(div(mul(G(g), a), mul(b, b))), c.input_meta(1).sizes);
  return out;
}
Grads pow_bw(const BackwardContext& c, const Grads& g) {
  const Tensor a = c.input(0), b = c.input(1);
  Grads out(2);
  if (c.needs_grad(0)) {
    // b * a^(b-1), with 0 where b == 0 (the derivative of a^0).
    const Tensor d = where(eq(b, 0), Scalar(0.0), mul(b, pow(a, sub(b, 1))));
    out[0] = sum_to(mul(G(g), d), c.input_meta(0).sizes);
  }
  if (c.needs_grad(1)) {
    const Tensor y = c.output(0);
    const Tensor d = where(logical_and(eq(a, 0), ge(b, 0)), Scalar(0.0), mul(y, log(a)));
    out[1] = sum_to(mul(G(g), d), c.input_meta(1).sizes);
  }
  return out;
}
Grads atan2_bw(const BackwardContext& c, const Grads& g) {
  const Tensor a = c.input(0), b = c.input(1);
  const Tensor denom = add(mul(a, a), mul(b, b));
  return {sum_to(div(mul(G(g), b), denom), c.input_meta(0).sizes),
          sum_to(neg(div(mul(G(g), a), denom)), c.input_meta(1).sizes)};
}
// maximum/minimum: the gradient goes to the chosen input; ties split it evenly.
Grads minmax_bw(const BackwardContext& c, const Grads& g, bool is_max) {
  const Tensor a = c.input(0), b = c.input(1);
  const Tensor a_wins = is_max ? gt(a, b) : lt(a, b), tie = eq(a, b);
  const Tensor wa = add(a_wins.to(G(g).dtype()), mul(tie, 0.5));
  return {sum_to(mul(G(g), wa), c.input_meta(0).sizes), sum_to(mul(G(g), sub(1, wa)), c.input_meta(1).sizes)};
}
Grads maximum_bw(const BackwardContext& c, const Grads& g) { return minmax_bw(c, g, true); }
Grads minimum_bw(const BackwardContext& c, const Grads& g) { return minmax_bw(c, g, false); }

// ---- ternary ----
Grads addcmul_bw(const BackwardContext& c, const Grads& g) {
  const Scalar v = c.attrs().get<attrs::Pointwise>().value;
  return {sum_to(G(g), c.input_meta(0).sizes), sum_to(mul(mul(G(g), c.input(2)), v), c.input_meta(1).sizes),
          sum_to(mul(mul(G(g), c.input(1)), v), c.input_meta(2).sizes)};
}
Grads addcdiv_bw(const BackwardContext& c, const Grads& g) {
  const Scalar v = c.attrs().get<attrs::Pointwise>().value;
  const Tensor t1 = c.input(1), t2 = c.input(2);
  return {sum_to(G(g), c.input_meta(0).sizes), sum_to(mul(div(G(g), t2), v), c.input_meta(1).sizes),
          sum_to(neg(mul(div(mul(G(g), t1), mul(t2, t2)), v)), c.input_meta(2).sizes)};
}
Grads lerp_bw(const BackwardContext& c, const Grads& g) {
  const Tensor self = c.input(0), end = c.input(1), w = c.input(2);
  return {sum_to(mul(G(g), sub(1, w)), c.input_meta(0).sizes), sum_to(mul(G(g), w), c.input_meta(1).sizes),
          sum_to(mul(G(g), sub(end, self)), c.input_meta(2).sizes)};
}

void both(OpId op, OpId op_, Derivative d) {
  define_derivative(op, d);
  define_derivative(op_, d);
}

}  // namespace

void register_elementwise_derivatives() {
  both(OpId::neg, OpId::neg_, {neg_bw});
  both(OpId::abs, OpId::abs_, {abs_bw, in0});
  both(OpId::sign, OpId::sign_, {zero_bw});
  both(OpId::exp, OpId::exp_, {exp_bw, 0, out0});
  both(OpId::expm1, OpId::expm1_, {expm1_bw, 0, out0});
  both(OpId::log, OpId::log_, {log_bw, in0});
  both(OpId::log1p, OpId::log1p_, {log1p_bw, in0});
  both(OpId::log2, OpId::log2_, {log2_bw, in0});
  both(OpId::log10, OpId::log10_, {log10_bw, in0});
  both(OpId::sqrt, OpId::sqrt_, {sqrt_bw, 0, out0});
  both(OpId::rsqrt, OpId::rsqrt_, {rsqrt_bw, 0, out0});
  both(OpId::reciprocal, OpId::reciprocal_, {reciprocal_bw, 0, out0});
  both(OpId::sin, OpId::sin_, {sin_bw, in0});
  both(OpId::cos, OpId::cos_, {cos_bw, in0});
  both(OpId::tan, OpId::tan_, {tan_bw, 0, out0});
  both(OpId::tanh, OpId::tanh_, {tanh_bw, 0, out0});
  both(OpId::sigmoid, OpId::sigmoid_, {sigmoid_bw, 0, out0});
  both(OpId::relu, OpId::relu_, {relu_bw, 0, out0});
  both(OpId::gelu, OpId::gelu_, {gelu_bw, in0});
  both(OpId::silu, OpId::silu_, {silu_bw, in0});
  both(OpId::softplus, OpId::softplus_, {softplus_bw, in0});
  both(OpId::erf, OpId::erf_, {erf_bw, in0});
  both(OpId::erfinv, OpId::erfinv_, {erfinv_bw, 0, out0});
  both(OpId::floor, OpId::floor_, {zero_bw});
  both(OpId::ceil, OpId::ceil_, {zero_bw});
  both(OpId::round, OpId::round_, {zero_bw});
  both(OpId::clamp, OpId::clamp_, {clamp_bw, in0});
  both(OpId::acos, OpId::acos_, {acos_bw, in0});
  both(OpId::asin, OpId::asin_, {asin_bw, in0});
  both(OpId::sinh, OpId::sinh_, {sinh_bw, in0});
  both(OpId::cosh, OpId::cosh_, {cosh_bw, in0});
  both(OpId::asinh, OpId::asinh_, {asinh_bw, in0});
  both(OpId::acosh, OpId::acosh_, {acosh_bw, in0});
  both(OpId::atanh, OpId::atanh_, {atanh_bw, in0});
  both(OpId::trunc, OpId::trunc_, {zero_bw});
  both(OpId::frac, OpId::frac_, {identity_bw});
  both(OpId::logit, OpId::logit_, {logit_bw, in0});
  both(OpId::hardtanh, OpId::hardtanh_, {hardtanh_bw, in0});
  both(OpId::hardswish, OpId::hardswish_, {hardswish_bw, in0});
  both(OpId::hardsigmoid, OpId::hardsigmoid_, {hardsigmoid_bw, in0});
  both(OpId::leaky_relu, OpId::leaky_relu_, {leaky_relu_bw, in0});
  both(OpId::elu, OpId::elu_, {elu_bw, in0});
  both(OpId::selu, OpId::selu_, {selu_bw, in0});
  both(OpId::mish, OpId::mish_, {mish_bw, in0});
  both(OpId::add, OpId::add_, {add_bw});
  both(OpId::sub, OpId::sub_, {sub_bw});
  both(OpId::mul, OpId::mul_, {mul_bw, in0 | in1});
  both(OpId::div, OpId::div_, {div_bw, in0 | in1});
  both(OpId::pow, OpId::pow_, {pow_bw, in0 | in1, out0});
  both(OpId::atan2, OpId::atan2_, {atan2_bw, in0 | in1});
  define_derivative(OpId::maximum, {maximum_bw, in0 | in1});
  define_derivative(OpId::minimum, {minimum_bw, in0 | in1});
  both(OpId::addcmul, OpId::addcmul_, {addcmul_bw, in1 | in2});
  both(OpId::addcdiv, OpId::addcdiv_, {addcdiv_bw, in1 | in2});
  both(OpId::lerp, OpId::lerp_, {lerp_bw, in0 | in1 | in2});
}

}  // namespace mixt::autograd
