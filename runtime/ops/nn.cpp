// Front ends of the neural-network ops (runtime/nn/functional.h).
#include <mixt/dispatcher/dispatch.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/nn/functional.h>

namespace mixt::nn::functional {
namespace {

OpCall make_call(OpId id, std::initializer_list<Tensor> required, std::initializer_list<Tensor> optional = {}) {
  OpCall c(id);
  for (const Tensor& t : required) {
    MIXT_CHECK(t.defined(), op_name(id), "a required input is undefined");
    c.push(t);
  }
  // Optional inputs keep their positions: an absent one before a present one stays as an undefined slot.
  int last = -1, i = 0;
  for (const Tensor& t : optional) {
    if (t.defined()) last = i;
    ++i;
  }
  i = 0;
  for (const Tensor& t : optional)
    if (i++ <= last) c.push(t);
  return c;
}

// Packs one value per spatial dim for each of the lists (conv geometry).
Shape pack(std::initializer_list<const Shape*> lists, int rank, const char* op) {
  Shape out;
  for (const Shape* l : lists) {
    MIXT_CHECK(l->size() == rank || l->size() == 1, op, "expected {} values (or one), got {}", rank, l->str());
    for (int d = 0; d < rank; ++d) out.push_back(l->size() == 1 ? (*l)[0] : (*l)[d]);
  }
  return out;
}

}  // namespace

Tensor softmax(const Tensor& x, int64_t dim, ScalarType dtype) {
  OpCall c = make_call(OpId::softmax, {x});
  c.attrs.dim = dim;
  c.attrs.dtype = dtype;
  return call_op(c);
}

Tensor log_softmax(const Tensor& x, int64_t dim, ScalarType dtype) {
  OpCall c = make_call(OpId::log_softmax, {x});
  c.attrs.dim = dim;
  c.attrs.dtype = dtype;
  return call_op(c);
}

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  OpCall c = make_call(OpId::layer_norm, {x}, {weight, bias});
  c.attrs.shape = normalized_shape;
  c.attrs.s0 = eps;
  return call_op(c);
}

Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, std::optional<double> eps) {
  OpCall c = make_call(OpId::rms_norm, {x}, {weight});
  c.attrs.shape = normalized_shape;
  if (eps) c.attrs.s0 = *eps;
  return call_op(c);
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  OpCall c = make_call(OpId::group_norm, {x}, {weight, bias});
  c.attrs.i0 = num_groups;
  c.attrs.s0 = eps;
  return call_op(c);
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  OpCall c = make_call(OpId::batch_norm, {x, running_mean, running_var}, {weight, bias});
  c.attrs.flag = training;
  c.attrs.s0 = momentum;
  c.attrs.s1 = eps;
  return call_op(c);
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  OpCall c = make_call(OpId::dropout, {x});
  c.attrs.s0 = p;
  c.attrs.flag = training;
  c.attrs.generator = gen;
  return call_op(c);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                     Reduction reduction, double label_smoothing) {
  OpCall c = make_call(OpId::cross_entropy, {logits, target}, {weight});
  c.attrs.i0 = ignore_index;
  c.attrs.i1 = static_cast<int64_t>(reduction);
  c.attrs.s0 = label_smoothing;
  return call_op(c);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                Reduction reduction) {
  OpCall c = make_call(OpId::nll_loss, {log_probs, target}, {weight});
  c.attrs.i0 = ignore_index;
  c.attrs.i1 = static_cast<int64_t>(reduction);
  return call_op(c);
}

#define MIXT_DEFINE_PAIR_LOSS(name)                                                  \
  Tensor name(const Tensor& input, const Tensor& target, Reduction reduction) {      \
    OpCall c = make_call(OpId::name, {input, target});                               \
    c.attrs.i1 = static_cast<int64_t>(reduction);                                    \
    return call_op(c);                                                               \
  }
MIXT_DEFINE_PAIR_LOSS(mse_loss)
MIXT_DEFINE_PAIR_LOSS(l1_loss)
#undef MIXT_DEFINE_PAIR_LOSS

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, double beta) {
  OpCall c = make_call(OpId::smooth_l1_loss, {input, target});
  c.attrs.i1 = static_cast<int64_t>(reduction);
  c.attrs.s0 = beta;
  return call_op(c);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta) {
  OpCall c = make_call(OpId::huber_loss, {input, target});
  c.attrs.i1 = static_cast<int64_t>(reduction);
  c.attrs.s0 = delta;
  return call_op(c);
}

Tensor binary_cross_entropy(const Tensor& probs, const Tensor& target, const Tensor& weight, Reduction reduction) {
  OpCall c = make_call(OpId::binary_cross_entropy, {probs, target}, {weight});
  c.attrs.i1 = static_cast<int64_t>(reduction);
  return call_op(c);
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target, const Tensor& weight,
                                        const Tensor& pos_weight, Reduction reduction) {
  OpCall c = make_call(OpId::binary_cross_entropy_with_logits, {logits, target}, {weight, pos_weight});
  c.attrs.i1 = static_cast<int64_t>(reduction);
  return call_op(c);
}

Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction, bool log_target) {
  OpCall c = make_call(OpId::kl_div, {input, target});
  c.attrs.i1 = static_cast<int64_t>(reduction);
  c.attrs.flag = log_target;
  return call_op(c);
}

Tensor cosine_similarity(const Tensor& a, const Tensor& b, int64_t dim, double eps) {
  OpCall c = make_call(OpId::cosine_similarity, {a, b});
  c.attrs.dim = dim;
  c.attrs.s0 = eps;
  return call_op(c);
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
                                    double dropout_p, bool is_causal, std::optional<double> scale, Generator* gen) {
  OpCall c = make_call(OpId::scaled_dot_product_attention, {q, k, v}, {attn_mask});
  c.attrs.s0 = dropout_p;
  if (scale) c.attrs.s1 = *scale;
  c.attrs.flag = is_causal;
  c.attrs.generator = gen;
  return call_op(c);
}

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
              int64_t dilation, int64_t groups) {
  OpCall c = make_call(OpId::conv1d, {x, weight}, {bias});
  c.attrs.shape = Shape{stride, padding, dilation};
  c.attrs.i0 = groups;
  return call_op(c);
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Shape& stride, const Shape& padding,
              const Shape& dilation, int64_t groups) {
  OpCall c = make_call(OpId::conv2d, {x, weight}, {bias});
  c.attrs.shape = pack({&stride, &padding, &dilation}, 2, "conv2d");
  c.attrs.i0 = groups;
  return call_op(c);
}

Tensor im2col(const Tensor& x, const Shape& kernel, const Shape& stride, const Shape& padding,
              const Shape& dilation) {
  MIXT_CHECK(kernel.size() == 1 || kernel.size() == 2, "im2col", "1-D or 2-D windows only (kernel {})", kernel);
  OpCall c = make_call(OpId::im2col, {x});
  c.attrs.shape = pack({&kernel, &stride, &padding, &dilation}, kernel.size(), "im2col");
  return call_op(c);
}

Tensor col2im(const Tensor& cols, const Shape& spatial, const Shape& kernel, const Shape& stride,
              const Shape& padding, const Shape& dilation) {
  MIXT_CHECK(kernel.size() == 1 || kernel.size() == 2, "col2im", "1-D or 2-D windows only (kernel {})", kernel);
  OpCall c = make_call(OpId::col2im, {cols});
  c.attrs.shape = pack({&kernel, &stride, &padding, &dilation}, kernel.size(), "col2im");
  c.attrs.shape2 = spatial;
  return call_op(c);
}

}  // namespace mixt::nn::functional
