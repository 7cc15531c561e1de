// The fused optimizer steps' and the unscale + check's element loops in vector lanes
// (optim_lanes.h), compiled once per instruction set (the pattern of dispatch.h). Every
// lane does the scalar function's operations (optim_math.h, amp_math.h) one by one:
// Add, Sub, Mul, Div and Sqrt are correctly rounded on every target and nothing is
// fused (no MulAdd; -ffp-contract=off), so the bits are the scalar ones on every
// instruction set. The last n mod Lanes elements go through the scalar functions.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "mixt/kernels/cpu/vec/optim_lanes.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>

#include <mixt/kernels/common/amp_math.h>
#include <mixt/kernels/common/optim_math.h>
#include <mixt/kernels/cpu/vec/convert-inl.h>
#include <mixt/kernels/cpu/vec/optim_lanes.h>

HWY_BEFORE_NAMESPACE();
namespace mixt::cpu::vec::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// optim_math::adam_update, lane by lane.
template <bool kL2, bool kAms, class P>
HWY_NOINLINE void AdamRun(P* p, const P* g, float* m, float* v, float* vmax, size_t n,
                          const optim_math::AdamConsts<float>& k) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto step_size = hn::Set(d, k.step_size), bc2 = hn::Set(d, k.bc2), omb1 = hn::Set(d, k.one_minus_beta1),
             beta2 = hn::Set(d, k.beta2), omb2 = hn::Set(d, k.one_minus_beta2), decay = hn::Set(d, k.decay),
             wd = hn::Set(d, k.weight_decay), eps = hn::Set(d, k.eps);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto param = hn::Mul(LoadFloat(d, p + i), decay);
    auto grad = LoadFloat(d, g + i);
    if constexpr (kL2) grad = hn::Add(grad, hn::Mul(wd, param));
    const auto m0 = hn::LoadU(d, m + i);
    const auto m1 = hn::Add(m0, hn::Mul(omb1, hn::Sub(grad, m0)));
    const auto v1 = hn::Add(hn::Mul(hn::LoadU(d, v + i), beta2), hn::Mul(hn::Mul(omb2, grad), grad));
    hn::StoreU(m1, d, m + i);
    hn::StoreU(v1, d, v + i);
    auto second = v1;
    if constexpr (kAms) {
      const auto vm = hn::LoadU(d, vmax + i);
      second = hn::IfThenElse(hn::Gt(vm, v1), vm, v1);  // the scalar `a > b ? a : b`, NaNs included
      hn::StoreU(second, d, vmax + i);
    }
    const auto denom = hn::Add(hn::Div(hn::Sqrt(second), bc2), eps);
    StoreFloat(d, hn::Sub(param, hn::Div(hn::Mul(step_size, m1), denom)), p + i);
  }
  for (; i < n; ++i) optim_math::adam_update<kL2, kAms>(p, g, m, v, vmax, static_cast<int64_t>(i), k);
}

template <class P>
void AdamLanes(P* p, const P* g, float* m, float* v, float* vmax, size_t n, const optim_math::AdamConsts<float>& k,
               bool l2, bool amsgrad) {
  if (l2) amsgrad ? AdamRun<true, true>(p, g, m, v, vmax, n, k) : AdamRun<true, false>(p, g, m, v, vmax, n, k);
  else amsgrad ? AdamRun<false, true>(p, g, m, v, vmax, n, k) : AdamRun<false, false>(p, g, m, v, vmax, n, k);
}

// optim_math::sgd_update, lane by lane.
template <bool kL2, bool kMomentum, bool kNesterov, class P>
HWY_NOINLINE void SgdRun(P* p, const P* g, float* buf, size_t n, bool init, const optim_math::SgdConsts<float>& k) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto lr = hn::Set(d, k.lr), momentum = hn::Set(d, k.momentum), omd = hn::Set(d, k.one_minus_dampening),
             wd = hn::Set(d, k.weight_decay);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto param = LoadFloat(d, p + i);
    auto step = LoadFloat(d, g + i);
    if constexpr (kL2) step = hn::Add(step, hn::Mul(wd, param));
    if constexpr (kMomentum) {
      const auto b = init ? step : hn::Add(hn::Mul(hn::LoadU(d, buf + i), momentum), hn::Mul(omd, step));
      hn::StoreU(b, d, buf + i);
      step = kNesterov ? hn::Add(step, hn::Mul(momentum, b)) : b;
    }
    StoreFloat(d, hn::Sub(param, hn::Mul(lr, step)), p + i);
  }
  for (; i < n; ++i) optim_math::sgd_update<kL2, kMomentum, kNesterov>(p, g, buf, static_cast<int64_t>(i), init, k);
}

template <class P>
void SgdLanes(P* p, const P* g, float* buf, size_t n, bool init, const optim_math::SgdConsts<float>& k, bool l2,
              bool momentum, bool nesterov) {
  const auto run = [&]<bool kL2>() {
    if (!momentum) SgdRun<kL2, false, false>(p, g, buf, n, init, k);
    else if (nesterov) SgdRun<kL2, true, true>(p, g, buf, n, init, k);
    else SgdRun<kL2, true, false>(p, g, buf, n, init, k);
  };
  l2 ? run.template operator()<true>() : run.template operator()<false>();
}

// amp_math::non_finite and amp_math::unscale, lane by lane. A float16 / bfloat16 code is
// Inf or NaN exactly when its float value is.
template <bool kScale, class T>
HWY_NOINLINE bool UnscaleRun(T* p, size_t n, float inv) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto scale = hn::Set(d, inv);
  auto bad = hn::Zero(d);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto x = LoadFloat(d, p + i);
    bad = hn::Or(bad, hn::VecFromMask(d, hn::Not(hn::IsFinite(x))));
    if constexpr (kScale) StoreFloat(d, hn::Mul(x, scale), p + i);
  }
  bool any = !hn::AllFalse(d, hn::MaskFromVec(bad));
  for (; i < n; ++i) {
    any |= amp_math::non_finite(p[i]);
    if constexpr (kScale) p[i] = amp_math::unscale(p[i], inv);
  }
  return any;
}

template <class T>
bool UnscaleLanes(T* p, size_t n, float inv) {
  return inv == 1.0f ? UnscaleRun<false>(p, n, inv) : UnscaleRun<true>(p, n, inv);
}

}  // namespace mixt::cpu::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <mixt/kernels/cpu/vec/dispatch.h>

namespace mixt::cpu::vec {

template <class P>
void adam_lanes(P* p, const P* g, float* m, float* v, float* vmax, size_t n, const optim_math::AdamConsts<float>& k,
                bool l2, bool amsgrad) {
  using Fn = void (*)(P*, const P*, float*, float*, float*, size_t, const optim_math::AdamConsts<float>&, bool, bool);
  static const IsaTable<Fn> table = MIXT_VEC_TABLE(AdamLanes<P>);
  table.get()(p, g, m, v, vmax, n, k, l2, amsgrad);
}

template <class P>
void sgd_lanes(P* p, const P* g, float* buf, size_t n, bool init, const optim_math::SgdConsts<float>& k, bool l2,
               bool momentum, bool nesterov) {
  using Fn = void (*)(P*, const P*, float*, size_t, bool, const optim_math::SgdConsts<float>&, bool, bool, bool);
  static const IsaTable<Fn> table = MIXT_VEC_TABLE(SgdLanes<P>);
  table.get()(p, g, buf, n, init, k, l2, momentum, nesterov);
}

template <class T>
bool unscale_check_lanes(T* p, size_t n, float inv) {
  static const IsaTable<bool (*)(T*, size_t, float)> table = MIXT_VEC_TABLE(UnscaleLanes<T>);
  return table.get()(p, n, inv);
}

#define MIXT_OPTIM_LANES(T)                                                                                        \
  template void adam_lanes<T>(T*, const T*, float*, float*, float*, size_t, const optim_math::AdamConsts<float>&, \
                              bool, bool);                                                                         \
  template void sgd_lanes<T>(T*, const T*, float*, size_t, bool, const optim_math::SgdConsts<float>&, bool, bool,  \
                             bool);                                                                                \
  template bool unscale_check_lanes<T>(T*, size_t, float);
MIXT_OPTIM_LANES(float)
MIXT_OPTIM_LANES(Half)
MIXT_OPTIM_LANES(BFloat16)
#undef MIXT_OPTIM_LANES

}  // namespace mixt::cpu::vec
#endif  // HWY_ONCE
