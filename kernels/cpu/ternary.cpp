// Ternary elementwise kernels on the CPU: addcmul, addcdiv, lerp (and their
// in-place forms) and where, with broadcasting of all operands.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/common/functors.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/cpu/elementwise_loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cpu {
namespace {

namespace f = functors;
using dtypes::kFloating;
using dtypes::kNumeric;

// Runs functor `op` over e's three operands (scalar operands are made 0-dim tensors).
template <class T, class Op>
void run_ternary(Elementwise& e, const Op& op) {
  for (int i = 0; i < 3; ++i)
    if (e.is_scalar[i]) materialize_scalar(e, i);
  Map<T, T, T, T>::apply(e.out, op, e.inputs[0], e.inputs[1], e.inputs[2]);
}

// addcmul (Div = false) and addcdiv (Div = true): in0 + value * in1 (* or /) in2.
template <bool Div>
void addc_kernel(OpCall& c, DispatchKeySet) {
  const Scalar value = c.attrs.get<attrs::Pointwise>().value;
  constexpr uint32_t kSet = Div ? kFloating : kNumeric;
  Elementwise e = prepare_elementwise(c, 3, {ResultRule::Promote, kNumeric, false});
  MIXT_CHECK_OP(!Div || is_floating(e.compute), c,
                "integer division with addcdiv is not supported: use true division (floating inputs)");
  MIXT_CHECK_OP(is_floating(e.compute) || !value.is_floating(), c,
                "value must not be a floating point number for {} inputs (got {})", e.compute, value);
  visit_dtype<kSet>(e.compute, op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const M v = scalar_value<T>(value);
    if constexpr (Div)
      run_ternary<T>(e, f::Addcdiv<M>{v});
    else
      run_ternary<T>(e, f::Addcmul<M>{v});
  });
  finish_elementwise(c, e);
}

// lerp: in0 + in2 * (in1 - in0); a wrapped-scalar weight is applied in opmath precision.
void lerp_kernel(OpCall& c, DispatchKeySet) {
  for (int i = 0; i < 2; ++i)
    MIXT_CHECK_OP(!c.in[i].defined() || is_floating(c.in[i].dtype()), c,
                  "lerp expects floating start and end tensors, got {}", c.in[i].dtype());
  Elementwise e = prepare_elementwise(c, 3, {ResultRule::Promote, kFloating, true});
  visit_dtype<kFloating>(e.compute, op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using M = opmath_t<T>;
    const f::Lerp<M> op;
    for (int i = 0; i < 2; ++i)
      if (e.is_scalar[i]) materialize_scalar(e, i);
    if (e.is_scalar[2]) {
      const M w = scalar_value<T>(e.scalars[2]);
      Map<T, T, T>::apply(
          e.out, [op, w](M a, M b) { return op(a, b, w); }, e.inputs[0], e.inputs[1]);
    } else {
      Map<T, T, T, T>::apply(e.out, op, e.inputs[0], e.inputs[1], e.inputs[2]);
    }
  });
  finish_elementwise(c, e);
}

// where(condition, a, b): condition must be bool; a and b promote to a common dtype;
// all three broadcast together.
void where_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& cond = c.in[0];
  const auto [shape, dtype] = where_result(c);
  for (int i = 0; i < 3; ++i)
    MIXT_CHECK_OP(c.in[i].is_cpu(), c, "expected CPU tensors, but input {} is on {}", i, c.in[i].device());
  const Tensor a = host::converted(c.in[1], dtype, c), b = host::converted(c.in[2], dtype, c);
  Tensor out = make_empty(shape, dtype, Device::cpu());
  visit_dtype(dtype, "where", [&](auto tag) {
    using T = typename decltype(tag)::type;
    Map<T, bool, T, T>::apply(out, f::Where<opmath_t<T>>{}, cond, a, b);
  });
  if (c.out[0].defined()) {  // an out= call: the result is copied (and cast) into it
    MIXT_CHECK_OP(c.out[0].sizes() == shape, c, "the output has shape {} but the broadcast shape is {}",
                  c.out[0].sizes(), shape);
    MIXT_CHECK_OP(can_cast(dtype, c.out[0].dtype()), c, "result type {} can't be cast to the output's dtype {}", dtype,
                  c.out[0].dtype());
    host::copy_into(c.out[0], out, c);
  } else {
    c.out[0] = out;
  }
}

// Registers `fn` for op `id` and its in-place form.
void register_both(OpId id, OpId inplace, KernelFn fn) {
  register_kernel(id, DispatchKey::CPU, fn);
  register_kernel(inplace, DispatchKey::CPU, fn);
}

}  // namespace

void register_ternary_kernels() {
  register_both(OpId::addcmul, OpId::addcmul_, addc_kernel<false>);
  register_both(OpId::addcdiv, OpId::addcdiv_, addc_kernel<true>);
  register_both(OpId::lerp, OpId::lerp_, lerp_kernel);
  register_kernel(OpId::where, DispatchKey::CPU, where_kernel);
}

}  // namespace mixt::cpu
