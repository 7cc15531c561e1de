// Composite nn ops: one kernel for every backend, written with front-end calls
// (autograd differentiates through the ops they call). group_norm, batch_norm,
// dropout, the losses, cosine_similarity, scaled_dot_product_attention and the
// convolutions (im2col + matmul). Narrow floats (float16, bfloat16, float8)
// compute in float32 and the result is rounded once to the input's dtype.
#include <cmath>
#include <limits>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/conv_geometry.h>
#include <mixt/kernels/composite/helpers.h>
#include <mixt/kernels/composite/register.h>
#include <mixt/kernels/composite/spatial.h>
#include <mixt/runtime/autograd/grad_mode.h>
#include <mixt/runtime/ops/nn.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {
namespace {

namespace F = nn::functional;
using F::Reduction;
using namespace composite;

// ---- shared helpers (and kernels/composite/helpers.h) ----

// A per-channel parameter (weight, bias, running stats): undefined, or floating with `n` elements in one dim.
void check_channel_param(const OpCall& c, const Tensor& t, int64_t n, const char* what) {
  if (!t.defined()) return;
  check_floating(c, t, what);
  MIXT_CHECK_OP(t.dim() == 1 && t.size(0) == n, c, "expected a {} of shape [{}], got {}", what, n, t.sizes());
}

// The sizes [1, n, 1, ...] (rank `rank`) that broadcast a per-channel vector over dim 1.
Shape channel_view(int64_t n, int64_t rank) {
  Shape s = Shape::filled(static_cast<int>(rank), 1);
  s[1] = n;
  return s;
}

// y * weight + bias with per-channel parameters broadcast over dim 1 (either may be undefined).
Tensor channel_affine(Tensor y, const Tensor& w, const Tensor& b) {
  const Shape v = channel_view(y.size(1), y.dim());
  if (w.defined()) y = mul(y, reshape(up(w), v));
  if (b.defined()) y = add(y, reshape(up(b), v));
  return y;
}

// The sizes of `s` from position `from` on.
Shape tail(const Shape& s, int from) {
  Shape r;
  for (int i = from; i < s.size(); ++i) r.push_back(s[i]);
  return r;
}

// ---- normalization and dropout ----

void group_norm_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& x = c.in[0];
  const auto& a = c.attrs.get<attrs::GroupNorm>();
  const int64_t groups = a.groups;
  const double eps = a.eps;
  check_floating(c, x, "input");
  MIXT_CHECK_OP(x.dim() >= 2, c, "expected an input [N, C, *], got shape {}", x.sizes());
  const int64_t n = x.size(0), channels = x.size(1);
  MIXT_CHECK_OP(groups > 0 && channels % groups == 0, c,
                "expected the number of channels ({}) to be divisible by num_groups ({})", channels, groups);
  check_channel_param(c, opt(c, 1), channels, "weight");
  check_channel_param(c, opt(c, 2), channels, "bias");
  const int64_t per_group = channels / groups * tail(x.sizes(), 2).numel();
  const Tensor y = F::layer_norm(reshape(up(x), {n, groups, per_group}), {per_group}, {}, {}, eps);
  finish(c, channel_affine(reshape(y, x.sizes()), opt(c, 1), opt(c, 2)), x.dtype());
}

void batch_norm_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& x = c.in[0];
  Tensor running_mean = c.in[1], running_var = c.in[2];
  const auto& a = c.attrs.get<attrs::BatchNorm>();
  const bool training = a.training;
  const double momentum = a.momentum, eps = a.eps;
  check_floating(c, x, "input");
  MIXT_CHECK_OP(x.dim() >= 2, c, "expected an input [N, C, *], got shape {}", x.sizes());
  const int64_t channels = x.size(1);
  check_channel_param(c, running_mean, channels, "running_mean");
  check_channel_param(c, running_var, channels, "running_var");
  check_channel_param(c, opt(c, 3), channels, "weight");
  check_channel_param(c, opt(c, 4), channels, "bias");
  const Shape v = channel_view(channels, x.dim());
  const Tensor xf = up(x);
  Tensor mu, var;
  if (training) {
    Shape dims{0};
    for (int64_t d = 2; d < x.dim(); ++d) dims.push_back(d);
    const int64_t count = x.numel() / std::max<int64_t>(1, channels);
    MIXT_CHECK_OP(count > 1, c, "expected more than 1 value per channel when training, got an input of shape {}",
                  x.sizes());
    mu = mean(xf, dims, /*keepdim=*/true);
    var = mixt::var(xf, dims, /*correction=*/0.0, /*keepdim=*/true);
    autograd::NoGradGuard no_grad;  // running statistics: momentum update with the unbiased variance
    const double unbias = static_cast<double>(count) / static_cast<double>(count - 1);
    copy_(running_mean, add(mul(up(running_mean), 1.0 - momentum), mul(reshape(mu, {channels}), momentum)));
    copy_(running_var, add(mul(up(running_var), 1.0 - momentum), mul(reshape(var, {channels}), momentum * unbias)));
  } else {
    mu = reshape(running_mean.to(xf.dtype()), v);
    var = reshape(running_var.to(xf.dtype()), v);
  }
  const Tensor y = mul(sub(xf, mu), rsqrt(add(var, eps)));
  finish(c, channel_affine(y, opt(c, 3), opt(c, 4)), x.dtype());
}

// Checks a dropout probability (shared with attention).
void check_probability(const OpCall& c, double p) {
  MIXT_CHECK_OP(p >= 0.0 && p <= 1.0, c, "dropout probability has to be between 0 and 1, but got {}", p);
}

void dropout_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& x = c.in[0];
  const auto& a = c.attrs.get<attrs::Dropout>();
  const double p = a.p;
  check_probability(c, p);
  check_floating(c, x, "input");
  if (!a.training || p == 0.0 || x.numel() == 0) {
    c.out[0] = x;
    return;
  }
  if (p == 1.0) {
    c.out[0] = mul(x, 0.0);
    return;
  }
  const Tensor xf = up(x);
  const Tensor keep = ge(rand_like(xf, {}, c.attrs.generator), p);
  finish(c, mul(xf, mul(keep.to(xf.dtype()), 1.0 / (1.0 - p))), x.dtype());
}

// ---- class-index losses ----

// Per-target terms of a negative log likelihood: loss = -w[t] * logp[t] and its weight w[t] (both 0 where the
// target is ignore_index). Shapes follow the target.
struct Picked {
  Tensor loss, weight;
};

// Checks the dtype and shape of class-index targets for log-probabilities (or logits) `logp`
// ([C], [N, C] or [N, C, d...]).
void check_target_shape(const OpCall& c, const Tensor& logp, const Tensor& target) {
  MIXT_CHECK_OP(is_integral(target.dtype()), c, "expected class-index targets of an integer dtype, got {}",
                target.dtype());
  Shape want = logp.sizes();
  if (logp.dim() > 0) want.erase(logp.dim() == 1 ? 0 : 1);
  MIXT_CHECK_OP(target.sizes() == want, c, "expected a target of shape {} for an input of shape {}, got {}", want,
                logp.sizes(), target.sizes());
}

// Validates class-index targets for log-probabilities `logp`: their shape, and each value a
// class or ignore_index.
void check_targets(const OpCall& c, const Tensor& logp, const Tensor& target, int64_t ignore_index) {
  check_target_shape(c, logp, target);
  const int64_t classes = logp.size(logp.dim() == 1 ? 0 : 1);
  if (target.is_meta()) return;  // the values' check needs values (Note [Meta functions])
  const Tensor t = target.to(kInt64);
  const Tensor bad = logical_and(ne(t, ignore_index), logical_or(lt(t, 0), ge(t, classes)));
  if (!any(bad).item<bool>()) return;
  const std::vector<int64_t> tv = t.to_vector<int64_t>();
  const std::vector<uint8_t> bv = bad.to(kUInt8).to_vector<uint8_t>();
  for (size_t i = 0; i < tv.size(); ++i)
    MIXT_CHECK_OP(!bv[i], c, "target {} is out of bounds: classes are [0, {}) (ignore_index {})", tv[i], classes,
                  ignore_index);
}

Picked pick(const OpCall& c, const Tensor& logp, const Tensor& target, const Tensor& weight, int64_t ignore_index) {
  check_targets(c, logp, target, ignore_index);
  const bool single = logp.dim() == 1;
  const Tensor x = single ? unsqueeze(logp, 0) : logp;
  const Tensor t = single ? unsqueeze(target.to(kInt64), 0) : target.to(kInt64);
  const Tensor valid = ne(t, ignore_index);
  const Tensor safe = where(valid, t, Scalar(0));
  const Tensor picked = squeeze(gather(x, 1, unsqueeze(safe, 1)), {1});
  Tensor w = valid.to(picked.dtype());
  if (weight.defined()) w = mul(reshape(index_select(up(weight), 0, reshape(safe, {-1})), safe.sizes()), w);
  Picked r{neg(mul(picked, w)), w};
  if (single) r = {squeeze(r.loss, {0}), squeeze(r.weight, {0})};
  return r;
}

// none / sum / the weighted mean sum(loss) / sum(w[t]) (NaN when every target is ignored, as PyTorch).
Tensor reduce_weighted(const Tensor& loss, const Tensor& weight, Reduction r) {
  if (r == Reduction::Mean) return div(sum(loss), sum(weight));
  return reduce(loss, r);
}

Tensor class_dim_weight(const OpCall& c, const Tensor& weight, const Tensor& logits) {
  const int64_t cls = logits.dim() == 1 ? 0 : 1, classes = logits.size(cls);
  check_channel_param(c, weight, classes, "class weight");
  if (!weight.defined()) return weight;
  return logits.dim() == 1 ? up(weight) : reshape(up(weight), channel_view(classes, logits.dim()));
}

void nll_loss_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& logp = c.in[0];
  check_floating(c, logp, "input");
  MIXT_CHECK_OP(logp.dim() >= 1, c, "expected an input [C], [N, C] or [N, C, d...], got a 0-D tensor");
  class_dim_weight(c, opt(c, 2), logp);
  const auto& a = c.attrs.get<attrs::NllLoss>();
  const Picked p = pick(c, up(logp), c.in[1], opt(c, 2), a.ignore_index);
  finish(c, reduce_weighted(p.loss, p.weight, checked(c, a.reduction)), logp.dtype());
}

// Cross entropy against class probabilities (the logits' shape), smoothed by label_smoothing.
Tensor soft_target_loss(const OpCall& c, const Tensor& logp, const Tensor& target, const Tensor& w, double smoothing,
                        Reduction r) {
  MIXT_CHECK_OP(target.sizes() == logp.sizes(), c, "probability targets must have the logits' shape {}, got {}",
                logp.sizes(), target.sizes());
  const int64_t cls = logp.dim() == 1 ? 0 : 1, classes = logp.size(cls);
  Tensor t = up(target);
  if (smoothing > 0) t = add(mul(t, 1.0 - smoothing), smoothing / static_cast<double>(classes));
  Tensor terms = mul(logp, t);
  if (w.defined()) terms = mul(terms, w);
  const Tensor loss = neg(sum(terms, {cls}));
  if (r != Reduction::Mean) return reduce(loss, r);
  return div(sum(loss), static_cast<double>(logp.numel() / std::max<int64_t>(1, classes)));
}

// True when cross_entropy runs on cross_entropy_rows (Note [Fused cross-entropy]): class-index
// targets, at least one class, and a weight that is absent or takes no gradient.
bool fuses(const Tensor& logits, const Tensor& target, const Tensor& weight) {
  if (is_floating(target.dtype()) || logits.size(logits.dim() == 1 ? 0 : 1) < 1) return false;
  return !weight.defined() || !(weight.requires_grad() && autograd::is_grad_enabled());
}

// cross_entropy on cross_entropy_rows: logits [C] as one row, [N, C] as they are, and
// [N, C, d...] with the class dim moved last (a copy into [N * d, C] rows; its cost is one
// pass over the logits, less than the unfused path's log_softmax output and its reads).
// The per-row losses are then reduced: none in the target's shape, sum, or the weighted
// mean sum(loss) / sum(w[t]) over the rows not ignored (NaN when all are, as PyTorch).
Tensor fused_cross_entropy(const OpCall& c, const Tensor& logits, const Tensor& target, const Tensor& weight,
                           const attrs::CrossEntropy& a, Reduction r) {
  // The kernels check the target values as they read them: the CPU's raises at the call, CUDA's
  // records the bad value on the device and raises at the next wait (as PyTorch's device-side
  // assert), so a training step's loss costs no device-to-host sync.
  check_target_shape(c, logits, target);
  const int64_t classes = logits.size(logits.dim() == 1 ? 0 : 1);
  Tensor x = logits;
  if (logits.dim() > 2) {
    Shape dims{0};
    for (int64_t d = 2; d < logits.dim(); ++d) dims.push_back(d);
    dims.push_back(1);
    x = permute(logits, dims);
  }
  x = reshape(x, {-1, classes});
  Tensor t = reshape(target, {-1});
  if (t.dtype() != kInt64 && t.dtype() != kInt32) t = t.to(kInt64);
  const ScalarType acc = accumulate_type(logits.dtype());
  const Tensor w = weight.defined() ? weight.to(acc) : weight;
  const Tensor loss = F::cross_entropy_rows(x, t, w, a.ignore_index, a.label_smoothing).loss;
  if (r == Reduction::None) return reshape(loss, target.sizes());
  if (r == Reduction::Sum) return sum(loss);
  const Tensor valid = ne(t, a.ignore_index);
  const Tensor w_t = w.defined() ? mul(index_select(w, 0, where(valid, t, Scalar(0))), valid.to(acc)) : valid.to(acc);
  return div(sum(loss), sum(w_t));
}

void cross_entropy_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& logits = c.in[0];
  const Tensor& target = c.in[1];
  const auto& a = c.attrs.get<attrs::CrossEntropy>();
  const double smoothing = a.label_smoothing;
  const Reduction r = checked(c, a.reduction);
  check_floating(c, logits, "input");
  MIXT_CHECK_OP(logits.dim() >= 1, c, "expected logits [C], [N, C] or [N, C, d...], got a 0-D tensor");
  MIXT_CHECK_OP(smoothing >= 0.0 && smoothing <= 1.0, c, "label_smoothing must be between 0.0 and 1.0, got {}",
                smoothing);
  const int64_t cls = logits.dim() == 1 ? 0 : 1, classes = logits.size(cls);
  const Tensor w = class_dim_weight(c, opt(c, 2), logits);
  if (fuses(logits, target, opt(c, 2))) {
    finish(c, fused_cross_entropy(c, logits, target, opt(c, 2), a, r), logits.dtype());
    return;
  }
  const Tensor logp = F::log_softmax(up(logits), cls);
  if (is_floating(target.dtype())) {
    finish(c, soft_target_loss(c, logp, target, w, smoothing, r), logits.dtype());
    return;
  }
  const Picked p = pick(c, logp, target, opt(c, 2), a.ignore_index);
  Tensor loss = reduce_weighted(p.loss, p.weight, r);
  if (smoothing > 0) {
    // PyTorch's rule: (1 - s) * nll + s / C * (the sum of -w_c logp_c over classes, reduced like the nll).
    const Tensor spread = neg(sum(w.defined() ? mul(logp, w) : logp, {cls}));
    const Tensor smooth = masked_fill(spread, eq(target.to(kInt64), a.ignore_index), 0.0);
    const Tensor smooth_r = reduce_weighted(smooth, p.weight, r);
    loss = add(mul(loss, 1.0 - smoothing), mul(smooth_r, smoothing / static_cast<double>(classes)));
  }
  finish(c, loss, logits.dtype());
}

// ---- elementwise losses ----

// |a - b| below `knee`: quadratic (scaled by `quad`), above: linear (slope `slope`), continuous at the knee.
Tensor piecewise_loss(const Tensor& diff, double knee, double quad, double slope) {
  const Tensor d = abs(diff);
  return where(lt(d, knee), mul(mul(d, d), quad), mul(sub(d, 0.5 * knee), slope));
}

void pair_loss_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType dt = pair_dtype(c, c.in[0], c.in[1]);
  const Tensor diff = sub(up(c.in[0]), up(c.in[1]));
  // smooth_l1's beta or huber's delta (mse and l1 have neither).
  const double s = c.op == OpId::smooth_l1_loss ? c.attrs.get<attrs::SmoothL1>().beta
                   : c.op == OpId::huber_loss   ? c.attrs.get<attrs::Huber>().delta
                                                : 1.0;
  const Reduction r = c.op == OpId::smooth_l1_loss ? c.attrs.get<attrs::SmoothL1>().reduction
                      : c.op == OpId::huber_loss   ? c.attrs.get<attrs::Huber>().reduction
                                                   : c.attrs.get<attrs::Loss>().reduction;
  Tensor loss;
  switch (c.op) {
    case OpId::mse_loss:
      loss = mul(diff, diff);
      break;
    case OpId::l1_loss:
      loss = abs(diff);
      break;
    case OpId::smooth_l1_loss:
      MIXT_CHECK_OP(s >= 0, c, "beta must be non-negative, got {}", s);
      loss = s == 0 ? abs(diff) : piecewise_loss(diff, s, 0.5 / s, 1.0);
      break;
    default:  // huber_loss
      MIXT_CHECK_OP(s > 0, c, "delta must be positive, got {}", s);
      loss = piecewise_loss(diff, s, 0.5, s);
      break;
  }
  finish(c, reduce(loss, checked(c, r)), dt);
}

// The optional elementwise weight of a binary loss: floating and broadcastable to the input.
Tensor loss_weight(const OpCall& c, int i, const Tensor& input, const char* what) {
  const Tensor w = opt(c, i);
  if (!w.defined()) return w;
  check_floating(c, w, what);
  bool fits = w.dim() <= input.dim();
  for (int64_t i = 1; fits && i <= w.dim(); ++i) fits = w.size(-i) == 1 || w.size(-i) == input.size(-i);
  MIXT_CHECK_OP(fits, c, "the {} of shape {} does not broadcast to the input's shape {}", what, w.sizes(),
                input.sizes());
  return up(w);
}

void check_same_shape(const OpCall& c, const Tensor& input, const Tensor& target) {
  check_floating(c, input, "input");
  check_floating(c, target, "target");
  MIXT_CHECK_OP(target.sizes() == input.sizes(), c, "the target size {} must be the same as the input size {}",
                target.sizes(), input.sizes());
}

void binary_cross_entropy_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& p = c.in[0];
  check_same_shape(c, p, c.in[1]);
  MIXT_CHECK_OP(p.is_meta() || all(logical_and(ge(p, 0), le(p, 1))).item<bool>(), c,
                "all elements of the input (probabilities) should be between 0 and 1");
  const Tensor pf = up(p), y = up(c.in[1]), w = loss_weight(c, 2, p, "weight");
  const Tensor log_p = clamp_min(log(pf), -100), log_q = clamp_min(log1p(neg(pf)), -100);
  Tensor loss = neg(add(mul(y, log_p), mul(sub(1.0, y), log_q)));
  if (w.defined()) loss = mul(loss, w);
  finish(c, reduce(loss, checked(c, c.attrs.get<attrs::Loss>().reduction)), p.dtype());
}

// (1 - y) x + (1 + (pos_weight - 1) y) softplus(-x): stable for large |x|.
void bce_with_logits_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& x = c.in[0];
  check_same_shape(c, x, c.in[1]);
  const Tensor xf = up(x), y = up(c.in[1]);
  const Tensor w = loss_weight(c, 2, x, "weight"), pw = loss_weight(c, 3, x, "pos_weight");
  const Tensor sp = F::softplus(neg(xf));
  Tensor loss = add(mul(sub(1.0, y), xf), pw.defined() ? mul(add(mul(sub(pw, 1.0), y), 1.0), sp) : sp);
  if (w.defined()) loss = mul(loss, w);
  finish(c, reduce(loss, checked(c, c.attrs.get<attrs::Loss>().reduction)), x.dtype());
}

// target * (log target - input), 0 where target == 0; with log_target: exp(target) * (target - input).
void kl_div_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType dt = pair_dtype(c, c.in[0], c.in[1]);
  const Tensor x = up(c.in[0]), t = up(c.in[1]);
  const auto& a = c.attrs.get<attrs::KlDiv>();
  const Tensor loss = a.log_target ? mul(exp(t), sub(t, x)) : mul(t, sub(log(where(eq(t, 0), Scalar(1.0), t)), x));
  finish(c, reduce(loss, checked(c, a.reduction)), dt);
}

// ---- similarity and attention ----

void cosine_similarity_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& a = c.in[0];
  const Tensor& b = c.in[1];
  const Shape shape = broadcast_shapes(a.sizes(), b.sizes(), "cosine_similarity");
  ScalarType dt = promote_types_or_undefined(a.dtype(), b.dtype());
  MIXT_CHECK_OP(dt != ScalarType::Undefined, c, "no common dtype for {} and {}", a.dtype(), b.dtype());
  if (!is_floating(dt)) dt = kFloat32;  // integer and bool inputs compare as float32, as PyTorch
  const auto& at = c.attrs.get<attrs::CosineSimilarity>();
  const Shape dim{wrap_dim(at.dim, shape.size(), "cosine_similarity")};
  const double eps = at.eps;
  const Tensor x = up(expand(a.to(dt), shape)), y = up(expand(b.to(dt), shape));
  // Each side is divided by its (clamped) norm first: the result stays within [-1, 1].
  const Tensor nx = clamp_min(norm(x, 2.0, dim, /*keepdim=*/true), eps);
  const Tensor ny = clamp_min(norm(y, 2.0, dim, /*keepdim=*/true), eps);
  finish(c, sum(mul(div(x, nx), div(y, ny)), dim), dt);
}

void check_attention(const OpCall& c, const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask) {
  check_floating(c, q, "query");
  MIXT_CHECK_OP(q.dtype() == k.dtype() && q.dtype() == v.dtype(), c,
                "expected query, key and value of one dtype, got {}, {} and {}", q.dtype(), k.dtype(), v.dtype());
  MIXT_CHECK_OP(q.dim() >= 2 && k.dim() >= 2 && v.dim() >= 2, c,
                "expected query [..., L, E], key [..., S, E] and value [..., S, Ev]");
  MIXT_CHECK_OP(q.size(-1) == k.size(-1), c, "query and key have different embedding sizes: {} and {}", q.size(-1),
                k.size(-1));
  MIXT_CHECK_OP(k.size(-2) == v.size(-2), c, "key and value have different sequence lengths: {} and {}", k.size(-2),
                v.size(-2));
  if (!mask.defined()) return;
  MIXT_CHECK_OP(!c.attrs.get<attrs::Attention>().is_causal, c,
                "is_causal cannot be combined with an explicit attn_mask");
  MIXT_CHECK_OP(mask.dtype() == kBool || is_floating(mask.dtype()), c,
                "attn_mask must be bool (true = attend) or floating (added to the scores), got {}", mask.dtype());
  broadcast_shapes(mask.sizes(), {q.size(-2), k.size(-2)}, "scaled_dot_product_attention");
}

void sdpa_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &q = c.in[0], &k = c.in[1], &v = c.in[2];
  const Tensor mask = opt(c, 3);
  const auto& a = c.attrs.get<attrs::Attention>();
  const double p = a.dropout_p;
  check_attention(c, q, k, v, mask);
  check_probability(c, p);
  const int64_t L = q.size(-2), S = k.size(-2);
  const double scale = a.scale.value_or(1.0 / std::sqrt(static_cast<double>(q.size(-1))));
  Tensor scores = mul(matmul(up(q), transpose(up(k), -2, -1)), scale);
  Tensor keep = mask.defined() && mask.dtype() == kBool ? mask : Tensor();
  if (a.is_causal) {
    const TensorOptions o{.dtype = kInt64, .device = q.device()};
    keep = ge(unsqueeze(arange(L, o), 1), unsqueeze(arange(S, o), 0));  // lower triangle, top-left aligned
  }
  if (mask.defined() && mask.dtype() != kBool) scores = add(scores, up(mask));
  const double inf = std::numeric_limits<double>::infinity();
  if (keep.defined()) scores = where(keep, scores, Scalar(-inf));
  // A row with nothing to attend to gives zeros (PyTorch's safe softmax), not NaN, and so do its gradients: its
  // scores are replaced before the softmax.
  const Tensor dead = all(eq(scores, -inf), {-1}, /*keepdim=*/true);
  Tensor probs = where(dead, Scalar(0.0), F::softmax(where(dead, Scalar(0.0), scores), -1));
  if (p > 0) probs = F::dropout(probs, p, true, c.attrs.generator);
  finish(c, matmul(probs, up(v)), q.dtype());
}

// ---- convolutions ----

// Output spatial sizes of a convolution of an image of spatial size `in`.
Shape conv_output_sizes(const OpCall& c, const Shape& in, const Shape& kernel, const attrs::Conv& a) {
  Shape out;
  for (int i = 0; i < kernel.size(); ++i)
    out.push_back(window_output_size(c, in[i], kernel[i], a.stride[i], a.padding[i], a.dilation[i]));
  return out;
}

// conv1d / conv2d / conv3d (Rank spatial dims): im2col, one grouped matmul, bias.
template <int Rank>
void conv_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &x_in = c.in[0], &w = c.in[1];
  const Tensor b = opt(c, 2);
  const auto& a = c.attrs.get<attrs::Conv>();
  const int64_t groups = a.groups;
  check_floating(c, x_in, "input");
  MIXT_CHECK_OP(x_in.dtype() == w.dtype() && (!b.defined() || b.dtype() == w.dtype()), c,
                "input, weight and bias must have one dtype");
  MIXT_CHECK_OP(x_in.dim() == Rank + 1 || x_in.dim() == Rank + 2, c,
                "expected a {}-D (unbatched) or {}-D (batched) input, got shape {}", Rank + 1, Rank + 2, x_in.sizes());
  MIXT_CHECK_OP(w.dim() == Rank + 2, c, "expected a {}-D weight [C_out, C_in / groups, *kernel], got shape {}",
                Rank + 2, w.sizes());
  const bool batched = x_in.dim() == Rank + 2;
  const Tensor x = batched ? x_in : unsqueeze(x_in, 0);
  const int64_t n = x.size(0), c_in = x.size(1), c_out = w.size(0);
  MIXT_CHECK_OP(groups > 0 && c_in % groups == 0 && c_out % groups == 0, c,
                "groups ({}) must be positive and divide both the input channels ({}) and the output channels ({})",
                groups, c_in, c_out);
  MIXT_CHECK_OP(w.size(1) == c_in / groups, c, "the weight of shape {} expects {} input channels, the input has {}",
                w.sizes(), w.size(1) * groups, c_in);
  check_channel_param(c, b, c_out, "bias");
  const Shape kernel = tail(w.sizes(), 2);
  MIXT_CHECK_OP(a.stride.size() == Rank && a.padding.size() == Rank && a.dilation.size() == Rank, c,
                "expected stride, padding and dilation with {} values each, got {}, {}, {}", Rank, a.stride,
                a.padding, a.dilation);
  const Shape out_spatial = conv_output_sizes(c, tail(x.sizes(), 2), kernel, a);
  // [N, C_in * K, L]; the im2col kernels take 1-D and 2-D windows.
  const Tensor cols = Rank <= 2 ? F::im2col(x, kernel, a.stride, a.padding, a.dilation)
                                : unfold_windows(c, x, kernel, a.stride, a.padding, a.dilation);
  const int64_t ck = c_in / groups * kernel.numel(), blocks = out_spatial.numel();
  const ScalarType acc = is_reduced_float(x.dtype()) ? kFloat32 : ScalarType::Undefined;
  const Tensor prod = matmul(reshape(w, {groups, c_out / groups, ck}), reshape(cols, {n, groups, ck, blocks}), acc);
  Shape out_sizes{n, c_out};
  for (int64_t s : out_spatial) out_sizes.push_back(s);
  Tensor y = channel_affine(reshape(prod, out_sizes), Tensor(), b);
  finish(c, batched ? y : squeeze(y, {0}), x.dtype());
}

}  // namespace

void register_nn_composite_kernels() {
  register_composite(OpId::group_norm, group_norm_kernel);
  register_composite(OpId::batch_norm, batch_norm_kernel);
  register_composite(OpId::dropout, dropout_kernel);
  register_composite(OpId::cross_entropy, cross_entropy_kernel);
  register_composite(OpId::nll_loss, nll_loss_kernel);
  for (OpId id : {OpId::mse_loss, OpId::l1_loss, OpId::smooth_l1_loss, OpId::huber_loss})
    register_composite(id, pair_loss_kernel);
  register_composite(OpId::binary_cross_entropy, binary_cross_entropy_kernel);
  register_composite(OpId::binary_cross_entropy_with_logits, bce_with_logits_kernel);
  register_composite(OpId::kl_div, kl_div_kernel);
  register_composite(OpId::cosine_similarity, cosine_similarity_kernel);
  register_composite(OpId::scaled_dot_product_attention, sdpa_kernel);
  register_composite(OpId::conv1d, conv_kernel<1>);
  register_composite(OpId::conv2d, conv_kernel<2>);
  register_composite(OpId::conv3d, conv_kernel<3>);
}

}  // namespace mixt
