// Independent references of the nn ops, losses, optimizer steps and grad-scaler
// unscale: double loops written from PyTorch's documented formulas (see
// reference.h for the conventions). They never call mixt.
#pragma once

#include <functional>

#include "reference.h"

namespace mixt::testing::ref {

// ---- softmax and normalization ----
// softmax (or log_softmax) along `dim`, max-subtracted.
Ref softmax(const Ref& x, int64_t dim, bool log);
// Each row of `cols` values: (x - mean) / sqrt(var + eps) * w + b, the biased variance; with `rms`,
// x / sqrt(mean(x^2) + eps) * w. Empty w / b: none.
Vec norm_rows(const Vec& x, int64_t cols, double eps, const Vec& w, const Vec& b, bool rms = false);
// layer_norm / rms_norm over the trailing `normalized` elements of x.
Ref layer_norm(const Ref& x, int64_t normalized, const Vec& w, const Vec& b, double eps);
Ref rms_norm(const Ref& x, int64_t normalized, const Vec& w, double eps);
// The gradient of softmax (log_softmax with `log`) along `dim` from the output gradient g and the
// output y: the vector-Jacobian product with the Jacobian written out element by element
// (d y_j / d x_i = y_j (delta_ij - y_i); for log_softmax delta_ij - exp(y_i)).
Ref softmax_backward(const Ref& g, const Ref& y, int64_t dim, bool log);
// d/dx of gelu (exact: Phi(x) + x phi(x); with `tanh`, of PyTorch's tanh approximation
// 0.5 x (1 + tanh(k (x + 0.044715 x^3)))) and of silu (s (1 + x (1 - s)), s = sigmoid(x)).
double gelu_derivative(double x, bool tanh);
double silu_derivative(double x);
// The gradients of layer_norm (rms_norm with `rms`) over rows of `cols` with eps, from the output
// gradient g: which = 0 for x (through the Jacobian of xhat = (x - mean) / sqrt(var + eps),
// written out element by element), 1 for the weight (sum over rows of g * xhat), 2 for the bias
// (sum over rows of g). Empty w: none.
Ref norm_backward(const Ref& g, const Ref& x, int64_t cols, const Vec& w, double eps, bool rms, int which);
// group_norm of x [N, C, *]: statistics per (sample, group), then per-channel w and b.
Ref group_norm(const Ref& x, int64_t groups, const Vec& w, const Vec& b, double eps);
// batch_norm of x [N, C, *]: with `training`, the batch's mean and biased variance per
// channel; else `mean`, `var` (the running statistics). Then per-channel w and b.
Ref batch_norm(const Ref& x, const Vec& mean, const Vec& var, const Vec& w, const Vec& b, bool training, double eps);
// The per-channel batch mean and biased variance of x [N, C, *].
void channel_stats(const Ref& x, Vec& mean, Vec& var);

// ---- convolution ----
struct ConvGeom {
  int64_t sh = 1, sw = 1, ph = 0, pw = 0, dh = 1, dw = 1, groups = 1;
};
// Direct 2-D convolution of x [N, C, H, W] with w [O, C / groups, KH, KW] and an optional bias [O]
// (1-D: H = KH = 1).
Ref conv2d(const Ref& x, const Ref& w, const Vec& bias, const ConvGeom& g);
// im2col of x [N, C, H, W] with a KH x KW window: [N, C * KH * KW, OH * OW] (zeros from padding).
Ref im2col(const Ref& x, int64_t KH, int64_t KW, const ConvGeom& g);
// col2im, im2col's adjoint: columns [N, C * KH * KW, L] summed into [N, C, H, W].
Ref col2im(const Ref& cols, int64_t H, int64_t W, int64_t KH, int64_t KW, const ConvGeom& g);

// ---- attention and similarity ----
// softmax(q k^T * scale + bias) v over the trailing two dims; `keep` (bool, broadcast to [L, S])
// masks scores to -Inf, `causal` keeps s <= l; a row with nothing to attend to gives zeros.
Ref attention(const Ref& q, const Ref& k, const Ref& v, double scale, const Ref* keep, const Ref* bias, bool causal);
// sum over `dim` of (a / max(|a|, eps)) * (b / max(|b|, eps)), a and b broadcast together.
Ref cosine_similarity(const Ref& a, const Ref& b, int64_t dim, double eps);

// ---- losses ----
enum class Reduce { None, Mean, Sum };
// Per-element losses reduced like the op: the mean divides by `denominator`.
Ref reduce_loss(const Ref& per, Reduce r, double denominator);
// Cross entropy of logits [N, C, d...] (or [C]) against class indices [N, d...] (or []), PyTorch's rule:
// (1 - s) * (-w[t] logp[t]) + s / C * sum_c(-w[c] logp[c]); the mean divides by the sum of w[t] over
// targets not ignored (NaN when all are). `already_log`: the inputs are log-probabilities (nll_loss,
// then s must be 0).
Ref cross_entropy(const Ref& logits, const Ref& target, const Vec& weight, int64_t ignore_index, Reduce r,
                  double smoothing, bool already_log = false);
// The rows of cross_entropy_rows (logits [N, C], target [N]): each row's logsumexp, and the
// gradient of the per-row losses (cross_entropy with Reduce::None) times g [N], written as
// g (A p_c - a_c) with a_c = (1 - s) w_t [c == t] + s w_c / C, A = sum of a_c, p = softmax
// (0 on rows whose target is ignore_index).
Ref logsumexp_rows(const Ref& logits);
Ref cross_entropy_rows_grad(const Ref& g, const Ref& logits, const Ref& target, const Vec& weight,
                            int64_t ignore_index, double smoothing);
// Cross entropy against class probabilities of the logits' shape, smoothed; the mean divides by N * d...
Ref cross_entropy_probs(const Ref& logits, const Ref& probs, const Vec& weight, Reduce r, double smoothing);
// Pair losses of broadcast (input, target): "mse", "l1", "smooth_l1" (beta), "huber" (delta).
Ref pair_loss(const std::string& kind, const Ref& a, const Ref& b, Reduce r, double param = 1.0);
// -w (y log p + (1 - y) log(1 - p)), each log clamped at -100; w broadcast (nullptr: 1).
Ref binary_cross_entropy(const Ref& p, const Ref& y, const Ref* w, Reduce r);
// -w (pw y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))), stable form; w and pw broadcast.
Ref bce_with_logits(const Ref& x, const Ref& y, const Ref* w, const Ref* pw, Reduce r);
// t (log t - x) (0 where t == 0), or exp(t) (t - x) with log_target.
Ref kl_div(const Ref& x, const Ref& t, Reduce r, bool log_target);

// ---- optimizer steps (torch.optim's rules), on values in double ----
// `store` rounds a parameter to its storage dtype after each step (identity for float64).
struct SgdRule {
  double lr = 1e-3, momentum = 0, dampening = 0, weight_decay = 0;
  bool nesterov = false;
};
struct SgdState {
  SgdRule rule;
  Vec buf = {};
  void step(Vec& p, Vec g, const std::function<double(double)>& store = {});
};
// Adam (L2 weight decay added to the gradient) or AdamW (decoupled: p *= 1 - lr wd), bias-corrected.
struct AdamRule {
  double lr = 1e-3, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 0;
  bool amsgrad = false, decoupled = false;
};
struct AdamState {
  AdamRule rule;
  Vec m = {}, v = {}, vmax = {};
  int t = 0;
  void step(Vec& p, Vec g, const std::function<double(double)>& store = {});
};

// The parameter `p` after `steps` steps of `state` (SgdState or AdamState) with the same gradient,
// stored with `store` (rounding to the parameter's dtype) between steps; the last step's value is
// exact, for the comparison to round. Ref::slack: one ulp (`ulp`) at each stored intermediate
// value, where the kernel's float32 update may round a near-tie to the other neighbour (the
// steps after it carry that ulp along).
template <class State>
Ref steps_in_dtype(State state, Ref p, const Vec& g, int steps, const std::function<double(double)>& store,
                   const std::function<double(double)>& ulp) {
  p.slack.assign(p.v.size(), 0.0);
  for (int s = 0; s < steps; ++s) {
    const bool last = s + 1 == steps;
    state.step(p.v, g, last ? std::function<double(double)>() : store);
    if (!last)
      for (size_t i = 0; i < p.v.size(); ++i) p.slack[i] += ulp(p.v[i]);
  }
  return p;
}

}  // namespace mixt::testing::ref
