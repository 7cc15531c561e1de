// The arithmetic of the fused cross-entropy row kernels (cross_entropy_rows and its
// backward; Note [Fused cross-entropy]), shared by kernels/cpu and kernels/cuda. Plain C++
// with MIXT_HD, so the host tests run it.
//
// For a row x of C logits with maximum m, target t, class weights w (all 1 without a
// weight), W = sum of w, label smoothing eps:
//   s      = sum over c of exp(x_c - m)               (>= 1)
//   lse    = m + log(s)
//   loss   = (1 - eps) w_t (lse - x_t) + (eps / C) sum over c of w_c (lse - x_c)
// written as sums of terms that are never negative, so nothing cancels:
//   lse - x_t                  = log(s) + (m - x_t)
//   sum of w_c (lse - x_c)     = W log(s) + sum of w_c (m - x_c)
// A row whose target is ignore_index has loss 0 and gradient 0.
//   d loss / d x_c = (1 - eps) w_t (p_c - [c == t]) + (eps / C) (W p_c - w_c), p_c = exp(x_c - lse)
#pragma once

#include <cstdint>

#include <mixt/runtime/macros.h>

namespace mixt::cross_entropy_math {

enum class TargetKind : int8_t { Class, Ignored, OutOfBounds };

// What a row's target t is among `classes` classes. ignore_index wins over a class: a
// row whose target equals it is ignored even when it names a class (PyTorch's rule).
MIXT_HD inline TargetKind target_kind(int64_t t, int64_t classes, int64_t ignore_index) {
  if (t == ignore_index) return TargetKind::Ignored;
  return t >= 0 && t < classes ? TargetKind::Class : TargetKind::OutOfBounds;
}

// One row's loss from log(s), the target's gap m - x_t, its weight w_t, the weighted gap
// sum G = sum of w_c (m - x_c), W = sum of w_c, eps and C. G and W are read only when eps > 0.
MIXT_HD inline double row_loss(double log_s, double target_gap, double w_t, double gap_sum, double sum_w,
                               double eps, double classes) {
  const double nll = w_t * (log_s + target_gap);
  if (eps == 0.0) return nll;
  return (1.0 - eps) * nll + eps / classes * (sum_w * log_s + gap_sum);
}

// The per-row constants of the gradient, each multiplied by the row's upstream gradient g.
template <class M>
struct RowGrad {
  M hot;     // g (1 - eps) w_t: subtracted at the target, and with `spread` times p everywhere
  M spread;  // g ((1 - eps) w_t + eps W / C): the factor of p_c
  M flat;    // g eps / C: times w_c, subtracted everywhere
};

template <class M>
MIXT_HD inline RowGrad<M> row_grad(double g, double w_t, double sum_w, double eps, double classes) {
  const double hot = g * (1.0 - eps) * w_t, flat = g * eps / classes;
  return {static_cast<M>(hot), static_cast<M>(hot + flat * sum_w), static_cast<M>(flat)};
}

// The gradient of logit c: spread p_c - flat w_c - (c == t ? hot : 0).
template <class M>
MIXT_HD inline M logit_grad(const RowGrad<M>& r, M p, M w_c, bool is_target) {
  const M v = r.spread * p - r.flat * w_c;
  return is_target ? v - r.hot : v;
}

}  // namespace mixt::cross_entropy_math
