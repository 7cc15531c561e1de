// Unary elementwise kernels on the CPU: math functions (and their in-place forms),
// rounding, clamp, and the bool-valued predicates. The ops, their result rules, dtypes
// and functors come from the shared list (kernels/common/elementwise_ops.h).
#include <mixt/dispatcher/dispatch.h>
#include <mixt/kernels/common/elementwise_attrs.h>
#include <mixt/kernels/cpu/elementwise_loops.h>
#include <mixt/kernels/cpu/register.h>

namespace mixt::cpu {
namespace {

// The kernel of a unary row of the list.
template <class Maker, EwRule Rule, uint32_t Set>
void unary_kernel(OpCall& c, DispatchKeySet) {
  check_elementwise_call(c);
  Elementwise e = prepare_elementwise(c, 1, elementwise_options(c, 1, Rule, Set));
  const OpParams p = elementwise_params(c, e.compute);
  visit_dtype<Set>(e.compute, op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Out = std::conditional_t<bool_result(Rule), bool, T>;
    Maker::template with<T>(p, [&](auto f) { Map<Out, T>::apply(e.out, f, e.inputs[0]); });
  });
  finish_elementwise(c, e);
}

}  // namespace

void register_unary_kernels() {
  using namespace dtypes;
#define MIXT_EW_REGISTER(name, inplace, Maker, Rule, Set) \
  register_elementwise(OpId::name, inplace, DispatchKey::CPU, unary_kernel<Maker, EwRule::Rule, Set>);
  MIXT_ELEMENTWISE_UNARY(MIXT_EW_REGISTER)
#undef MIXT_EW_REGISTER
}

}  // namespace mixt::cpu
