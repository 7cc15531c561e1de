// Unary elementwise kernels on the CPU: math functions (and their in-place forms),
// rounding, clamp, and the bool-valued predicates. The ops, their result rules, dtypes
// and functors come from the shared list (kernels/common/elementwise_ops.h).
#include <mixt/dispatcher/dispatch.h>
#include <mixt/kernels/common/elementwise_attrs.h>
#include <mixt/kernels/cpu/elementwise_loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/kernels/cpu/vec/map_unary.h>

namespace mixt::cpu {
namespace {

// The kernel of a unary row of the list. kVec: the op's vector function (vec_unary_op),
// which float32, float16 and bfloat16 use (docs/notes/cpu-vectorisation.md); -1: none.
template <class Maker, EwRule Rule, uint32_t Set, int kVec>
void unary_kernel(OpCall& c, DispatchKeySet) {
  check_elementwise_call(c);
  Elementwise e = prepare_elementwise(c, 1, elementwise_options(c, 1, Rule, Set));
  const OpParams p = elementwise_params(c, e.compute);
  visit_dtype<Set>(e.compute, op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using Out = std::conditional_t<bool_result(Rule), bool, T>;
    constexpr bool kRound = kVec == vec_unary_op(OpId::round);
    if constexpr (kVec >= 0 && kVecUnaryType<T>) {
      if (kRound && p.mode != 0) {  // round to decimals: the scalar functor's scaling
        Maker::template with<T>(p, [&](auto f) { Map<Out, T>::apply(e.out, f, e.inputs[0]); });
        return;
      }
      auto op = static_cast<vec::UnaryMath>(kVec);
      if (op == vec::UnaryMath::GeluErf && p.mode == 1) op = vec::UnaryMath::GeluTanh;
      vec::UnaryMathParams vp;
      vp.beta = static_cast<float>(p.beta);
      vp.threshold = static_cast<float>(p.threshold);
      vp.slope = static_cast<float>(p.alpha);
      if constexpr (kVec == vec_unary_op(OpId::elu)) {  // elu or selu: the scalar functor's own fields
        Maker::template with<T>(p, [&](auto f) {
          vp.elu_alpha_scale = f.alpha_scale;
          vp.elu_scale = f.scale;
          vp.elu_input_scale = f.input_scale;
        });
      }
      map_unary_vec<T>(e.out, e.inputs[0], op, vp);
    } else {
      Maker::template with<T>(p, [&](auto f) { Map<Out, T>::apply(e.out, f, e.inputs[0]); });
    }
  });
  finish_elementwise(c, e);
}

}  // namespace

void register_unary_kernels() {
  using namespace dtypes;
#define MIXT_EW_REGISTER(name, inplace, Maker, Rule, Set) \
  register_elementwise(OpId::name, inplace, DispatchKey::CPU,                      \
                       unary_kernel<Maker, EwRule::Rule, Set, vec_unary_op(OpId::name)>);
  MIXT_ELEMENTWISE_UNARY(MIXT_EW_REGISTER)
#undef MIXT_EW_REGISTER
}

}  // namespace mixt::cpu
