// Composite margin, embedding and Poisson losses (runtime/ops/nn.h): poisson_nll_loss,
// cosine_embedding_loss, hinge_embedding_loss, margin_ranking_loss,
// triplet_margin_loss, multilabel_margin_loss, soft_margin_loss and
// multi_margin_loss, each written with front-end calls as PyTorch composes them, so
// every backend runs them and autograd differentiates through them. Narrow floats
// compute in float32 and the result is rounded once. Operands that PyTorch broadcasts
// warn when their shapes differ (loss_broadcast); the rest is refused as PyTorch does.
#include <cmath>
#include <numbers>

#include <mixt/kernels/composite/helpers.h>
#include <mixt/kernels/composite/register.h>
#include <mixt/runtime/ops/nn.h>

namespace mixt {
namespace {

namespace F = nn::functional;
using namespace composite;

// Class-index targets: an integer dtype, every value in [lo, classes) (not checked on meta tensors, which
// have no values).
void check_class_indices(const OpCall& c, const Tensor& target, int64_t lo, int64_t classes) {
  MIXT_CHECK_OP(is_integral(target.dtype()), c, "expected class-index targets of an integer dtype, got {}",
                target.dtype());
  if (target.is_meta() || target.numel() == 0) return;
  const Tensor t = target.to(kInt64);
  const int64_t smallest = amin(t).item<int64_t>(), largest = amax(t).item<int64_t>();
  MIXT_CHECK_OP(smallest >= lo && largest < classes, c, "target values [{}, {}] are out of bounds: classes are [{}, {})",
                smallest, largest, lo, classes);
}

// An input of class scores [C] or [N, C].
void check_scores(const OpCall& c, const Tensor& x) {
  check_floating(c, x, "input");
  MIXT_CHECK_OP(x.dim() == 1 || x.dim() == 2, c, "expected an input [C] or [N, C], got shape {}", x.sizes());
}

// ---- regression-style losses ----

// exp(x) - t x (log_input) or x - t log(x + eps), plus Stirling's t log t - t + log(2 pi t) / 2 where t > 1
// when `full`.
void poisson_nll_loss_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType dt = pair_dtype(c, c.in[0], c.in[1]);
  const auto& a = c.attrs.get<attrs::PoissonNll>();
  const Tensor x = up(c.in[0]), t = up(c.in[1]);
  Tensor loss = a.log_input ? sub(exp(x), mul(t, x)) : sub(x, mul(t, log(add(x, a.eps))));
  if (a.full) {
    // Evaluated at 1 where t <= 1 (then dropped), so the masked terms give no NaN gradient.
    const Tensor above = gt(t, 1), ts = where(above, t, Scalar(1.0));
    const Tensor stirling = add(sub(mul(ts, log(ts)), ts), mul(log(mul(ts, 2 * std::numbers::pi)), 0.5));
    loss = add(loss, where(above, stirling, Scalar(0.0)));
  }
  finish(c, reduce(loss, checked(c, a.reduction)), dt);
}

// log(1 + exp(-t x)), as softplus (which stays finite where exp overflows).
void soft_margin_loss_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType dt = pair_dtype(c, c.in[0], c.in[1]);
  const Tensor loss = F::softplus(neg(mul(up(c.in[1]), up(c.in[0]))));
  finish(c, reduce(loss, checked(c, c.attrs.get<attrs::Loss>().reduction)), dt);
}

// ---- margin losses of pairs and triplets ----

// x where t != -1, plus max(0, margin - x) where t != 1 (PyTorch's two masks: 1 and -1 select one term each).
void hinge_embedding_loss_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &input = c.in[0], &t = c.in[1];
  check_floating(c, input, "input");
  loss_broadcast(c, input.sizes(), t.sizes(), "input", "target");
  const auto& a = c.attrs.get<attrs::MarginLoss>();
  const Tensor x = up(input);
  const Tensor hinge = where(ne(t, 1), clamp_min(sub(a.margin, x), 0), Scalar(0.0));
  const Tensor loss = add(hinge, where(ne(t, -1), x, Scalar(0.0)));
  finish(c, reduce(loss, checked(c, a.reduction)), input.dtype());
}

// max(0, -t (x1 - x2) + margin); the three operands have one number of dims.
void margin_ranking_loss_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &x1 = c.in[0], &x2 = c.in[1], &t = c.in[2];
  MIXT_CHECK_OP(x1.dim() == x2.dim() && x1.dim() == t.dim(), c,
                "all input tensors should have the same number of dims, got input1 {}, input2 {} and target {}",
                x1.sizes(), x2.sizes(), t.sizes());
  ScalarType dt = pair_dtype(c, x1, x2, "input1", "input2");
  loss_broadcast(c, broadcast_shapes(x1.sizes(), x2.sizes(), "margin_ranking_loss"), t.sizes(), "inputs", "target");
  dt = promote_types_or_undefined(dt, t.dtype());
  MIXT_CHECK_OP(dt != ScalarType::Undefined, c, "no common dtype for the inputs and a {} target", t.dtype());
  const auto& a = c.attrs.get<attrs::MarginLoss>();
  const Tensor loss = clamp_min(add(mul(neg(up(t)), sub(up(x1), up(x2))), a.margin), 0);
  finish(c, reduce(loss, checked(c, a.reduction)), dt);
}

// Rows of x1 and x2 ([N, D] with a target [N], or [D] with a 0-D target): 1 - cos where t == 1,
// max(0, cos - margin) where t == -1, 0 elsewhere; cos = x1.x2 / sqrt((|x1|^2 + 1e-12) (|x2|^2 + 1e-12)).
void cosine_embedding_loss_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &x1 = c.in[0], &x2 = c.in[1], &t = c.in[2];
  MIXT_CHECK_OP(t.dim() <= 1, c, "expected a 0-D or 1-D target (multi-target is not supported), got shape {}",
                t.sizes());
  const int64_t want = t.dim() + 1;
  MIXT_CHECK_OP(x1.dim() == want && x2.dim() == want, c,
                "a {}-D target expects {}-D inputs, but found inputs of shapes {} and {}", t.dim(), want, x1.sizes(),
                x2.sizes());
  const ScalarType dt = pair_dtype(c, x1, x2, "input1", "input2");
  Shape rows = broadcast_shapes(x1.sizes(), x2.sizes(), "cosine_embedding_loss");
  rows.erase(rows.size() - 1);
  loss_broadcast(c, rows, t.sizes(), "inputs' rows", "target");
  const Tensor a = up(x1), b = up(x2);
  const Shape d{t.dim()};
  const double eps = 1e-12;
  const Tensor norms = mul(add(sum(mul(a, a), d), eps), add(sum(mul(b, b), d), eps));
  const Tensor cos = div(sum(mul(a, b), d), sqrt(norms));
  const auto& at = c.attrs.get<attrs::MarginLoss>();
  const Tensor similar = where(eq(t, 1), sub(1.0, cos), Scalar(0.0));
  const Tensor dissimilar = where(eq(t, -1), clamp_min(sub(cos, at.margin), 0), Scalar(0.0));
  finish(c, reduce(add(similar, dissimilar), checked(c, at.reduction)), dt);
}

// The p-norm of x - y + eps over the last dim (PyTorch's pairwise_distance).
Tensor pairwise_distance(const Tensor& x, const Tensor& y, double p, double eps) {
  return norm(add(sub(x, y), eps), p, {-1});
}

void triplet_margin_loss_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &an = c.in[0], &po = c.in[1], &ng = c.in[2];
  MIXT_CHECK_OP(an.dim() >= 1 && an.dim() == po.dim() && po.dim() == ng.dim(), c,
                "the anchor, positive and negative tensors are expected to have one number of dims (at least 1), "
                "but got anchor {}, positive {} and negative {}",
                an.sizes(), po.sizes(), ng.sizes());
  const auto& a = c.attrs.get<attrs::TripletMargin>();
  MIXT_CHECK_OP(a.p >= 0, c, "p must be non-negative, got {}", a.p);
  const ScalarType dt_p = pair_dtype(c, an, po, "anchor", "positive");
  const ScalarType dt = promote_types_or_undefined(dt_p, pair_dtype(c, an, ng, "anchor", "negative"));
  const Tensor x = up(an), y = up(po), z = up(ng);
  const Tensor d_pos = pairwise_distance(x, y, a.p, a.eps);
  Tensor d_neg = pairwise_distance(x, z, a.p, a.eps);
  if (a.swap) d_neg = minimum(d_neg, pairwise_distance(y, z, a.p, a.eps));
  const Tensor loss = clamp_min(add(sub(d_pos, d_neg), a.margin), 0);
  finish(c, reduce(loss, checked(c, a.reduction)), dt);
}

// ---- margin losses of class scores ----

// Per sample n: the sum over target classes y (the target's entries before its first -1; a repeated class
// counts again) and non-target classes i of max(0, 1 - x[y] + x[i]), / C.
void multilabel_margin_loss_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &input = c.in[0], &target = c.in[1];
  check_scores(c, input);
  MIXT_CHECK_OP(target.sizes() == input.sizes(), c, "expected a target of the input's shape {}, got {}",
                input.sizes(), target.sizes());
  const int64_t classes = input.size(-1);
  check_class_indices(c, target, -1, classes);
  const bool single = input.dim() == 1;
  const Tensor x = single ? unsqueeze(up(input), 0) : up(input);
  const Tensor t = single ? unsqueeze(target.to(kInt64), 0) : target.to(kInt64);  // [N, J]
  const Tensor listed = eq(cumsum(eq(t, -1), 1), 0);                                  // before the first -1
  const Tensor y = where(listed, t, Scalar(0));
  const Tensor all_classes = arange(classes, {.dtype = kInt64, .device = input.device()});
  const Tensor picks = logical_and(eq(unsqueeze(y, 2), all_classes), unsqueeze(listed, 2));  // [N, J, C]
  const Tensor is_target = any(picks, {1});                                                  // [N, C]
  const Tensor counted = logical_and(unsqueeze(listed, 2), unsqueeze(logical_not(is_target), 1));
  const Tensor hinge = clamp_min(add(sub(1.0, unsqueeze(gather(x, 1, y), 2)), unsqueeze(x, 1)), 0);  // [N, J, C]
  Tensor loss = div(sum(where(counted, hinge, Scalar(0.0)), {1, 2}), static_cast<double>(classes));
  if (single) loss = squeeze(loss, {0});
  finish(c, reduce(loss, checked(c, c.attrs.get<attrs::Loss>().reduction)), input.dtype());
}

// Per sample n with class y: the sum over i != y of weight[y] * max(0, margin - x[y] + x[i])^p, / C.
void multi_margin_loss_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &input = c.in[0], &target = c.in[1];
  const Tensor weight = opt(c, 2);
  const auto& a = c.attrs.get<attrs::MultiMargin>();
  check_scores(c, input);
  MIXT_CHECK_OP(a.p == 1 || a.p == 2, c, "only p == 1 and p == 2 are supported, got {}", a.p);
  const int64_t n = input.dim() == 2 ? input.size(0) : 1, classes = input.size(-1);
  MIXT_CHECK_OP(target.numel() == n && target.dim() <= 1 && (input.dim() == 1 || target.dim() == 1), c,
                "expected a target of shape [{}] for an input of shape {}, got {}", n, input.sizes(), target.sizes());
  check_class_indices(c, target, 0, classes);
  if (weight.defined()) {
    check_floating(c, weight, "weight");
    MIXT_CHECK_OP(weight.dim() == 1 && weight.size(0) == classes, c, "expected a weight of shape [{}], got {}",
                  classes, weight.sizes());
  }
  const Tensor x = reshape(up(input), {n, classes}), t = reshape(target.to(kInt64), {n, 1});
  Tensor hinge = clamp_min(add(sub(x, gather(x, 1, t)), a.margin), 0);  // [N, C]
  if (a.p == 2) hinge = mul(hinge, hinge);
  if (weight.defined()) hinge = mul(hinge, index_select(up(weight), 0, reshape(t, {n})).view({n, 1}));
  const Tensor others = ne(t, arange(classes, {.dtype = kInt64, .device = input.device()}));
  const Tensor loss = div(sum(where(others, hinge, Scalar(0.0)), {1}), static_cast<double>(classes));
  // Reduction none: one loss per target element (a 0-D target gives a 0-D loss).
  finish(c, reduce(reshape(loss, target.sizes()), checked(c, a.reduction)), input.dtype());
}

}  // namespace

void register_loss_composite_kernels() {
  register_composite(OpId::poisson_nll_loss, poisson_nll_loss_kernel);
  register_composite(OpId::soft_margin_loss, soft_margin_loss_kernel);
  register_composite(OpId::hinge_embedding_loss, hinge_embedding_loss_kernel);
  register_composite(OpId::margin_ranking_loss, margin_ranking_loss_kernel);
  register_composite(OpId::cosine_embedding_loss, cosine_embedding_loss_kernel);
  register_composite(OpId::triplet_margin_loss, triplet_margin_loss_kernel);
  register_composite(OpId::multilabel_margin_loss, multilabel_margin_loss_kernel);
  register_composite(OpId::multi_margin_loss, multi_margin_loss_kernel);
}

}  // namespace mixt
