// Front ends of the neural-network ops (runtime/ops/nn.h).
#include <mixt/dispatcher/dispatch.h>
#include <mixt/runtime/autograd/grad_mode.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/ops/nn.h>
#include <mixt/runtime/ops/ops.h>

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

// One value per spatial dim: `l` as given, or its single value repeated (conv geometry).
Shape per_dim(const Shape& l, int rank, const char* op, const char* what) {
  MIXT_CHECK(l.size() == rank || l.size() == 1, op, "expected {} values (or one) for {}, got {}", rank, what, l);
  return l.size() == 1 ? Shape::filled(rank, l[0]) : l;
}

GeluApprox gelu_approx(std::string_view approximate, const char* op = "gelu") {
  if (approximate == "none") return GeluApprox::None;
  if (approximate == "tanh") return GeluApprox::Tanh;
  MIXT_FAIL(op, "approximate must be \"none\" or \"tanh\" (got \"{}\")", approximate);
}

}  // namespace

Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias, ScalarType out_dtype) {
  OpCall c = make_call(OpId::linear, {input, weight}, {bias});
  c.attrs.dtype = out_dtype;
  return call_op(c);
}

LinearGrads linear_backward(const Tensor& grad_output, const Tensor& input, const Tensor& weight, bool input_grad,
                            bool weight_grad, bool bias_grad) {
  OpCall c = make_call(OpId::linear_backward, {grad_output, input, weight});
  attrs::LinearBackward& a = c.attrs.get<attrs::LinearBackward>();
  a.input_grad = input_grad;
  a.weight_grad = weight_grad;
  a.bias_grad = bias_grad;
  dispatch(c);
  return {std::move(c.out[0]), std::move(c.out[1]), std::move(c.out[2])};
}

Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx) {
  // The op's inputs are (weight, indices), as ATen's.
  OpCall c = make_call(OpId::embedding, {weight, input});
  if (padding_idx && *padding_idx < 0 && weight.dim() > 0) {
    const int64_t rows = weight.size(0);
    MIXT_CHECK(*padding_idx >= -rows, "embedding", "padding_idx {} is out of range for {} embeddings", *padding_idx,
               rows);
    *padding_idx += rows;
  }
  c.attrs.get<attrs::Embedding>().padding_idx = padding_idx;
  return call_op(c);
}

Tensor gelu(const Tensor& x, std::string_view approximate) {
  OpCall c = make_call(OpId::gelu, {x});
  c.attrs.get<attrs::Gelu>().approximate = gelu_approx(approximate);
  return call_op(c);
}

Tensor& gelu_(Tensor& x, std::string_view approximate) {
  OpCall c = make_call(OpId::gelu_, {x});
  c.attrs.get<attrs::Gelu>().approximate = gelu_approx(approximate);
  return call_inplace(c, x);
}

Tensor silu(const Tensor& x) {
  OpCall c = make_call(OpId::silu, {x});
  return call_op(c);
}

Tensor& silu_(Tensor& x) {
  OpCall c = make_call(OpId::silu_, {x});
  return call_inplace(c, x);
}

Tensor softplus(const Tensor& x, double beta, double threshold) {
  OpCall c = make_call(OpId::softplus, {x});
  c.attrs.get<attrs::Softplus>() = {beta, threshold};
  return call_op(c);
}

Tensor& softplus_(Tensor& x, double beta, double threshold) {
  OpCall c = make_call(OpId::softplus_, {x});
  c.attrs.get<attrs::Softplus>() = {beta, threshold};
  return call_inplace(c, x);
}

namespace {
// An activation without attributes, and its in-place form.
Tensor unary_activation(OpId id, const Tensor& x) {
  OpCall c = make_call(id, {x});
  return call_op(c);
}
Tensor& unary_activation_(OpId id, Tensor& x) {
  OpCall c = make_call(id, {x});
  return call_inplace(c, x);
}
}  // namespace

Tensor hardtanh(const Tensor& x, double min_val, double max_val) {
  OpCall c = make_call(OpId::hardtanh, {x});
  c.attrs.get<attrs::Hardtanh>() = {min_val, max_val};
  return call_op(c);
}

Tensor& hardtanh_(Tensor& x, double min_val, double max_val) {
  OpCall c = make_call(OpId::hardtanh_, {x});
  c.attrs.get<attrs::Hardtanh>() = {min_val, max_val};
  return call_inplace(c, x);
}

Tensor hardswish(const Tensor& x) { return unary_activation(OpId::hardswish, x); }
Tensor& hardswish_(Tensor& x) { return unary_activation_(OpId::hardswish_, x); }

Tensor hardsigmoid(const Tensor& x) { return unary_activation(OpId::hardsigmoid, x); }
Tensor& hardsigmoid_(Tensor& x) { return unary_activation_(OpId::hardsigmoid_, x); }

Tensor leaky_relu(const Tensor& x, double negative_slope) {
  OpCall c = make_call(OpId::leaky_relu, {x});
  c.attrs.get<attrs::LeakyRelu>().negative_slope = negative_slope;
  return call_op(c);
}

Tensor& leaky_relu_(Tensor& x, double negative_slope) {
  OpCall c = make_call(OpId::leaky_relu_, {x});
  c.attrs.get<attrs::LeakyRelu>().negative_slope = negative_slope;
  return call_inplace(c, x);
}

Tensor elu(const Tensor& x, double alpha, double scale, double input_scale) {
  OpCall c = make_call(OpId::elu, {x});
  c.attrs.get<attrs::Elu>() = {alpha, scale, input_scale};
  return call_op(c);
}

Tensor& elu_(Tensor& x, double alpha, double scale, double input_scale) {
  OpCall c = make_call(OpId::elu_, {x});
  c.attrs.get<attrs::Elu>() = {alpha, scale, input_scale};
  return call_inplace(c, x);
}

Tensor selu(const Tensor& x) { return unary_activation(OpId::selu, x); }
Tensor& selu_(Tensor& x) { return unary_activation_(OpId::selu_, x); }

Tensor mish(const Tensor& x) { return unary_activation(OpId::mish, x); }
Tensor& mish_(Tensor& x) { return unary_activation_(OpId::mish_, x); }

Tensor prelu(const Tensor& x, const Tensor& weight) {
  OpCall c = make_call(OpId::prelu, {x, weight});
  return call_op(c);
}

Tensor softmax(const Tensor& x, int64_t dim, ScalarType dtype) {
  OpCall c = make_call(OpId::softmax, {x});
  c.attrs.get<attrs::Dim>().dim = dim;
  c.attrs.dtype = dtype;
  return call_op(c);
}

Tensor log_softmax(const Tensor& x, int64_t dim, ScalarType dtype) {
  OpCall c = make_call(OpId::log_softmax, {x});
  c.attrs.get<attrs::Dim>().dim = dim;
  c.attrs.dtype = dtype;
  return call_op(c);
}

Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, const Tensor& bias,
                  double eps) {
  OpCall c = make_call(OpId::layer_norm, {x}, {weight, bias});
  c.attrs.get<attrs::LayerNorm>() = {normalized_shape, eps};
  return call_op(c);
}

Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight, std::optional<double> eps) {
  OpCall c = make_call(OpId::rms_norm, {x}, {weight});
  c.attrs.get<attrs::RmsNorm>() = {normalized_shape, eps};
  return call_op(c);
}

Tensor softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  OpCall c = make_call(OpId::softmax_backward, {grad_output, output});
  c.attrs.get<attrs::Dim>().dim = dim;
  return call_op(c);
}

Tensor log_softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim) {
  OpCall c = make_call(OpId::log_softmax_backward, {grad_output, output});
  c.attrs.get<attrs::Dim>().dim = dim;
  return call_op(c);
}

Tensor gelu_backward(const Tensor& grad_output, const Tensor& self, std::string_view approximate) {
  OpCall c = make_call(OpId::gelu_backward, {grad_output, self});
  c.attrs.get<attrs::Gelu>().approximate = gelu_approx(approximate, "gelu_backward");
  return call_op(c);
}

Tensor silu_backward(const Tensor& grad_output, const Tensor& self) {
  OpCall c = make_call(OpId::silu_backward, {grad_output, self});
  return call_op(c);
}

NormGrads layer_norm_backward(const Tensor& grad_y, const Tensor& x, const Shape& normalized_shape,
                              const Tensor& mean, const Tensor& rstd, const Tensor& weight, NormGradsWanted wanted) {
  OpCall c = make_call(OpId::layer_norm_backward, {grad_y, x, mean, rstd}, {weight});
  c.attrs.get<attrs::NormBackward>() = {normalized_shape, wanted.input, wanted.weight, wanted.bias};
  dispatch(c);
  return {std::move(c.out[0]), std::move(c.out[1]), std::move(c.out[2])};
}

NormGrads rms_norm_backward(const Tensor& grad_y, const Tensor& x, const Shape& normalized_shape, const Tensor& rstd,
                            const Tensor& weight, NormGradsWanted wanted) {
  OpCall c = make_call(OpId::rms_norm_backward, {grad_y, x, rstd}, {weight});
  c.attrs.get<attrs::NormBackward>() = {normalized_shape, wanted.input, wanted.weight, false};
  dispatch(c);
  return {std::move(c.out[0]), std::move(c.out[1]), Tensor()};
}

Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight, const Tensor& bias, double eps) {
  OpCall c = make_call(OpId::group_norm, {x}, {weight, bias});
  c.attrs.get<attrs::GroupNorm>() = {num_groups, eps};
  return call_op(c);
}

Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var, const Tensor& weight,
                  const Tensor& bias, bool training, double momentum, double eps) {
  OpCall c = make_call(OpId::batch_norm, {x, running_mean, running_var}, {weight, bias});
  c.attrs.get<attrs::BatchNorm>() = {training, momentum, eps};
  return call_op(c);
}

Tensor dropout(const Tensor& x, double p, bool training, Generator* gen) {
  OpCall c = make_call(OpId::dropout, {x});
  c.attrs.get<attrs::Dropout>() = {p, training};
  c.attrs.generator = gen;
  return call_op(c);
}

Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                     Reduction reduction, double label_smoothing) {
  OpCall c = make_call(OpId::cross_entropy, {logits, target}, {weight});
  c.attrs.get<attrs::CrossEntropy>() = {ignore_index, reduction, label_smoothing};
  return call_op(c);
}

CrossEntropyRows cross_entropy_rows(const Tensor& logits, const Tensor& target, const Tensor& weight,
                                    int64_t ignore_index, double label_smoothing) {
  MIXT_CHECK(!(weight.defined() && weight.requires_grad() && autograd::is_grad_enabled()), "cross_entropy_rows",
             "the class weight requires grad, and cross_entropy_rows is differentiable in the logits only "
             "(cross_entropy differentiates the weight)");
  OpCall c = make_call(OpId::cross_entropy_rows, {logits, target}, {weight});
  c.attrs.get<attrs::CrossEntropy>() = {ignore_index, Reduction::None, label_smoothing};
  dispatch(c);
  return {std::move(c.out[0]), c.out[1].detach()};
}

Tensor cross_entropy_rows_backward(const Tensor& grad_loss, const Tensor& logits, const Tensor& target,
                                   const Tensor& lse, const Tensor& weight, int64_t ignore_index,
                                   double label_smoothing) {
  OpCall c = make_call(OpId::cross_entropy_rows_backward, {grad_loss, logits, target, lse}, {weight});
  c.attrs.get<attrs::CrossEntropy>() = {ignore_index, Reduction::None, label_smoothing};
  return call_op(c);
}

Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight, int64_t ignore_index,
                Reduction reduction) {
  OpCall c = make_call(OpId::nll_loss, {log_probs, target}, {weight});
  c.attrs.get<attrs::NllLoss>() = {ignore_index, reduction};
  return call_op(c);
}

#define MIXT_DEFINE_PAIR_LOSS(name)                                                  \
  Tensor name(const Tensor& input, const Tensor& target, Reduction reduction) {      \
    OpCall c = make_call(OpId::name, {input, target});                               \
    c.attrs.get<attrs::Loss>().reduction = reduction;                                \
    return call_op(c);                                                               \
  }
MIXT_DEFINE_PAIR_LOSS(mse_loss)
MIXT_DEFINE_PAIR_LOSS(l1_loss)
MIXT_DEFINE_PAIR_LOSS(multilabel_margin_loss)
MIXT_DEFINE_PAIR_LOSS(soft_margin_loss)
#undef MIXT_DEFINE_PAIR_LOSS

Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction, double beta) {
  OpCall c = make_call(OpId::smooth_l1_loss, {input, target});
  c.attrs.get<attrs::SmoothL1>() = {reduction, beta};
  return call_op(c);
}

Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction, double delta) {
  OpCall c = make_call(OpId::huber_loss, {input, target});
  c.attrs.get<attrs::Huber>() = {reduction, delta};
  return call_op(c);
}

Tensor binary_cross_entropy(const Tensor& probs, const Tensor& target, const Tensor& weight, Reduction reduction) {
  OpCall c = make_call(OpId::binary_cross_entropy, {probs, target}, {weight});
  c.attrs.get<attrs::Loss>().reduction = reduction;
  return call_op(c);
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target, const Tensor& weight,
                                        const Tensor& pos_weight, Reduction reduction) {
  OpCall c = make_call(OpId::binary_cross_entropy_with_logits, {logits, target}, {weight, pos_weight});
  c.attrs.get<attrs::Loss>().reduction = reduction;
  return call_op(c);
}

Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction, bool log_target) {
  OpCall c = make_call(OpId::kl_div, {input, target});
  c.attrs.get<attrs::KlDiv>() = {reduction, log_target};
  return call_op(c);
}

Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input, bool full, double eps,
                        Reduction reduction) {
  OpCall c = make_call(OpId::poisson_nll_loss, {input, target});
  c.attrs.get<attrs::PoissonNll>() = {reduction, log_input, full, eps};
  return call_op(c);
}

namespace {
Tensor margin_loss(OpId id, std::initializer_list<Tensor> in, double margin, Reduction reduction) {
  OpCall c = make_call(id, in);
  c.attrs.get<attrs::MarginLoss>() = {reduction, margin};
  return call_op(c);
}
}  // namespace

Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                             Reduction reduction) {
  return margin_loss(OpId::cosine_embedding_loss, {input1, input2, target}, margin, reduction);
}

Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin, Reduction reduction) {
  return margin_loss(OpId::hinge_embedding_loss, {input, target}, margin, reduction);
}

Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin,
                           Reduction reduction) {
  return margin_loss(OpId::margin_ranking_loss, {input1, input2, target}, margin, reduction);
}

Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin,
                           double p, double eps, bool swap, Reduction reduction) {
  OpCall c = make_call(OpId::triplet_margin_loss, {anchor, positive, negative});
  c.attrs.get<attrs::TripletMargin>() = {reduction, margin, p, eps, swap};
  return call_op(c);
}

Tensor multi_margin_loss(const Tensor& input, const Tensor& target, int64_t p, double margin, const Tensor& weight,
                         Reduction reduction) {
  OpCall c = make_call(OpId::multi_margin_loss, {input, target}, {weight});
  c.attrs.get<attrs::MultiMargin>() = {reduction, p, margin};
  return call_op(c);
}

Tensor cosine_similarity(const Tensor& a, const Tensor& b, int64_t dim, double eps) {
  OpCall c = make_call(OpId::cosine_similarity, {a, b});
  c.attrs.get<attrs::CosineSimilarity>() = {dim, eps};
  return call_op(c);
}

Tensor bilinear(const Tensor& x1, const Tensor& x2, const Tensor& weight, const Tensor& bias) {
  OpCall c = make_call(OpId::bilinear, {x1, x2, weight}, {bias});
  return call_op(c);
}

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& attn_mask,
                                    double dropout_p, bool is_causal, std::optional<double> scale, Generator* gen) {
  OpCall c = make_call(OpId::scaled_dot_product_attention, {q, k, v}, {attn_mask});
  c.attrs.get<attrs::Attention>() = {dropout_p, scale, is_causal};
  c.attrs.generator = gen;
  return call_op(c);
}

Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
              int64_t dilation, int64_t groups) {
  OpCall c = make_call(OpId::conv1d, {x, weight}, {bias});
  c.attrs.get<attrs::Conv>() = {{stride}, {padding}, {dilation}, groups};
  return call_op(c);
}

Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Shape& stride, const Shape& padding,
              const Shape& dilation, int64_t groups) {
  OpCall c = make_call(OpId::conv2d, {x, weight}, {bias});
  c.attrs.get<attrs::Conv>() = {per_dim(stride, 2, "conv2d", "stride"), per_dim(padding, 2, "conv2d", "padding"),
                                 per_dim(dilation, 2, "conv2d", "dilation"), groups};
  return call_op(c);
}

Tensor im2col(const Tensor& x, const Shape& kernel, const Shape& stride, const Shape& padding,
              const Shape& dilation) {
  MIXT_CHECK(kernel.size() == 1 || kernel.size() == 2, "im2col", "1-D or 2-D windows only (kernel {})", kernel);
  OpCall c = make_call(OpId::im2col, {x});
  const int r = kernel.size();
  c.attrs.get<attrs::Im2col>() = {kernel, per_dim(stride, r, "im2col", "stride"),
                                  per_dim(padding, r, "im2col", "padding"), per_dim(dilation, r, "im2col", "dilation")};
  return call_op(c);
}

Tensor col2im(const Tensor& cols, const Shape& spatial, const Shape& kernel, const Shape& stride,
              const Shape& padding, const Shape& dilation) {
  MIXT_CHECK(kernel.size() == 1 || kernel.size() == 2, "col2im", "1-D or 2-D windows only (kernel {})", kernel);
  OpCall c = make_call(OpId::col2im, {cols});
  const int r = kernel.size();
  c.attrs.get<attrs::Col2im>() = {spatial, kernel, per_dim(stride, r, "col2im", "stride"),
                                  per_dim(padding, r, "col2im", "padding"), per_dim(dilation, r, "col2im", "dilation")};
  return call_op(c);
}

namespace {

// A recurrent cell's state, or zeros ([H], or [B, H] for a batched input) when it is undefined.
Tensor state_or_zeros(const Tensor& state, const Tensor& input, const Tensor& w_hh, const char* op) {
  if (state.defined()) return state;
  MIXT_CHECK(input.defined() && w_hh.defined(), op, "a required input is undefined");
  MIXT_CHECK(w_hh.dim() == 2 && (input.dim() == 1 || input.dim() == 2), op,
             "expected a 1-D or 2-D input and a 2-D w_hh, got shapes {} and {}", input.sizes(), w_hh.sizes());
  const Shape sizes = input.dim() == 1 ? Shape{w_hh.size(1)} : Shape{input.size(0), w_hh.size(1)};
  return zeros(sizes, {.dtype = input.dtype(), .device = input.device()});
}

Tensor simple_cell(OpId id, const Tensor& input, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh,
                   const Tensor& b_ih, const Tensor& b_hh) {
  const Tensor h0 = state_or_zeros(h, input, w_hh, op_name(id).data());
  OpCall c = make_call(id, {input, h0, w_ih, w_hh}, {b_ih, b_hh});
  return call_op(c);
}

}  // namespace

LstmState lstm_cell(const Tensor& input, const LstmState& state, const Tensor& w_ih, const Tensor& w_hh,
                    const Tensor& b_ih, const Tensor& b_hh) {
  const Tensor h = state_or_zeros(state.h, input, w_hh, "lstm_cell");
  const Tensor cx = state_or_zeros(state.c, input, w_hh, "lstm_cell");
  const std::vector<Tensor> states{h, cx};
  OpCall c = make_call(OpId::lstm_cell, {input, w_ih, w_hh}, {b_ih, b_hh});
  c.list = states;
  dispatch(c);
  return {std::move(c.out[0]), std::move(c.out[1])};
}

Tensor gru_cell(const Tensor& input, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                const Tensor& b_hh) {
  return simple_cell(OpId::gru_cell, input, h, w_ih, w_hh, b_ih, b_hh);
}

Tensor rnn_tanh_cell(const Tensor& input, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                     const Tensor& b_hh) {
  return simple_cell(OpId::rnn_tanh_cell, input, h, w_ih, w_hh, b_ih, b_hh);
}

Tensor rnn_relu_cell(const Tensor& input, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh, const Tensor& b_ih,
                     const Tensor& b_hh) {
  return simple_cell(OpId::rnn_relu_cell, input, h, w_ih, w_hh, b_ih, b_hh);
}

}  // namespace mixt::nn::functional
