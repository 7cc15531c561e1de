// Comparison (eq, ne, lt, le, gt, ge) and logical (and, or, xor) kernels on the
// CPU: broadcasting, promotion to a common dtype, bool results. The ops come from the
// shared list (kernels/common/elementwise_ops.h).
#include <mixt/dispatcher/dispatch.h>
#include <mixt/kernels/common/elementwise_attrs.h>
#include <mixt/kernels/cpu/elementwise_loops.h>
#include <mixt/kernels/cpu/register.h>

namespace mixt::cpu {
namespace {

// Comparisons run in the promoted dtype; a wrapped scalar is first rounded to that
// dtype, as PyTorch casts it (float16 tensor == 0.1 compares with float16(0.1)).
// Logical ops read both operands as bool (nonzero is true).
template <class Maker, EwRule Rule, uint32_t Set>
void compare_kernel(OpCall& c, DispatchKeySet) {
  Elementwise e = prepare_elementwise(c, 2, elementwise_options(c, 2, Rule, Set));
  visit_dtype<Set>(e.compute, op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    Maker::template with<T>({}, [&](auto f) { run_binary<bool, T>(e, f, /*rounded=*/true); });
  });
  finish_elementwise(c, e);
}

}  // namespace

void register_compare_kernels() {
  using namespace dtypes;
#define MIXT_EW_REGISTER(name, inplace, Maker, Rule, Set) \
  register_elementwise(OpId::name, inplace, DispatchKey::CPU, compare_kernel<Maker, EwRule::Rule, Set>);
  MIXT_ELEMENTWISE_COMPARE(MIXT_EW_REGISTER)
#undef MIXT_EW_REGISTER
}

}  // namespace mixt::cpu
