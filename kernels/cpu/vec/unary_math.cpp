// Vectorised unary math (unary_math.h), compiled once per instruction set: the worked
// example of the pattern described in dispatch.h.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "mixt/kernels/cpu/vec/unary_math.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <mixt/kernels/cpu/vec/convert-inl.h>
#include <mixt/kernels/cpu/vec/unary_math.h>

HWY_BEFORE_NAMESPACE();
namespace mixt::cpu::vec::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// exp with IEEE special values: NaN stays NaN, overflow gives +Inf (Highway's Exp
// covers x <= 104 and gives 0 below -104).
struct ExpOp {
  template <class D, class V>
  HWY_INLINE V operator()(D d, V x) const {
    const V y = hn::Exp(d, x);
    const V big = hn::IfThenElse(hn::Gt(x, hn::Set(d, 88.72283935546875f)), hn::Inf(d), y);
    return hn::IfThenElse(hn::IsNaN(x), x, big);
  }
};

void UnaryMathF32(UnaryMath op, const UnaryMathParams& p, const float* in, float* out, size_t n) {
  switch (op) {
    case UnaryMath::Exp: return MapFloat(in, out, n, ExpOp{});
  }
}

}  // namespace mixt::cpu::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <mixt/kernels/cpu/vec/dispatch.h>
#include <mixt/runtime/check.h>

namespace mixt::cpu::vec {
namespace {
using UnaryMathFn = void (*)(UnaryMath, const UnaryMathParams&, const float*, float*, size_t);
const IsaTable<UnaryMathFn> kUnaryMath = MIXT_VEC_TABLE(UnaryMathF32);
}  // namespace

void unary_math(UnaryMath op, const UnaryMathParams& p, const float* in, float* out, size_t n) {
  kUnaryMath.get()(op, p, in, out, n);
}

void unary_math(UnaryMath op, const UnaryMathParams& p, const float* in, float* out, size_t n, Isa isa) {
  MIXT_CHECK(isa_supported(isa), "unary_math", "instruction set '{}' is not supported by this CPU", isa_name(isa));
  kUnaryMath.get(isa)(op, p, in, out, n);
}

}  // namespace mixt::cpu::vec
#endif  // HWY_ONCE
