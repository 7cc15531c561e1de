// Binary arithmetic kernels on the CPU (add, sub, mul, div, pow, atan2, maximum,
// minimum and their in-place forms): broadcasting, type promotion, and wrapped
// scalars applied in opmath precision.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/functors.h>
#include <mixt/kernels/cpu/elementwise_loops.h>
#include <mixt/kernels/cpu/register.h>

namespace mixt::cpu {
namespace {

namespace f = functors;
using dtypes::kAll;
using dtypes::kFloating;
using dtypes::kNumeric;

constexpr ElementwiseOptions binary_options(ResultRule rule, uint32_t allowed) { return {rule, allowed, true}; }

// Runs make(TypeTag<T>)'s functor over e (output of the compute dtype) and finishes the call.
template <uint32_t Set, class Make>
void run(OpCall& c, Elementwise& e, const Make& make) {
  visit_dtype<Set>(e.compute, op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_binary<T, T>(e, make(tag));
  });
  finish_elementwise(c, e);
}

// Kernel of a binary op whose functor F takes no attributes.
template <template <class> class F, ResultRule Rule, uint32_t Set>
void simple_kernel(OpCall& c, DispatchKeySet) {
  Elementwise e = prepare_elementwise(c, 2, binary_options(Rule, Set));
  run<Set>(c, e, [](auto tag) { return F<opmath_t<typename decltype(tag)::type>>{}; });
}

// PyTorch's rules for alpha: no floating alpha with integer results, bool alpha only for bool results.
void check_alpha(const OpCall& c, const Scalar& alpha, ScalarType compute) {
  MIXT_CHECK_OP(!(alpha.is_floating() && !is_floating(compute)), c,
                "alpha must not be a floating point number for {} inputs (got {})", compute, alpha);
  MIXT_CHECK_OP(!(alpha.is_bool() && compute != kBool), c, "a bool alpha is only supported for bool results");
}

void add_kernel(OpCall& c, DispatchKeySet) {
  const Scalar alpha = c.attrs.get<attrs::Alpha>().alpha;
  Elementwise e = prepare_elementwise(c, 2, binary_options(ResultRule::Promote, kAll));
  check_alpha(c, alpha, e.compute);
  run<kAll>(c, e, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return f::Add<opmath_t<T>>{scalar_value<T>(alpha)};
  });
}

void sub_kernel(OpCall& c, DispatchKeySet) {
  MIXT_CHECK_OP(c.in[0].dtype() != kBool && c.in[1].dtype() != kBool, c,
                "subtraction with a bool tensor is not supported: use logical_xor() or logical_not() instead");
  const Scalar alpha = c.attrs.get<attrs::Alpha>().alpha;
  Elementwise e = prepare_elementwise(c, 2, binary_options(ResultRule::Promote, kNumeric));
  check_alpha(c, alpha, e.compute);
  run<kNumeric>(c, e, [&](auto tag) {
    using T = typename decltype(tag)::type;
    return f::Sub<opmath_t<T>>{scalar_value<T>(alpha)};
  });
}

// True when the second operand (tensor or scalar) of e has an element satisfying pred.
template <class T, class P>
bool rhs_has(const Elementwise& e, const P& pred) {
  if (e.out.numel() == 0) return false;
  if (e.is_scalar[1]) return pred(scalar_value<T>(e.scalars[1]));
  return any_element<T>(e.inputs[1], pred);
}

// div: true division, or integer-valued with trunc / floor rounding.
void div_kernel(OpCall& c, DispatchKeySet) {
  const Rounding mode = c.attrs.get<attrs::Div>().rounding_mode;
  MIXT_CHECK_OP(mode == Rounding::True || mode == Rounding::Trunc || mode == Rounding::Floor, c,
                "unknown rounding mode {}", static_cast<int>(mode));
  if (mode == Rounding::True) {
    Elementwise e = prepare_elementwise(c, 2, binary_options(ResultRule::PromoteToFloat, kFloating));
    run<kFloating>(c, e, [](auto tag) { return f::Div<opmath_t<typename decltype(tag)::type>>{}; });
    return;
  }
  Elementwise e = prepare_elementwise(c, 2, binary_options(ResultRule::Promote, kNumeric));
  visit_dtype<kNumeric>(e.compute, "div", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    if constexpr (std::is_integral_v<M>) {
      if (e.is_scalar[0] && e.is_scalar[1]) materialize_scalar(e, 0);
      MIXT_CHECK_OP(!rhs_has<T>(e, [](M v) { return v == 0; }), c, "integer division by zero");
    }
    if (mode == Rounding::Trunc)
      run_binary<T, T>(e, f::DivTrunc<M>{});
    else
      run_binary<T, T>(e, f::DivFloor<M>{});
  });
  finish_elementwise(c, e);
}

void pow_kernel(OpCall& c, DispatchKeySet) {
  Elementwise e = prepare_elementwise(c, 2, binary_options(ResultRule::Promote, kNumeric));
  visit_dtype<kNumeric>(e.compute, "pow", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    if constexpr (std::is_integral_v<M> && std::is_signed_v<M>) {
      if (e.is_scalar[0] && e.is_scalar[1]) materialize_scalar(e, 0);
      MIXT_CHECK_OP(!rhs_has<T>(e, [](M v) { return v < 0; }), c,
                    "integers to negative integer powers are not allowed");
    }
    run_binary<T, T>(e, f::Pow<M>{});
  });
  finish_elementwise(c, e);
}

// Registers `fn` for op `id` and its in-place form.
void register_both(OpId id, OpId inplace, KernelFn fn) {
  register_kernel(id, DispatchKey::CPU, fn);
  register_kernel(inplace, DispatchKey::CPU, fn);
}

}  // namespace

void register_binary_kernels() {
  register_both(OpId::add, OpId::add_, add_kernel);
  register_both(OpId::sub, OpId::sub_, sub_kernel);
  register_both(OpId::mul, OpId::mul_, simple_kernel<f::Mul, ResultRule::Promote, kAll>);
  register_both(OpId::div, OpId::div_, div_kernel);
  register_both(OpId::pow, OpId::pow_, pow_kernel);
  register_both(OpId::atan2, OpId::atan2_, simple_kernel<f::Atan2, ResultRule::PromoteToFloat, kFloating>);
  register_kernel(OpId::maximum, DispatchKey::CPU, simple_kernel<f::Maximum, ResultRule::Promote, kAll>);
  register_kernel(OpId::minimum, DispatchKey::CPU, simple_kernel<f::Minimum, ResultRule::Promote, kAll>);
}

}  // namespace mixt::cpu
