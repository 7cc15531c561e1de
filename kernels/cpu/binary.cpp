// Binary arithmetic kernels on the CPU (add, sub, mul, div, pow, atan2, maximum,
// minimum and their in-place forms): broadcasting, type promotion, and wrapped
// scalars applied in opmath precision. The ops come from the shared list
// (kernels/common/elementwise_ops.h).
#include <mixt/dispatcher/dispatch.h>
#include <mixt/kernels/common/elementwise_attrs.h>
#include <mixt/kernels/cpu/elementwise_loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/kernels/cpu/vec/binary_arith.h>
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

// The vector function of binary op `op` on float16 / bfloat16 (vec/binary_arith.h) as an
// int, or -1 for none. div takes it for true division only (p.mode == 0).
constexpr int vec_binary_arith(OpId op) {
  using vec::BinaryArith;
  switch (op) {
    case OpId::add: return static_cast<int>(BinaryArith::Add);
    case OpId::sub: return static_cast<int>(BinaryArith::Sub);
    case OpId::mul: return static_cast<int>(BinaryArith::Mul);
    case OpId::div: return static_cast<int>(BinaryArith::Div);
    case OpId::maximum: return static_cast<int>(BinaryArith::Maximum);
    case OpId::minimum: return static_cast<int>(BinaryArith::Minimum);
    default: return -1;
  }
}

// The kernel of a binary row of the list. pow on float32, float16 and bfloat16, and the
// arithmetic of vec_binary_arith on float16 and bfloat16 (float32's scalar loop vectorises
// as it is), take the vector path (docs/notes/cpu-vectorisation.md): the same bits as the
// scalar functors, any layout.
template <class Maker, EwRule Rule, uint32_t Set, OpId kOp>
void binary_kernel(OpCall& c, DispatchKeySet) {
  constexpr bool kVecPow = kOp == OpId::pow;
  constexpr int kVecArith = vec_binary_arith(kOp);
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
    } else if constexpr (kVecArith >= 0 && is_narrow_float_v<T>) {
      if (kOp != OpId::div || p.mode == 0) {
        const auto op = static_cast<vec::BinaryArith>(kVecArith);
        const float alpha = kOp == OpId::add || kOp == OpId::sub ? scalar_arg_value<T>(p.s[0]) : 1.0f;
        map_binary_vec<T>(e, [op, alpha](const float* a, const float* b, float* r, size_t m) {
          vec::binary_arith(op, alpha, a, b, r, m);
        });
      } else {
        Maker::template with<T>(p, [&](auto f) { run_binary<T, T>(e, f); });
      }
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
                       binary_kernel<Maker, EwRule::Rule, Set, OpId::name>);
  MIXT_ELEMENTWISE_BINARY(MIXT_EW_REGISTER)
#undef MIXT_EW_REGISTER
}

}  // namespace mixt::cpu
