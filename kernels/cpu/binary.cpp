// Binary arithmetic kernels on the CPU (add, sub, mul, div, pow, atan2, maximum,
// minimum and their in-place forms): broadcasting, type promotion, and wrapped
// scalars applied in opmath precision. The ops come from the shared list
// (kernels/common/elementwise_ops.h).
#include <mixt/dispatcher/dispatch.h>
#include <mixt/kernels/common/elementwise_attrs.h>
#include <mixt/kernels/cpu/elementwise_loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/kernels/cpu/vec/map_unary.h>

namespace mixt::cpu {
namespace {

// True when the second operand (tensor or scalar) of e has an element that violates `check`.
template <class T>
bool rhs_violates_check(const Elementwise& e, RhsCheck check) {
  using M = opmath_t<T>;
  if (e.out.numel() == 0) return false;
  if (e.is_scalar[1]) return rhs_violates(check, scalar_value<T>(e.scalars[1]));
  return any_element<T>(e.inputs[1], [check](M v) { return rhs_violates(check, v); });
}

// The kernel of a binary row of the list. kVecPow: pow, whose float32, float16 and
// bfloat16 inputs take the vector path (docs/notes/cpu-vectorisation.md).
template <class Maker, EwRule Rule, uint32_t Set, bool kVecPow>
void binary_kernel(OpCall& c, DispatchKeySet) {
  check_elementwise_call(c);
  Elementwise e = prepare_elementwise(c, 2, elementwise_options(c, 2, Rule, Set));
  const OpParams p = elementwise_params(c, e.compute);
  visit_dtype<Set>(e.compute, op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    constexpr RhsCheck check = Maker::kCheck;
    if (check != RhsCheck::None && functors::is_int_v<opmath_t<T>>) {
      if (e.is_scalar[0] && e.is_scalar[1]) materialize_scalar(e, 0);
      MIXT_CHECK_OP(!rhs_violates_check<T>(e, check), c, "{}", rhs_check_text(check));
    }
    if constexpr (kVecPow && kVecUnaryType<T>) {
      map_binary_vec<T>(e, [](const float* a, const float* b, float* r, size_t m) { vec::pow_math(a, b, r, m); });
    } else {
      Maker::template with<T>(p, [&](auto f) { run_binary<T, T>(e, f); });
    }
  });
  finish_elementwise(c, e);
}

}  // namespace

void register_binary_kernels() {
  using namespace dtypes;
#define MIXT_EW_REGISTER(name, inplace, Maker, Rule, Set) \
  register_elementwise(OpId::name, inplace, DispatchKey::CPU,      \
                       binary_kernel<Maker, EwRule::Rule, Set, OpId::name == OpId::pow>);
  MIXT_ELEMENTWISE_BINARY(MIXT_EW_REGISTER)
#undef MIXT_EW_REGISTER
}

}  // namespace mixt::cpu
