// Host side of the elementwise op lists (elementwise_ops.h), shared by the CPU and
// CUDA kernels: the checks an op makes beyond plan_elementwise, its prepare options,
// and its attributes as OpParams. Host code only (OpCall, fmt).
#pragma once

#include <cmath>

#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/common/elementwise.h>
#include <mixt/kernels/common/elementwise_ops.h>
#include <mixt/kernels/common/op_checks.h>

namespace mixt {

// `s` as plain data (an unset Scalar gives present = false).
inline ScalarArg scalar_arg(const Scalar& s) {
  ScalarArg a;
  a.present = s.has_value();
  a.is_float = s.is_floating();
  if (a.is_float)
    a.f = s.to_double();
  else if (a.present)
    a.i = s.to_int();
  return a;
}

// The ResultRule of a list rule (Where plans as Promote of its value operands).
constexpr ResultRule result_rule(EwRule r) {
  switch (r) {
    case EwRule::PromoteToFloat: return ResultRule::PromoteToFloat;
    case EwRule::Compare: return ResultRule::Compare;
    case EwRule::Logical: return ResultRule::Logical;
    case EwRule::Predicate: return ResultRule::Predicate;
    default: return ResultRule::Promote;
  }
}

// The op of `c` without its in-place underscore (add_ -> add): attributes are shared.
inline bool is_op(const OpCall& c, OpId plain, OpId inplace) { return c.op == plain || c.op == inplace; }

// Checks of `c`'s inputs and attributes made before planning (in the CPU's order).
inline void check_elementwise_call(const OpCall& c) {
  if (is_op(c, OpId::neg, OpId::neg_)) {
    MIXT_CHECK_OP(c.in[0].dtype() != kBool, c,
                  "negation of a bool tensor is not supported: use logical_not() to invert a mask");
  } else if (is_op(c, OpId::round, OpId::round_)) {
    check_round_decimals(c, c.in[0].dtype(), c.attrs.get<attrs::Round>().decimals);
  } else if (is_op(c, OpId::clamp, OpId::clamp_)) {
    const auto& a = c.attrs.get<attrs::Clamp>();
    MIXT_CHECK_OP(a.min.has_value() || a.max.has_value(), c, "at least one of min and max must be given");
    MIXT_CHECK_OP(c.in[0].dtype() != kBool, c, "clamp is not supported for bool tensors");
  } else if (is_op(c, OpId::hardtanh, OpId::hardtanh_)) {
    check_hardtanh_bounds(c);
  } else if (is_op(c, OpId::sub, OpId::sub_)) {
    MIXT_CHECK_OP(c.in[0].dtype() != kBool && c.in[1].dtype() != kBool, c,
                  "subtraction with a bool tensor is not supported: use logical_xor() or logical_not() instead");
  } else if (is_op(c, OpId::div, OpId::div_)) {
    const Rounding mode = c.attrs.get<attrs::Div>().rounding_mode;
    MIXT_CHECK_OP(mode == Rounding::True || mode == Rounding::Trunc || mode == Rounding::Floor, c,
                  "unknown rounding mode {}", static_cast<int>(mode));
  } else if (is_op(c, OpId::lerp, OpId::lerp_)) {
    for (int i = 0; i < 2; ++i)
      MIXT_CHECK_OP(!c.in[i].defined() || is_floating(c.in[i].dtype()), c,
                    "lerp expects floating start and end tensors, got {}", c.in[i].dtype());
  }
}

// prepare_elementwise's options for `c`, a row of `n` inputs with list rule `rule` and dtypes `set`.
inline ElementwiseOptions elementwise_options(const OpCall& c, int n, EwRule rule, uint32_t set) {
  ElementwiseOptions o{result_rule(rule), set, n == 2 && rule != EwRule::Logical};
  if (is_op(c, OpId::clamp, OpId::clamp_)) {
    // A floating bound promotes an integer tensor to float32 (as a wrapped Python scalar would).
    const auto& a = c.attrs.get<attrs::Clamp>();
    if (a.min.is_floating() || a.max.is_floating()) o.rule = ResultRule::PromoteToFloat;
  } else if (is_op(c, OpId::div, OpId::div_)) {
    if (c.attrs.get<attrs::Div>().rounding_mode == Rounding::True) {
      o.rule = ResultRule::PromoteToFloat;
      o.allowed = dtypes::kFloating;
    }
  } else if (is_op(c, OpId::addcdiv, OpId::addcdiv_)) {
    o.allowed = dtypes::kNumeric;  // integer inputs get addcdiv's own message
  } else if (is_op(c, OpId::lerp, OpId::lerp_)) {
    o.keep_scalars = true;  // a wrapped-scalar weight is applied in opmath precision
  }
  return o;
}

// PyTorch's rules for alpha: no floating alpha with integer results, bool alpha only for bool results.
inline void check_alpha(const OpCall& c, const Scalar& alpha, ScalarType compute) {
  MIXT_CHECK_OP(!(alpha.is_floating() && !is_floating(compute)), c,
                "alpha must not be a floating point number for {} inputs (got {})", compute, alpha);
  MIXT_CHECK_OP(!(alpha.is_bool() && compute != kBool), c, "a bool alpha is only supported for bool results");
}

// The attributes of `c` as OpParams, after the checks that need the compute dtype.
inline OpParams elementwise_params(const OpCall& c, ScalarType compute) {
  OpParams p;
  if (is_op(c, OpId::add, OpId::add_) || is_op(c, OpId::sub, OpId::sub_)) {
    const Scalar alpha = c.attrs.get<attrs::Alpha>().alpha;
    check_alpha(c, alpha, compute);
    p.s[0] = scalar_arg(alpha);
  } else if (is_op(c, OpId::addcmul, OpId::addcmul_) || is_op(c, OpId::addcdiv, OpId::addcdiv_)) {
    const Scalar value = c.attrs.get<attrs::Pointwise>().value;
    MIXT_CHECK_OP(is_op(c, OpId::addcmul, OpId::addcmul_) || is_floating(compute), c,
                  "integer division with addcdiv is not supported: use true division (floating inputs)");
    MIXT_CHECK_OP(is_floating(compute) || !value.is_floating(), c,
                  "value must not be a floating point number for {} inputs (got {})", compute, value);
    p.s[0] = scalar_arg(value);
  } else if (is_op(c, OpId::div, OpId::div_)) {
    p.mode = static_cast<int>(c.attrs.get<attrs::Div>().rounding_mode);
  } else if (is_op(c, OpId::gelu, OpId::gelu_)) {
    p.mode = c.attrs.get<attrs::Gelu>().approximate == GeluApprox::Tanh ? 1 : 0;
  } else if (is_op(c, OpId::softplus, OpId::softplus_)) {
    const auto& a = c.attrs.get<attrs::Softplus>();
    p.beta = a.beta;
    p.threshold = a.threshold;
  } else if (is_op(c, OpId::round, OpId::round_)) {
    const int64_t decimals = c.attrs.get<attrs::Round>().decimals;
    p.mode = decimals > 0 ? 1 : decimals < 0 ? -1 : 0;
    p.scale = std::pow(10.0, static_cast<double>(decimals < 0 ? -decimals : decimals));
  } else if (is_op(c, OpId::clamp, OpId::clamp_)) {
    const auto& a = c.attrs.get<attrs::Clamp>();
    p.s[0] = scalar_arg(a.min);
    p.s[1] = scalar_arg(a.max);
  } else if (is_op(c, OpId::hardtanh, OpId::hardtanh_)) {
    // clamp's functor; integer tensors take the bounds truncated to integers, as PyTorch does
    // (saturating at int64's range, NaN -> 0: Note [Conversions]; a plain cast of ±inf is UB).
    const auto& a = c.attrs.get<attrs::Hardtanh>();
    const bool integral = !is_floating(compute);
    p.s[0] = scalar_arg(integral ? Scalar(saturate_to_int64(a.min_val)) : Scalar(a.min_val));
    p.s[1] = scalar_arg(integral ? Scalar(saturate_to_int64(a.max_val)) : Scalar(a.max_val));
  } else if (is_op(c, OpId::leaky_relu, OpId::leaky_relu_)) {
    p.alpha = c.attrs.get<attrs::LeakyRelu>().negative_slope;
  } else if (is_op(c, OpId::elu, OpId::elu_)) {
    const auto& a = c.attrs.get<attrs::Elu>();
    p.alpha = a.alpha;
    p.elu_scale = a.scale;
    p.input_scale = a.input_scale;
  } else if (is_op(c, OpId::logit, OpId::logit_)) {
    const std::optional<double> eps = c.attrs.get<attrs::Logit>().eps;
    p.eps = eps && *eps >= 0.0 ? *eps : -1.0;
  }
  return p;
}

// Registers `fn` for op `plain` and, when `inplace` is set, its in-place form (the next OpId).
inline void register_elementwise(OpId plain, bool inplace, DispatchKey key, KernelFn fn) {
  register_kernel(plain, key, fn);
  if (inplace) register_kernel(static_cast<OpId>(static_cast<int>(plain) + 1), key, fn);
}

}  // namespace mixt
