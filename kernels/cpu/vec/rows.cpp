// The row kernels of rows.h, once per instruction set (dispatch.h). Each kernel is a
// template over the work type M (float or double); the scalar tails compute exactly
// what the vector lanes compute (the same IEEE operations, no contraction), and exp
// runs on whole vectors only (a padded block for the tail), so a row's result does not
// depend on where its elements fall relative to the vector boundaries.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "mixt/kernels/cpu/vec/rows.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
#include <hwy/highway.h>
#include <hwy/contrib/math/math-inl.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include <mixt/kernels/cpu/vec/rows.h>

HWY_BEFORE_NAMESPACE();
namespace mixt::cpu::vec::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D64 = hn::ScalableTag<double>;
using V64 = hn::Vec<D64>;
constexpr size_t kL64 = hn::MaxLanes(D64());

// The kL64 values at p, widened to double.
template <class M>
HWY_INLINE V64 Wide(const M* p) {
  if constexpr (std::is_same_v<M, double>) return hn::LoadU(D64(), p);
  else return hn::PromoteTo(D64(), hn::LoadU(hn::Rebind<float, D64>(), p));
}

// Stores the kL64 doubles v to p, rounded to M.
template <class M>
HWY_INLINE void StoreRounded(V64 v, M* p) {
  if constexpr (std::is_same_v<M, double>) hn::StoreU(v, D64(), p);
  else hn::StoreU(hn::DemoteTo(hn::Rebind<float, D64>(), v), hn::Rebind<float, D64>(), p);
}

// Sum over i < n of the terms of a row: term(i) gives the kL64 terms at i, i + 1, ... as
// doubles, scalar_term(j) the single term j (bit-identical to its lane). Element i goes
// to slot i % kSlots; the slots are then added in a fixed pairwise tree (FinishSlots).
constexpr int64_t kSlots = 32;
constexpr size_t kAcc = kSlots / kL64;  // double vectors holding the slots
static_assert(kSlots % kL64 == 0);

// Lane 0 of the halving tree over v's lanes: s[k] += s[k + w] for w = lanes / 2, ..., 1,
// as the lower half plus the upper half, in registers.
template <class D>
HWY_INLINE double HalvingSum(D d, hn::Vec<D> v) {
#if HWY_TARGET == HWY_SCALAR  // one lane: nothing to halve (and no UpperHalf)
  return hn::GetLane(v);
#else
  if constexpr (hn::MaxLanes(d) == 1) {
    return hn::GetLane(v);
  } else {
    const hn::Half<D> dh;
    return HalvingSum(dh, hn::Add(hn::LowerHalf(dh, v), hn::UpperHalf(dh, v)));
  }
#endif
}

// The sum of the slots in `acc` (elements [0, i)) and of scalar_term(j) for j in [i, n):
// tail term j goes to slot j - i, then the slots add in the pairwise tree s[k] += s[k + w]
// for w = kSlots / 2, ..., 1. The tree runs on whole vectors (pairs of them, then halves of
// one): the same additions as on an array of slots, without the stores and reloads that
// cost a short row about as much as its data (store forwarding stalls). A slot that gets no
// tail term has +0 added, which leaves it as it is: a slot starts at +0 and a
// round-to-nearest sum is -0 only when both terms are.
template <class ScalarTerm>
HWY_INLINE double FinishSlots(const V64* acc_in, int64_t i, int64_t n, const ScalarTerm& scalar_term) {
  const D64 d;
  V64 acc[kAcc];
  for (size_t a = 0; a < kAcc; ++a) acc[a] = acc_in[a];
  if (i < n) {
    HWY_ALIGN double tail[kSlots] = {};
    for (int64_t j = i; j < n; ++j) tail[j - i] = scalar_term(j);
    for (size_t a = 0; a < kAcc; ++a) acc[a] = hn::Add(acc[a], hn::Load(d, tail + a * kL64));
  }
  for (size_t w = kAcc / 2; w >= 1; w /= 2)
    for (size_t k = 0; k < w; ++k) acc[k] = hn::Add(acc[k], acc[k + w]);
  return HalvingSum(d, acc[0]);
}

template <class Term, class ScalarTerm>
HWY_INLINE double SlotSum(int64_t n, const Term& term, const ScalarTerm& scalar_term) {
  V64 acc[kAcc];
  for (size_t a = 0; a < kAcc; ++a) acc[a] = hn::Zero(D64());
  int64_t i = 0;
  for (; i + kSlots <= n; i += kSlots)
    for (size_t a = 0; a < kAcc; ++a) acc[a] = hn::Add(acc[a], term(i + static_cast<int64_t>(a * kL64)));
  return FinishSlots(acc, i, n, scalar_term);
}

// exp with the IEEE special cases Highway's Exp leaves out: NaN stays NaN, overflow gives +Inf.
template <class D, class V>
HWY_INLINE V ExpSpecial(D d, V x) {
  using M = hn::TFromD<D>;
  const M max_arg = sizeof(M) == 4 ? M(88.72283) : M(709.782712893384);
  V r = hn::Exp(d, x);
  r = hn::IfThenElse(hn::Gt(x, hn::Set(d, max_arg)), hn::Set(d, std::numeric_limits<M>::infinity()), r);
  return hn::IfThenElse(hn::IsNaN(x), x, r);
}

// exp of arguments that are never NaN nor above 0 (x - m with m the finite maximum of a
// row without NaN): Highway's Exp alone, whose results there are ExpSpecial's bits (its
// lower bound gives 0 for -Inf), without the two selects for overflow and NaN.
template <class D, class V>
HWY_INLINE V ExpNonPositive(D d, V x) {
  return hn::Exp(d, x);
}

// out[i] = f(d, in-vectors at i) for i < n over whole vectors of M; the tail goes
// through blocks padded with `pad`, so f only ever sees whole vectors.
template <class M, class F>
HWY_INLINE void MapWhole(int64_t n, M* out, M pad, const M* a, const M* b, const F& f) {
  const hn::ScalableTag<M> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  for (; i + L <= n; i += L) hn::StoreU(f(d, hn::LoadU(d, a + i), b ? hn::LoadU(d, b + i) : hn::Zero(d)), d, out + i);
  if (i < n) {
    HWY_ALIGN M ta[hn::MaxLanes(d)], tb[hn::MaxLanes(d)], to[hn::MaxLanes(d)];
    for (int64_t j = 0; j < L; ++j) {
      ta[j] = i + j < n ? a[i + j] : pad;
      tb[j] = b && i + j < n ? b[i + j] : M(0);
    }
    hn::Store(f(d, hn::Load(d, ta), hn::Load(d, tb)), d, to);
    for (int64_t j = i; j < n; ++j) out[j] = to[j - i];
  }
}

// The largest value of the row and whether it holds a NaN.
template <class M>
HWY_INLINE M RowMax(const M* x, int64_t n, bool& has_nan) {
  const hn::ScalableTag<M> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  auto vm = hn::Set(d, -std::numeric_limits<M>::infinity());
  auto nan = hn::Zero(d);
  int64_t i = 0;
  for (; i + L <= n; i += L) {
    const auto v = hn::LoadU(d, x + i);
    vm = hn::Max(vm, v);
    nan = hn::Or(nan, hn::VecFromMask(d, hn::IsNaN(v)));
  }
  M m = hn::GetLane(hn::MaxOfLanes(d, vm));
  has_nan = !hn::AllFalse(d, hn::MaskFromVec(nan));
  for (; i < n; ++i) {
    if (x[i] != x[i]) has_nan = true;
    else if (x[i] > m) m = x[i];
  }
  return m;
}

// exp(x - m) for the row (stored to y when kStore) and its slot sum in double; the callers
// have ruled out NaN and an infinite maximum, so every argument is in [-Inf, 0]. Each vector
// of exps is added to its slots from registers as it is stored (a reload of the fresh store
// would wait on store forwarding); the same terms in the same slots as SlotSum. block(i)
// runs after each whole block of kSlots elements at i, for other slot sums that ride along
// the same pass over x (cross_entropy_sums).
template <bool kStore, class M, class Block>
HWY_INLINE double ExpSumInto(const M* x, M* y, int64_t n, M m, const Block& block) {
  const hn::ScalableTag<M> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const auto vm = hn::Set(d, m);
  V64 acc[kAcc];
  for (size_t a = 0; a < kAcc; ++a) acc[a] = hn::Zero(D64());
  int64_t i = 0;
  for (; i + kSlots <= n; i += kSlots) {
    for (int64_t k = 0; k < kSlots; k += L) {
      const auto e = ExpNonPositive(d, hn::Sub(hn::LoadU(d, x + i + k), vm));
      if constexpr (kStore) hn::StoreU(e, d, y + i + k);
      const size_t a = static_cast<size_t>(k) / kL64;
      if constexpr (std::is_same_v<M, double>) {
        acc[a] = hn::Add(acc[a], e);
      } else {
#if HWY_TARGET == HWY_SCALAR  // one lane of float, one of double
        acc[a] = hn::Add(acc[a], hn::PromoteTo(D64(), e));
#else  // a float vector's halves are the next two slot groups
        const hn::Half<decltype(d)> dh;
        acc[a] = hn::Add(acc[a], hn::PromoteTo(D64(), hn::LowerHalf(dh, e)));
        acc[a + 1] = hn::Add(acc[a + 1], hn::PromoteTo(D64(), hn::UpperHalf(dh, e)));
#endif
      }
    }
    block(i);
  }
  HWY_ALIGN M tail[kSlots];  // the exps of the last n - i < kSlots elements when not stored
  M* const yt = kStore ? y + i : tail;
  MapWhole<M>(n - i, yt, m, x + i, nullptr,
              [m](auto dm, auto v, auto) { return ExpNonPositive(dm, hn::Sub(v, hn::Set(dm, m))); });
  return FinishSlots(acc, i, n, [yt, i](int64_t j) { return static_cast<double>(yt[j - i]); });
}

template <class M>
void SoftmaxRow(const M* x, M* y, int64_t n, bool log) {
  bool has_nan = false;
  const M m = RowMax(x, n, has_nan);
  if (has_nan || std::isinf(m)) {  // a NaN, +Inf (Inf - Inf) or only -Inf (-Inf + Inf): NaN
    for (int64_t j = 0; j < n; ++j) y[j] = std::numeric_limits<M>::quiet_NaN();
    return;
  }
  const double s = ExpSumInto<true>(x, y, n, m, [](int64_t) {});
  const hn::ScalableTag<M> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t i = 0;
  if (log) {
    const M log_s = static_cast<M>(std::log(s));
    const auto vm = hn::Set(d, m), vl = hn::Set(d, log_s);
    for (; i + L <= n; i += L) hn::StoreU(hn::Sub(hn::Sub(hn::LoadU(d, x + i), vm), vl), d, y + i);
    for (; i < n; ++i) y[i] = x[i] - m - log_s;
  } else {
    const M inv = static_cast<M>(1.0 / s);
    const auto vi = hn::Set(d, inv);
    for (; i + L <= n; i += L) hn::StoreU(hn::Mul(hn::LoadU(d, y + i), vi), d, y + i);
    for (; i < n; ++i) y[i] = y[i] * inv;
  }
}

template <class M>
void SoftmaxBackwardRow(const M* g, const M* y, M* gx, int64_t n, bool log) {
  const double s =
      log ? SlotSum(n, [g](int64_t i) { return Wide(g + i); }, [g](int64_t j) { return static_cast<double>(g[j]); })
          : SlotSum(
                n, [g, y](int64_t i) { return hn::Mul(Wide(g + i), Wide(y + i)); },
                [g, y](int64_t j) { return static_cast<double>(g[j]) * static_cast<double>(y[j]); });
  const M k = static_cast<M>(s);
  if (log)  // g - exp(y) * k
    MapWhole<M>(n, gx, M(0), y, g, [k](auto d, auto vy, auto vg) {
      return hn::Sub(vg, hn::Mul(ExpSpecial(d, vy), hn::Set(d, k)));
    });
  else  // y * (g - k)
    MapWhole<M>(n, gx, M(0), y, g, [k](auto d, auto vy, auto vg) { return hn::Mul(vy, hn::Sub(vg, hn::Set(d, k))); });
}

// cross_entropy_rows (Note [Fused cross-entropy]): the maximum, then one pass for the sum of
// exp(x - m) (as softmax_row's) and, with `gaps`, the slot sum of w_c (m - x_c) in double.
template <class M>
CrossEntropySums CrossEntropySumsRow(const M* x, const M* w, int64_t n, bool gaps) {
  bool has_nan = false;
  const M m = RowMax(x, n, has_nan);
  if (has_nan || std::isinf(m)) {  // as softmax_row: NaN, +Inf or only -Inf give NaN
    const double nan = std::numeric_limits<double>::quiet_NaN();
    return {nan, nan, nan};
  }
  const double md = static_cast<double>(m);
  const V64 vm = hn::Set(D64(), md);
  const auto gap = [x, w, vm](int64_t j) {
    const V64 g = hn::Sub(vm, Wide(x + j));
    return w ? hn::Mul(g, Wide(w + j)) : g;
  };
  const auto scalar_gap = [x, w, md](int64_t j) {
    const double g = md - static_cast<double>(x[j]);
    return w ? g * static_cast<double>(w[j]) : g;
  };
  CrossEntropySums r;
  r.m = md;
  if (!gaps) {
    r.s = ExpSumInto<false>(x, static_cast<M*>(nullptr), n, m, [](int64_t) {});
    return r;
  }
  V64 acc[kAcc];
  for (size_t a = 0; a < kAcc; ++a) acc[a] = hn::Zero(D64());
  r.s = ExpSumInto<false>(x, static_cast<M*>(nullptr), n, m, [&](int64_t i) {
    for (size_t a = 0; a < kAcc; ++a) acc[a] = hn::Add(acc[a], gap(i + static_cast<int64_t>(a * kL64)));
  });
  r.gap_sum = FinishSlots(acc, n - n % kSlots, n, scalar_gap);
  return r;
}

// gx = spread exp(x - lse) - flat w (w = 1 when null), and the target's gradient less `hot`.
template <class M>
void CrossEntropyGradRow(const M* x, const M* w, M* gx, int64_t n, M lse, const cross_entropy_math::RowGrad<M>& r,
                         int64_t target) {
  const M spread = r.spread, flat = r.flat;
  if (w)
    MapWhole<M>(n, gx, lse, x, w, [lse, spread, flat](auto d, auto vx, auto vw) {
      const auto p = ExpSpecial(d, hn::Sub(vx, hn::Set(d, lse)));
      return hn::Sub(hn::Mul(hn::Set(d, spread), p), hn::Mul(hn::Set(d, flat), vw));
    });
  else
    MapWhole<M>(n, gx, lse, x, nullptr, [lse, spread, flat](auto d, auto vx, auto) {
      const auto p = ExpSpecial(d, hn::Sub(vx, hn::Set(d, lse)));
      return hn::Sub(hn::Mul(hn::Set(d, spread), p), hn::Set(d, flat));
    });
  if (target >= 0 && target < n) gx[target] = gx[target] - r.hot;
}

// Column kernels (softmax along an outer dim): elementwise over c < w.
template <class M>
void ExtremumRowInto(const M* x, M* m, int64_t w, bool max) {
  const hn::ScalableTag<M> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t c = 0;
  for (; c + L <= w; c += L) {
    const auto v = hn::LoadU(d, x + c), cur = hn::LoadU(d, m + c);
    const auto beyond = max ? hn::Gt(v, cur) : hn::Lt(v, cur);
    hn::StoreU(hn::IfThenElse(hn::Or(hn::IsNaN(v), beyond), v, cur), d, m + c);
  }
  for (; c < w; ++c)
    if (x[c] != x[c] || (max ? x[c] > m[c] : x[c] < m[c])) m[c] = x[c];
}

template <class M>
void AddAbsRowInto(const M* x, double* acc, int64_t n, bool squares) {
  const D64 d;
  int64_t i = 0;
  for (; i + static_cast<int64_t>(kL64) <= n; i += kL64) {
    const V64 v = Wide(x + i);
    hn::StoreU(hn::Add(hn::LoadU(d, acc + i), squares ? hn::Mul(v, v) : hn::Abs(v)), d, acc + i);
  }
  for (; i < n; ++i) {
    const double v = static_cast<double>(x[i]);
    acc[i] += squares ? v * v : std::abs(v);
  }
}

template <class M>
void WelfordRowInto(const M* x, double* mean, double* m2, int64_t count, int64_t n) {
  const D64 d;
  const double k = static_cast<double>(count);
  const V64 vk = hn::Set(d, k);
  int64_t i = 0;
  for (; i + static_cast<int64_t>(kL64) <= n; i += kL64) {
    const V64 v = Wide(x + i), dv = hn::Sub(v, hn::LoadU(d, mean + i));
    const V64 mn = hn::Add(hn::LoadU(d, mean + i), hn::Div(dv, vk));
    hn::StoreU(mn, d, mean + i);
    hn::StoreU(hn::Add(hn::LoadU(d, m2 + i), hn::Mul(dv, hn::Sub(v, mn))), d, m2 + i);
  }
  for (; i < n; ++i) {
    const double v = static_cast<double>(x[i]), dv = v - mean[i];
    mean[i] += dv / k;
    m2[i] += dv * (v - mean[i]);
  }
}

template <class M>
void ColSumExp(const M* x, const M* m, double* s, int64_t w) {
  HWY_ALIGN M e[256];
  for (int64_t c0 = 0; c0 < w; c0 += 256) {
    const int64_t b = std::min<int64_t>(256, w - c0);
    MapWhole<M>(b, e, M(0), x + c0, m + c0, [](auto d, auto v, auto vm) { return ExpSpecial(d, hn::Sub(v, vm)); });
    const D64 dd;
    int64_t c = 0;
    for (; c + static_cast<int64_t>(kL64) <= b; c += kL64)
      hn::StoreU(hn::Add(hn::LoadU(dd, s + c0 + c), Wide(e + c)), dd, s + c0 + c);
    for (; c < b; ++c) s[c0 + c] += static_cast<double>(e[c]);
  }
}

template <class M>
void ColSoftmaxOut(const M* x, const M* m, const M* k, M* y, int64_t w, bool log) {
  const hn::ScalableTag<M> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t c = 0;
  if (log) {
    for (; c + L <= w; c += L)
      hn::StoreU(hn::Sub(hn::Sub(hn::LoadU(d, x + c), hn::LoadU(d, m + c)), hn::LoadU(d, k + c)), d, y + c);
    for (; c < w; ++c) y[c] = x[c] - m[c] - k[c];
  } else {
    MapWhole<M>(w, y, M(0), x, m, [](auto dm, auto v, auto vm) { return ExpSpecial(dm, hn::Sub(v, vm)); });
    for (; c + L <= w; c += L) hn::StoreU(hn::Mul(hn::LoadU(d, y + c), hn::LoadU(d, k + c)), d, y + c);
    for (; c < w; ++c) y[c] = y[c] * k[c];
  }
}

template <class M>
void ColBackwardSum(const M* g, const M* y, double* s, int64_t w, bool log) {
  const D64 d;
  int64_t c = 0;
  for (; c + static_cast<int64_t>(kL64) <= w; c += kL64) {
    const V64 t = log ? Wide(g + c) : hn::Mul(Wide(g + c), Wide(y + c));
    hn::StoreU(hn::Add(hn::LoadU(d, s + c), t), d, s + c);
  }
  for (; c < w; ++c) s[c] += log ? static_cast<double>(g[c]) : static_cast<double>(g[c]) * static_cast<double>(y[c]);
}

template <class M>
void ColBackwardOut(const M* g, const M* y, const M* k, M* gx, int64_t w, bool log) {
  const hn::ScalableTag<M> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  int64_t c = 0;
  if (log) {
    MapWhole<M>(w, gx, M(0), y, nullptr, [](auto dm, auto vy, auto) { return ExpSpecial(dm, vy); });
    for (; c + L <= w; c += L)
      hn::StoreU(hn::Sub(hn::LoadU(d, g + c), hn::Mul(hn::LoadU(d, gx + c), hn::LoadU(d, k + c))), d, gx + c);
    for (; c < w; ++c) gx[c] = g[c] - gx[c] * k[c];
  } else {
    for (; c + L <= w; c += L)
      hn::StoreU(hn::Mul(hn::LoadU(d, y + c), hn::Sub(hn::LoadU(d, g + c), hn::LoadU(d, k + c))), d, gx + c);
    for (; c < w; ++c) gx[c] = y[c] * (g[c] - k[c]);
  }
}

template <class M>
RowMoments Moments(const M* x, int64_t n, bool centred) {
  if (n == 0) return {};
  const double dn = static_cast<double>(n);
  const double mean =
      centred ? SlotSum(n, [x](int64_t i) { return Wide(x + i); }, [x](int64_t j) { return static_cast<double>(x[j]); }) / dn
              : 0.0;
  const V64 vmean = hn::Set(D64(), mean);
  const double sq = SlotSum(
      n,
      [x, vmean](int64_t i) {
        const V64 c = hn::Sub(Wide(x + i), vmean);
        return hn::Mul(c, c);
      },
      [x, mean](int64_t j) {
        const double c = static_cast<double>(x[j]) - mean;
        return c * c;
      });
  return {mean, sq / dn};
}

template <class M>
void NormAffineRow(const M* x, M* y, int64_t n, double mean, double rstd, const double* w, const double* b) {
  const D64 d;
  const V64 vm = hn::Set(d, mean), vr = hn::Set(d, rstd);
  int64_t i = 0;
  for (; i + static_cast<int64_t>(kL64) <= n; i += kL64) {
    V64 v = hn::Mul(hn::Sub(Wide(x + i), vm), vr);
    if (w) v = hn::Mul(v, hn::LoadU(d, w + i));
    if (b) v = hn::Add(v, hn::LoadU(d, b + i));
    StoreRounded(v, y + i);
  }
  for (; i < n; ++i) {
    double v = (static_cast<double>(x[i]) - mean) * rstd;
    if (w) v *= w[i];
    if (b) v += b[i];
    y[i] = static_cast<M>(v);
  }
}

template <class M>
NormGradSums GradSums(const M* g, const M* x, const double* w, int64_t n, double mean, double rstd) {
  const D64 d;
  const V64 vm = hn::Set(d, mean), vr = hn::Set(d, rstd);
  auto gw = [g, w, d](int64_t i) { return w ? hn::Mul(Wide(g + i), hn::LoadU(d, w + i)) : Wide(g + i); };
  auto gw1 = [g, w](int64_t j) { return w ? static_cast<double>(g[j]) * w[j] : static_cast<double>(g[j]); };
  NormGradSums r;
  r.dot = SlotSum(
      n, [&](int64_t i) { return hn::Mul(gw(i), hn::Mul(hn::Sub(Wide(x + i), vm), vr)); },
      [&](int64_t j) { return gw1(j) * ((static_cast<double>(x[j]) - mean) * rstd); });
  r.sum = SlotSum(n, gw, gw1);
  return r;
}

template <class M>
void InputGradRow(const M* g, const M* x, const double* w, M* gx, int64_t n, double mean, double rstd,
                  double dot_mean, double g_mean) {
  const D64 d;
  const V64 vm = hn::Set(d, mean), vr = hn::Set(d, rstd), vdot = hn::Set(d, dot_mean), vg = hn::Set(d, g_mean);
  int64_t i = 0;
  for (; i + static_cast<int64_t>(kL64) <= n; i += kL64) {
    const V64 gw = w ? hn::Mul(Wide(g + i), hn::LoadU(d, w + i)) : Wide(g + i);
    const V64 xhat = hn::Mul(hn::Sub(Wide(x + i), vm), vr);
    StoreRounded(hn::Mul(vr, hn::Sub(hn::Sub(gw, hn::Mul(xhat, vdot)), vg)), gx + i);
  }
  for (; i < n; ++i) {
    const double gw = w ? static_cast<double>(g[i]) * w[i] : static_cast<double>(g[i]);
    const double xhat = (static_cast<double>(x[i]) - mean) * rstd;
    gx[i] = static_cast<M>(rstd * (gw - xhat * dot_mean - g_mean));
  }
}

template <class M>
void ColumnSums(const M* g, const M* x, int64_t n, double mean, double rstd, double* gw_sum, double* gb_sum) {
  const D64 d;
  const V64 vm = hn::Set(d, mean), vr = hn::Set(d, rstd);
  int64_t i = 0;
  for (; i + static_cast<int64_t>(kL64) <= n; i += kL64) {
    const V64 vg = Wide(g + i);
    if (gw_sum)
      hn::StoreU(hn::Add(hn::LoadU(d, gw_sum + i), hn::Mul(vg, hn::Mul(hn::Sub(Wide(x + i), vm), vr))), d, gw_sum + i);
    if (gb_sum) hn::StoreU(hn::Add(hn::LoadU(d, gb_sum + i), vg), d, gb_sum + i);
  }
  for (; i < n; ++i) {
    const double gj = static_cast<double>(g[i]);
    if (gw_sum) gw_sum[i] += gj * ((static_cast<double>(x[i]) - mean) * rstd);
    if (gb_sum) gb_sum[i] += gj;
  }
}

template <class M>
double SumRow(const M* x, int64_t n) {
  return SlotSum(n, [x](int64_t i) { return Wide(x + i); }, [x](int64_t j) { return static_cast<double>(x[j]); });
}

template <class M>
double SumExpRow(const M* x, int64_t n, double m) {
  const V64 vm = hn::Set(D64(), m);
  const hn::CappedTag<double, 1> d1;  // the tail through the same exp, one lane at a time
  return SlotSum(
      n, [x, vm](int64_t i) { return ExpSpecial(D64(), hn::Sub(Wide(x + i), vm)); },
      [x, m, d1](int64_t j) {
        return hn::GetLane(ExpSpecial(d1, hn::Sub(hn::Set(d1, static_cast<double>(x[j])), hn::Set(d1, m))));
      });
}

template <class M>
double AbsSumRow(const M* x, int64_t n, bool squares) {
  if (squares)
    return SlotSum(
        n,
        [x](int64_t i) {
          const V64 v = Wide(x + i);
          return hn::Mul(v, v);
        },
        [x](int64_t j) { return static_cast<double>(x[j]) * static_cast<double>(x[j]); });
  return SlotSum(n, [x](int64_t i) { return hn::Abs(Wide(x + i)); },
                 [x](int64_t j) { return std::abs(static_cast<double>(x[j])); });
}

template <class M>
M ExtremumRow(const M* x, int64_t n, bool max) {
  const hn::ScalableTag<M> d;
  const int64_t L = static_cast<int64_t>(hn::Lanes(d));
  const auto init = hn::Set(d, max ? -std::numeric_limits<M>::infinity() : std::numeric_limits<M>::infinity());
  // Four extrema and two NaN flags in flight: one chain of max would wait on its latency
  // at every vector, as long as the memory takes to deliver the row.
  auto m0 = init, m1 = init, m2 = init, m3 = init;
  auto nan0 = hn::Zero(d), nan1 = hn::Zero(d);
  auto fold = [max](auto a, auto b) { return max ? hn::Max(a, b) : hn::Min(a, b); };
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    const auto v0 = hn::LoadU(d, x + i), v1 = hn::LoadU(d, x + i + L);
    const auto v2 = hn::LoadU(d, x + i + 2 * L), v3 = hn::LoadU(d, x + i + 3 * L);
    m0 = fold(m0, v0), m1 = fold(m1, v1), m2 = fold(m2, v2), m3 = fold(m3, v3);
    nan0 = hn::Or(nan0, hn::VecFromMask(d, hn::Or(hn::IsNaN(v0), hn::IsNaN(v1))));
    nan1 = hn::Or(nan1, hn::VecFromMask(d, hn::Or(hn::IsNaN(v2), hn::IsNaN(v3))));
  }
  for (; i + L <= n; i += L) {
    const auto v = hn::LoadU(d, x + i);
    m0 = fold(m0, v);
    nan0 = hn::Or(nan0, hn::VecFromMask(d, hn::IsNaN(v)));
  }
  const auto vm = fold(fold(m0, m1), fold(m2, m3));
  M m = hn::GetLane(max ? hn::MaxOfLanes(d, vm) : hn::MinOfLanes(d, vm));
  bool has_nan = !hn::AllFalse(d, hn::MaskFromVec(hn::Or(nan0, nan1)));
  for (; i < n; ++i) {
    if (x[i] != x[i]) has_nan = true;
    else if (max ? x[i] > m : x[i] < m) m = x[i];
  }
  if (has_nan)
    for (int64_t j = n - 1; j >= 0; --j)
      if (x[j] != x[j]) return x[j];
  return m;
}

template <class M>
void AddRowInto(const M* x, double* acc, int64_t n) {
  const D64 d;
  int64_t i = 0;
  for (; i + static_cast<int64_t>(kL64) <= n; i += kL64) hn::StoreU(hn::Add(hn::LoadU(d, acc + i), Wide(x + i)), d, acc + i);
  for (; i < n; ++i) acc[i] += static_cast<double>(x[i]);
}

// Per-target entry points (one name per type, for the tables).
#define MIXT_ROWS_BOTH(NAME, TEMPLATE, RET, PARAMS, ARGS) \
  RET NAME##F32 PARAMS(float) { return TEMPLATE<float> ARGS; } \
  RET NAME##F64 PARAMS(double) { return TEMPLATE<double> ARGS; }
#define P_SOFTMAX(M) (const M* x, M* y, int64_t n, bool log)
MIXT_ROWS_BOTH(Softmax, SoftmaxRow, void, P_SOFTMAX, (x, y, n, log))
#define P_CE_SUMS(M) (const M* x, const M* w, int64_t n, bool gaps)
MIXT_ROWS_BOTH(CrossEntropySums, CrossEntropySumsRow, CrossEntropySums, P_CE_SUMS, (x, w, n, gaps))
#define P_CE_GRAD(M) \
  (const M* x, const M* w, M* gx, int64_t n, M lse, const cross_entropy_math::RowGrad<M>& r, int64_t target)
MIXT_ROWS_BOTH(CrossEntropyGrad, CrossEntropyGradRow, void, P_CE_GRAD, (x, w, gx, n, lse, r, target))
#define P_SOFTMAX_BW(M) (const M* g, const M* y, M* gx, int64_t n, bool log)
MIXT_ROWS_BOTH(SoftmaxBackward, SoftmaxBackwardRow, void, P_SOFTMAX_BW, (g, y, gx, n, log))
#define P_MOMENTS(M) (const M* x, int64_t n, bool centred)
MIXT_ROWS_BOTH(RowMoments, Moments, RowMoments, P_MOMENTS, (x, n, centred))
#define P_AFFINE(M) (const M* x, M* y, int64_t n, double mean, double rstd, const double* w, const double* b)
MIXT_ROWS_BOTH(NormAffine, NormAffineRow, void, P_AFFINE, (x, y, n, mean, rstd, w, b))
#define P_GRAD_SUMS(M) (const M* g, const M* x, const double* w, int64_t n, double mean, double rstd)
MIXT_ROWS_BOTH(NormGradSums, GradSums, NormGradSums, P_GRAD_SUMS, (g, x, w, n, mean, rstd))
#define P_INPUT_GRAD(M) \
  (const M* g, const M* x, const double* w, M* gx, int64_t n, double mean, double rstd, double dot_mean, double g_mean)
MIXT_ROWS_BOTH(NormInputGrad, InputGradRow, void, P_INPUT_GRAD, (g, x, w, gx, n, mean, rstd, dot_mean, g_mean))
#define P_COLUMN_SUMS(M) (const M* g, const M* x, int64_t n, double mean, double rstd, double* gw_sum, double* gb_sum)
MIXT_ROWS_BOTH(NormColumnSums, ColumnSums, void, P_COLUMN_SUMS, (g, x, n, mean, rstd, gw_sum, gb_sum))
#define P_SUM(M) (const M* x, int64_t n)
MIXT_ROWS_BOTH(Sum, SumRow, double, P_SUM, (x, n))
float ExtremumF32(const float* x, int64_t n, bool max) { return ExtremumRow(x, n, max); }
double ExtremumF64(const double* x, int64_t n, bool max) { return ExtremumRow(x, n, max); }
#define P_SUM_EXP(M) (const M* x, int64_t n, double m)
MIXT_ROWS_BOTH(SumExp, SumExpRow, double, P_SUM_EXP, (x, n, m))
#define P_ABS_SUM(M) (const M* x, int64_t n, bool squares)
MIXT_ROWS_BOTH(AbsSum, AbsSumRow, double, P_ABS_SUM, (x, n, squares))
#define P_EXTREMUM_INTO(M) (const M* x, M* m, int64_t w, bool max)
MIXT_ROWS_BOTH(ExtremumInto, ExtremumRowInto, void, P_EXTREMUM_INTO, (x, m, w, max))
#define P_ABS_INTO(M) (const M* x, double* acc, int64_t n, bool squares)
MIXT_ROWS_BOTH(AbsInto, AddAbsRowInto, void, P_ABS_INTO, (x, acc, n, squares))
#define P_WELFORD_INTO(M) (const M* x, double* mean, double* m2, int64_t count, int64_t n)
MIXT_ROWS_BOTH(WelfordInto, WelfordRowInto, void, P_WELFORD_INTO, (x, mean, m2, count, n))
#define P_COL_SUM_EXP(M) (const M* x, const M* m, double* s, int64_t w)
MIXT_ROWS_BOTH(ColSumExp, ColSumExp, void, P_COL_SUM_EXP, (x, m, s, w))
#define P_COL_OUT(M) (const M* x, const M* m, const M* k, M* y, int64_t w, bool log)
MIXT_ROWS_BOTH(ColSoftmaxOut, ColSoftmaxOut, void, P_COL_OUT, (x, m, k, y, w, log))
#define P_COL_BW_SUM(M) (const M* g, const M* y, double* s, int64_t w, bool log)
MIXT_ROWS_BOTH(ColBackwardSum, ColBackwardSum, void, P_COL_BW_SUM, (g, y, s, w, log))
#define P_COL_BW_OUT(M) (const M* g, const M* y, const M* k, M* gx, int64_t w, bool log)
MIXT_ROWS_BOTH(ColBackwardOut, ColBackwardOut, void, P_COL_BW_OUT, (g, y, k, gx, w, log))
#define P_ADD_INTO(M) (const M* x, double* acc, int64_t n)
MIXT_ROWS_BOTH(AddInto, AddRowInto, void, P_ADD_INTO, (x, acc, n))
#undef MIXT_ROWS_BOTH
#undef P_SOFTMAX
#undef P_SOFTMAX_BW
#undef P_CE_SUMS
#undef P_CE_GRAD
#undef P_MOMENTS
#undef P_AFFINE
#undef P_GRAD_SUMS
#undef P_INPUT_GRAD
#undef P_COLUMN_SUMS
#undef P_SUM
#undef P_ADD_INTO
#undef P_SUM_EXP
#undef P_EXTREMUM_INTO
#undef P_ABS_INTO
#undef P_WELFORD_INTO
#undef P_COL_SUM_EXP
#undef P_COL_OUT
#undef P_COL_BW_SUM
#undef P_COL_BW_OUT
#undef P_ABS_SUM

}  // namespace mixt::cpu::vec::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <mixt/kernels/cpu/vec/dispatch.h>

namespace mixt::cpu::vec {

// The function of the active instruction set among the per-target FUNC.
#define MIXT_ROWS_CALL(FUNC, ...)                                               \
  do {                                                                          \
    static const IsaTable<decltype(&HWY_STATIC_DISPATCH(FUNC))> table = MIXT_VEC_TABLE(FUNC); \
    return table.get()(__VA_ARGS__);                                            \
  } while (0)

void softmax_row(const float* x, float* y, int64_t n, bool log) { MIXT_ROWS_CALL(SoftmaxF32, x, y, n, log); }
void softmax_row(const double* x, double* y, int64_t n, bool log) { MIXT_ROWS_CALL(SoftmaxF64, x, y, n, log); }
void softmax_backward_row(const float* g, const float* y, float* gx, int64_t n, bool log) {
  MIXT_ROWS_CALL(SoftmaxBackwardF32, g, y, gx, n, log);
}
void softmax_backward_row(const double* g, const double* y, double* gx, int64_t n, bool log) {
  MIXT_ROWS_CALL(SoftmaxBackwardF64, g, y, gx, n, log);
}
CrossEntropySums cross_entropy_sums(const float* x, const float* w, int64_t n, bool gaps) {
  MIXT_ROWS_CALL(CrossEntropySumsF32, x, w, n, gaps);
}
CrossEntropySums cross_entropy_sums(const double* x, const double* w, int64_t n, bool gaps) {
  MIXT_ROWS_CALL(CrossEntropySumsF64, x, w, n, gaps);
}
void cross_entropy_grad_row(const float* x, const float* w, float* gx, int64_t n, float lse,
                            const cross_entropy_math::RowGrad<float>& r, int64_t target) {
  MIXT_ROWS_CALL(CrossEntropyGradF32, x, w, gx, n, lse, r, target);
}
void cross_entropy_grad_row(const double* x, const double* w, double* gx, int64_t n, double lse,
                            const cross_entropy_math::RowGrad<double>& r, int64_t target) {
  MIXT_ROWS_CALL(CrossEntropyGradF64, x, w, gx, n, lse, r, target);
}
RowMoments row_moments(const float* x, int64_t n, bool centred) { MIXT_ROWS_CALL(RowMomentsF32, x, n, centred); }
RowMoments row_moments(const double* x, int64_t n, bool centred) { MIXT_ROWS_CALL(RowMomentsF64, x, n, centred); }
void norm_affine_row(const float* x, float* y, int64_t n, double mean, double rstd, const double* w,
                     const double* b) {
  MIXT_ROWS_CALL(NormAffineF32, x, y, n, mean, rstd, w, b);
}
void norm_affine_row(const double* x, double* y, int64_t n, double mean, double rstd, const double* w,
                     const double* b) {
  MIXT_ROWS_CALL(NormAffineF64, x, y, n, mean, rstd, w, b);
}
NormGradSums norm_grad_sums(const float* g, const float* x, const double* w, int64_t n, double mean, double rstd) {
  MIXT_ROWS_CALL(NormGradSumsF32, g, x, w, n, mean, rstd);
}
NormGradSums norm_grad_sums(const double* g, const double* x, const double* w, int64_t n, double mean,
                            double rstd) {
  MIXT_ROWS_CALL(NormGradSumsF64, g, x, w, n, mean, rstd);
}
void norm_input_grad_row(const float* g, const float* x, const double* w, float* gx, int64_t n, double mean,
                         double rstd, double dot_mean, double g_mean) {
  MIXT_ROWS_CALL(NormInputGradF32, g, x, w, gx, n, mean, rstd, dot_mean, g_mean);
}
void norm_input_grad_row(const double* g, const double* x, const double* w, double* gx, int64_t n, double mean,
                         double rstd, double dot_mean, double g_mean) {
  MIXT_ROWS_CALL(NormInputGradF64, g, x, w, gx, n, mean, rstd, dot_mean, g_mean);
}
void norm_column_sums(const float* g, const float* x, int64_t n, double mean, double rstd, double* gw_sum,
                      double* gb_sum) {
  MIXT_ROWS_CALL(NormColumnSumsF32, g, x, n, mean, rstd, gw_sum, gb_sum);
}
void norm_column_sums(const double* g, const double* x, int64_t n, double mean, double rstd, double* gw_sum,
                      double* gb_sum) {
  MIXT_ROWS_CALL(NormColumnSumsF64, g, x, n, mean, rstd, gw_sum, gb_sum);
}
double sum_row(const float* x, int64_t n) { MIXT_ROWS_CALL(SumF32, x, n); }
double sum_row(const double* x, int64_t n) { MIXT_ROWS_CALL(SumF64, x, n); }
void extremum_row_into(const float* x, float* acc, int64_t n, bool max) { MIXT_ROWS_CALL(ExtremumIntoF32, x, acc, n, max); }
void extremum_row_into(const double* x, double* acc, int64_t n, bool max) { MIXT_ROWS_CALL(ExtremumIntoF64, x, acc, n, max); }
void add_abs_row_into(const float* x, double* acc, int64_t n, bool squares) { MIXT_ROWS_CALL(AbsIntoF32, x, acc, n, squares); }
void add_abs_row_into(const double* x, double* acc, int64_t n, bool squares) { MIXT_ROWS_CALL(AbsIntoF64, x, acc, n, squares); }
void welford_row_into(const float* x, double* mean, double* m2, int64_t count, int64_t n) {
  MIXT_ROWS_CALL(WelfordIntoF32, x, mean, m2, count, n);
}
void welford_row_into(const double* x, double* mean, double* m2, int64_t count, int64_t n) {
  MIXT_ROWS_CALL(WelfordIntoF64, x, mean, m2, count, n);
}
void col_sum_exp(const float* x, const float* m, double* s, int64_t w) { MIXT_ROWS_CALL(ColSumExpF32, x, m, s, w); }
void col_sum_exp(const double* x, const double* m, double* s, int64_t w) { MIXT_ROWS_CALL(ColSumExpF64, x, m, s, w); }
void col_softmax_out(const float* x, const float* m, const float* k, float* y, int64_t w, bool log) {
  MIXT_ROWS_CALL(ColSoftmaxOutF32, x, m, k, y, w, log);
}
void col_softmax_out(const double* x, const double* m, const double* k, double* y, int64_t w, bool log) {
  MIXT_ROWS_CALL(ColSoftmaxOutF64, x, m, k, y, w, log);
}
void col_backward_sum(const float* g, const float* y, double* s, int64_t w, bool log) {
  MIXT_ROWS_CALL(ColBackwardSumF32, g, y, s, w, log);
}
void col_backward_sum(const double* g, const double* y, double* s, int64_t w, bool log) {
  MIXT_ROWS_CALL(ColBackwardSumF64, g, y, s, w, log);
}
void col_backward_out(const float* g, const float* y, const float* k, float* gx, int64_t w, bool log) {
  MIXT_ROWS_CALL(ColBackwardOutF32, g, y, k, gx, w, log);
}
void col_backward_out(const double* g, const double* y, const double* k, double* gx, int64_t w, bool log) {
  MIXT_ROWS_CALL(ColBackwardOutF64, g, y, k, gx, w, log);
}
double sum_exp_row(const float* x, int64_t n, double m) { MIXT_ROWS_CALL(SumExpF32, x, n, m); }
double sum_exp_row(const double* x, int64_t n, double m) { MIXT_ROWS_CALL(SumExpF64, x, n, m); }
double abs_sum_row(const float* x, int64_t n, bool squares) { MIXT_ROWS_CALL(AbsSumF32, x, n, squares); }
double abs_sum_row(const double* x, int64_t n, bool squares) { MIXT_ROWS_CALL(AbsSumF64, x, n, squares); }
float extremum_row(const float* x, int64_t n, bool max) { MIXT_ROWS_CALL(ExtremumF32, x, n, max); }
double extremum_row(const double* x, int64_t n, bool max) { MIXT_ROWS_CALL(ExtremumF64, x, n, max); }
void add_row_into(const float* x, double* acc, int64_t n) { MIXT_ROWS_CALL(AddIntoF32, x, acc, n); }
void add_row_into(const double* x, double* acc, int64_t n) { MIXT_ROWS_CALL(AddIntoF64, x, acc, n); }

#undef MIXT_ROWS_CALL

}  // namespace mixt::cpu::vec
#endif  // HWY_ONCE
