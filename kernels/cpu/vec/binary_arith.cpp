// Elementwise float32 arithmetic (binary_arith.h), compiled once per instruction set (dispatch.h).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "mixt/kernels/cpu/vec/binary_arith.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <mixt/kernels/cpu/vec/binary_arith.h>

HWY_BEFORE_NAMESPACE();
namespace mixt::cpu::vec::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// The lanes of op(a, b), as the scalar functor computes each.
template <BinaryArith kOp, class D, class V>
HWY_INLINE V ArithLanes(D d, V alpha, V a, V b) {
  if constexpr (kOp == BinaryArith::Add) {
    return hn::Add(a, hn::Mul(alpha, b));
  } else if constexpr (kOp == BinaryArith::Sub) {
    return hn::Sub(a, hn::Mul(alpha, b));
  } else if constexpr (kOp == BinaryArith::Mul) {
    return hn::Mul(a, b);
  } else if constexpr (kOp == BinaryArith::Div) {
    return hn::Div(a, b);
  } else {
    constexpr bool kMax = kOp == BinaryArith::Maximum;
    const V pick = hn::IfThenElse(kMax ? hn::Gt(a, b) : hn::Lt(a, b), a, b);
    return hn::IfThenElse(hn::IsNaN(a), a, hn::IfThenElse(hn::IsNaN(b), b, pick));
  }
}

template <BinaryArith kOp>
HWY_INLINE void Run(float alpha, const float* a, const float* b, float* out, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto va = hn::Set(d, alpha);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(ArithLanes<kOp>(d, va, hn::LoadU(d, a + i), hn::LoadU(d, b + i)), d, out + i);
  if (i < n) {
    HWY_ALIGN float at[hn::MaxLanes(d)] = {}, bt[hn::MaxLanes(d)] = {}, rt[hn::MaxLanes(d)];
    for (size_t j = i; j < n; ++j) at[j - i] = a[j], bt[j - i] = b[j];
    hn::Store(ArithLanes<kOp>(d, va, hn::Load(d, at), hn::Load(d, bt)), d, rt);
    for (size_t j = i; j < n; ++j) out[j] = rt[j - i];
  }
}

void BinaryArithF32(BinaryArith op, float alpha, const float* a, const float* b, float* out, size_t n) {
  switch (op) {
    case BinaryArith::Add: return Run<BinaryArith::Add>(alpha, a, b, out, n);
    case BinaryArith::Sub: return Run<BinaryArith::Sub>(alpha, a, b, out, n);
    case BinaryArith::Mul: return Run<BinaryArith::Mul>(alpha, a, b, out, n);
    case BinaryArith::Div: return Run<BinaryArith::Div>(alpha, a, b, out, n);
    case BinaryArith::Maximum: return Run<BinaryArith::Maximum>(alpha, a, b, out, n);
    case BinaryArith::Minimum: return Run<BinaryArith::Minimum>(alpha, a, b, out, n);
  }
}

}  // namespace mixt::cpu::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <mixt/kernels/cpu/vec/dispatch.h>
#include <mixt/runtime/check.h>

namespace mixt::cpu::vec {
namespace {
using BinaryArithFn = void (*)(BinaryArith, float, const float*, const float*, float*, size_t);
const IsaTable<BinaryArithFn> kBinaryArith = MIXT_VEC_TABLE(BinaryArithF32);
}  // namespace

void binary_arith(BinaryArith op, float alpha, const float* a, const float* b, float* out, size_t n) {
  kBinaryArith.get()(op, alpha, a, b, out, n);
}

void binary_arith(BinaryArith op, float alpha, const float* a, const float* b, float* out, size_t n, Isa isa) {
  MIXT_CHECK(isa_supported(isa), "binary_arith", "instruction set '{}' is not supported by this CPU", isa_name(isa));
  kBinaryArith.get(isa)(op, alpha, a, b, out, n);
}

}  // namespace mixt::cpu::vec
#endif  // HWY_ONCE
