// Unary elementwise kernels on the CPU: math functions (and their in-place forms),
// rounding, clamp, and the bool-valued predicates.
#include <cmath>
#include <limits>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/functors.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/cpu/elementwise_loops.h>
#include <mixt/kernels/cpu/register.h>

namespace mixt::cpu {
namespace {

namespace f = functors;
using dtypes::kAll;
using dtypes::kFloating;
using dtypes::kNumeric;

// Runs the functor make(TypeTag<T>) returns over e's single input and finishes the call.
template <uint32_t Set, bool BoolOut = false, class Make>
void run_unary(OpCall& c, Elementwise& e, const Make& make) {
  visit_dtype<Set>(e.compute, op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Out = std::conditional_t<BoolOut, bool, T>;
    Map<Out, T>::apply(e.out, make(tag), e.inputs[0]);
  });
  finish_elementwise(c, e);
}

// Kernel of a unary op whose functor F takes no attributes.
template <template <class> class F, ResultRule Rule, uint32_t Set>
void simple_kernel(OpCall& c, DispatchKeySet) {
  Elementwise e = prepare_elementwise(c, 1, {Rule, Set, false});
  run_unary<Set, Rule == ResultRule::Predicate>(c, e,
                                                [](auto tag) { return F<opmath_t<typename decltype(tag)::type>>{}; });
}

void neg_kernel(OpCall& c, DispatchKeySet ks) {
  MIXT_CHECK_OP(c.in[0].dtype() != kBool, c,
                "negation of a bool tensor is not supported: use logical_not() to invert a mask");
  simple_kernel<f::Neg, ResultRule::Promote, kNumeric>(c, ks);
}

void gelu_kernel(OpCall& c, DispatchKeySet ks) {
  if (c.attrs.get<attrs::Gelu>().approximate == GeluApprox::Tanh)
    simple_kernel<f::GeluTanh, ResultRule::PromoteToFloat, kFloating>(c, ks);
  else
    simple_kernel<f::GeluErf, ResultRule::PromoteToFloat, kFloating>(c, ks);
}

void softplus_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::Softplus>();
  const double beta = a.beta, threshold = a.threshold;
  Elementwise e = prepare_elementwise(c, 1, {ResultRule::PromoteToFloat, kFloating, false});
  run_unary<kFloating>(c, e, [&](auto tag) {
    using M = opmath_t<typename decltype(tag)::type>;
    return f::Softplus<M>{static_cast<M>(beta), static_cast<M>(threshold)};
  });
}

void round_kernel(OpCall& c, DispatchKeySet) {
  const int64_t decimals = c.attrs.get<attrs::Round>().decimals;
  check_round_decimals(c, c.in[0].dtype(), decimals);
  Elementwise e = prepare_elementwise(c, 1, {ResultRule::Promote, kNumeric, false});
  run_unary<kNumeric>(c, e, [&](auto tag) {
    using M = opmath_t<typename decltype(tag)::type>;
    const int mode = decimals > 0 ? 1 : decimals < 0 ? -1 : 0;
    const double scale = std::pow(10.0, static_cast<double>(decimals < 0 ? -decimals : decimals));
    return f::Round<M>{static_cast<M>(scale), mode};
  });
}

// A bound of clamp as T's opmath value: integer bounds saturate to T's range.
template <class T>
opmath_t<T> clamp_bound(const Scalar& s) {
  using M = opmath_t<T>;
  if constexpr (std::is_integral_v<M>) {
    const int64_t v = s.to_int();
    const int64_t lo = std::numeric_limits<M>::min(), hi = std::numeric_limits<M>::max();
    return static_cast<M>(v < lo ? lo : v > hi ? hi : v);
  } else {
    return scalar_value<T>(s);
  }
}

void clamp_kernel(OpCall& c, DispatchKeySet) {
  const Scalar lo = c.attrs.get<attrs::Clamp>().min, hi = c.attrs.get<attrs::Clamp>().max;
  MIXT_CHECK_OP(lo.has_value() || hi.has_value(), c, "at least one of min and max must be given");
  MIXT_CHECK_OP(c.in[0].dtype() != kBool, c, "clamp is not supported for bool tensors");
  // A floating bound promotes an integer tensor to float32 (as a wrapped Python scalar would).
  const bool float_bound = lo.is_floating() || hi.is_floating();
  const ResultRule rule = float_bound ? ResultRule::PromoteToFloat : ResultRule::Promote;
  Elementwise e = prepare_elementwise(c, 1, {rule, kNumeric, false});
  run_unary<kNumeric>(c, e, [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    return f::Clamp<M>{lo.has_value() ? clamp_bound<T>(lo) : M(0), hi.has_value() ? clamp_bound<T>(hi) : M(0),
                       lo.has_value(), hi.has_value()};
  });
}

// Registers `fn` for op `id` and its in-place form.
void register_both(OpId id, OpId inplace, KernelFn fn) {
  register_kernel(id, DispatchKey::CPU, fn);
  register_kernel(inplace, DispatchKey::CPU, fn);
}

}  // namespace

void register_unary_kernels() {
  constexpr auto P = ResultRule::Promote, F = ResultRule::PromoteToFloat;
#define MIXT_REG(name, kernel) register_both(OpId::name, OpId::name##_, kernel)
  MIXT_REG(neg, neg_kernel);
  MIXT_REG(abs, (simple_kernel<f::Abs, P, kNumeric>));
  MIXT_REG(sign, (simple_kernel<f::Sign, P, kAll>));
  MIXT_REG(exp, (simple_kernel<f::Exp, F, kFloating>));
  MIXT_REG(expm1, (simple_kernel<f::Expm1, F, kFloating>));
  MIXT_REG(log, (simple_kernel<f::Log, F, kFloating>));
  MIXT_REG(log1p, (simple_kernel<f::Log1p, F, kFloating>));
  MIXT_REG(log2, (simple_kernel<f::Log2, F, kFloating>));
  MIXT_REG(log10, (simple_kernel<f::Log10, F, kFloating>));
  MIXT_REG(sqrt, (simple_kernel<f::Sqrt, F, kFloating>));
  MIXT_REG(rsqrt, (simple_kernel<f::Rsqrt, F, kFloating>));
  MIXT_REG(reciprocal, (simple_kernel<f::Reciprocal, F, kFloating>));
  MIXT_REG(sin, (simple_kernel<f::Sin, F, kFloating>));
  MIXT_REG(cos, (simple_kernel<f::Cos, F, kFloating>));
  MIXT_REG(tan, (simple_kernel<f::Tan, F, kFloating>));
  MIXT_REG(tanh, (simple_kernel<f::Tanh, F, kFloating>));
  MIXT_REG(sigmoid, (simple_kernel<f::Sigmoid, F, kFloating>));
  MIXT_REG(relu, (simple_kernel<f::Relu, P, kNumeric>));
  MIXT_REG(gelu, gelu_kernel);
  MIXT_REG(silu, (simple_kernel<f::Silu, F, kFloating>));
  MIXT_REG(softplus, softplus_kernel);
  MIXT_REG(erf, (simple_kernel<f::Erf, F, kFloating>));
  MIXT_REG(erfinv, (simple_kernel<f::Erfinv, F, kFloating>));
  MIXT_REG(floor, (simple_kernel<f::Floor, P, kNumeric>));
  MIXT_REG(ceil, (simple_kernel<f::Ceil, P, kNumeric>));
  MIXT_REG(round, round_kernel);
  MIXT_REG(clamp, clamp_kernel);
#undef MIXT_REG
  constexpr auto Q = ResultRule::Predicate;
  register_kernel(OpId::isfinite, DispatchKey::CPU, simple_kernel<f::IsFinite, Q, kAll>);
  register_kernel(OpId::isnan, DispatchKey::CPU, simple_kernel<f::IsNan, Q, kAll>);
  register_kernel(OpId::isinf, DispatchKey::CPU, simple_kernel<f::IsInf, Q, kAll>);
  register_kernel(OpId::logical_not, DispatchKey::CPU, simple_kernel<f::LogicalNot, Q, kAll>);
}

}  // namespace mixt::cpu
