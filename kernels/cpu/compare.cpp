// Comparison (eq, ne, lt, le, gt, ge) and logical (and, or, xor) kernels on the
// CPU: broadcasting, promotion to a common dtype, bool results.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/kernels/common/functors.h>
#include <mixt/kernels/cpu/elementwise_loops.h>
#include <mixt/kernels/cpu/register.h>

namespace mixt::cpu {
namespace {

namespace f = functors;

// Comparison F in the promoted dtype. A wrapped scalar is first rounded to that dtype,
// as PyTorch casts it (float16 tensor == 0.1 compares with float16(0.1)).
template <template <class> class F>
void compare_kernel(OpCall& c, DispatchKeySet) {
  Elementwise e = prepare_elementwise(c, 2, {ResultRule::Compare, dtypes::kAll, true});
  visit_dtype<dtypes::kAll>(e.compute, op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    run_binary<bool, T>(e, F<opmath_t<T>>{}, /*rounded=*/true);
  });
  finish_elementwise(c, e);
}

// Logical F: both operands read as bool (nonzero is true).
template <template <class> class F>
void logical_kernel(OpCall& c, DispatchKeySet) {
  Elementwise e = prepare_elementwise(c, 2, {ResultRule::Logical, dtypes::kBoolSet, false});
  Map<bool, bool, bool>::apply(e.out, F<bool>{}, e.inputs[0], e.inputs[1]);
  finish_elementwise(c, e);
}

}  // namespace

void register_compare_kernels() {
  register_kernel(OpId::eq, DispatchKey::CPU, compare_kernel<f::Eq>);
  register_kernel(OpId::ne, DispatchKey::CPU, compare_kernel<f::Ne>);
  register_kernel(OpId::lt, DispatchKey::CPU, compare_kernel<f::Lt>);
  register_kernel(OpId::le, DispatchKey::CPU, compare_kernel<f::Le>);
  register_kernel(OpId::gt, DispatchKey::CPU, compare_kernel<f::Gt>);
  register_kernel(OpId::ge, DispatchKey::CPU, compare_kernel<f::Ge>);
  register_kernel(OpId::logical_and, DispatchKey::CPU, logical_kernel<f::LogicalAnd>);
  register_kernel(OpId::logical_or, DispatchKey::CPU, logical_kernel<f::LogicalOr>);
  register_kernel(OpId::logical_xor, DispatchKey::CPU, logical_kernel<f::LogicalXor>);
}

}  // namespace mixt::cpu
