// nn::functional: the neural-network layer ops (linear, embedding, the nn-only
// activations, normalizations, dropout, losses, attention, convolutions); math on
// tensors is in mixt:: (runtime/ops/ops.h), as PyTorch splits torch.nn.functional from
// torch. Each is an op in the op table, so autocast policies, autograd and explain
// see it by name.
#pragma once

#include <optional>
#include <vector>
#include <string_view>

#include <mixt/dispatcher/attrs.h>
#include <mixt/runtime/generator.h>
#include <mixt/runtime/tensor.h>

namespace mixt::nn::functional {

// How a loss combines its elements (mixt::Reduction: None, Mean, Sum).
using ::mixt::Reduction;

// input @ weight^T + bias (weight [out_features, in_features]); out_dtype float32
// keeps a product of narrow operands in float32.
Tensor linear(const Tensor& input, const Tensor& weight, const Tensor& bias = Tensor(),
              ScalarType out_dtype = ScalarType::Undefined);
// linear's gradients (what its backward computes): grad_input = grad_output @ weight (input's
// shape), grad_weight = grad_output^T @ input ([out, in]), grad_bias = grad_output summed over
// its leading dims ([out]). grad_output [*, out], input [*, in] and weight share one dtype and
// device. Only the gradients asked for are computed; the others are undefined. Not
// differentiable (backward through it raises). On CUDA grad_bias comes out of grad_weight's GEMM.
struct LinearGrads {
  Tensor input, weight, bias;
};
LinearGrads linear_backward(const Tensor& grad_output, const Tensor& input, const Tensor& weight,
                            bool input_grad = true, bool weight_grad = true, bool bias_grad = false);
// Rows of `weight` [num, dim] picked by the integer `input`: shape input.shape + [dim].
// The row `padding_idx` (negative: counted from the end) gets no gradient.
Tensor embedding(const Tensor& input, const Tensor& weight, std::optional<int64_t> padding_idx = std::nullopt);

// Activations that exist only as layers (the others — relu, sigmoid, tanh — are math
// in mixt::, as torch.relu is). Integer inputs compute in float32.
// approximate: "none" (erf form) or "tanh".
Tensor gelu(const Tensor& x, std::string_view approximate = "none");
Tensor& gelu_(Tensor& x, std::string_view approximate = "none");
// x * sigmoid(x).
Tensor silu(const Tensor& x);
Tensor& silu_(Tensor& x);
// log(1 + exp(beta x)) / beta, linear above `threshold`.
Tensor softplus(const Tensor& x, double beta = 1.0, double threshold = 20.0);
Tensor& softplus_(Tensor& x, double beta = 1.0, double threshold = 20.0);
// The piecewise activations below take floating inputs only (integers raise, as in PyTorch),
// except hardtanh, which clamps integer tensors too (with its bounds truncated).
// x clamped to [min_val, max_val].
Tensor hardtanh(const Tensor& x, double min_val = -1.0, double max_val = 1.0);
Tensor& hardtanh_(Tensor& x, double min_val = -1.0, double max_val = 1.0);
// x relu6(x + 3) / 6.
Tensor hardswish(const Tensor& x);
Tensor& hardswish_(Tensor& x);
// relu6(x + 3) / 6.
Tensor hardsigmoid(const Tensor& x);
Tensor& hardsigmoid_(Tensor& x);
// x where x > 0, else negative_slope x.
Tensor leaky_relu(const Tensor& x, double negative_slope = 0.01);
Tensor& leaky_relu_(Tensor& x, double negative_slope = 0.01);
// scale x where x > 0, else scale alpha (exp(input_scale x) - 1).
Tensor elu(const Tensor& x, double alpha = 1.0, double scale = 1.0, double input_scale = 1.0);
Tensor& elu_(Tensor& x, double alpha = 1.0, double scale = 1.0, double input_scale = 1.0);
// elu with alpha 1.6732632423543772 and scale 1.0507009873554805.
Tensor selu(const Tensor& x);
Tensor& selu_(Tensor& x);
// x tanh(softplus(x)).
Tensor mish(const Tensor& x);
Tensor& mish_(Tensor& x);
// max(0, x) + weight min(0, x), with `weight` one element or one per channel (x's dim 1;
// a 1-D x has one channel) broadcast over the other dims. x and weight share one dtype.
Tensor prelu(const Tensor& x, const Tensor& weight);

// softmax along `dim`, computed in float32 for narrow dtypes (max-subtracted).
// `dtype`: cast the input to it first (Undefined: keep the input's).
Tensor softmax(const Tensor& x, int64_t dim, ScalarType dtype = ScalarType::Undefined);
Tensor log_softmax(const Tensor& x, int64_t dim, ScalarType dtype = ScalarType::Undefined);

// Normalizes over the trailing `normalized_shape` dims; statistics in float32.
Tensor layer_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// x * rsqrt(mean(x^2) + eps) * weight over the trailing `normalized_shape` dims.
Tensor rms_norm(const Tensor& x, const Shape& normalized_shape, const Tensor& weight = Tensor(),
                std::optional<double> eps = std::nullopt);
// The fused backward kernels autograd runs for softmax, log_softmax, layer_norm and
// rms_norm (Note [Fused backward ops]); not differentiable. `output` is the forward's
// result; the gradient comes back in its dtype.
Tensor softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim);
Tensor log_softmax_backward(const Tensor& grad_output, const Tensor& output, int64_t dim);
// The fused backward kernels of gelu and silu (the same note): grad_output times the
// derivative at `self`, the forward's input; the gradient comes back in self's dtype.
Tensor gelu_backward(const Tensor& grad_output, const Tensor& self, std::string_view approximate = "none");
Tensor silu_backward(const Tensor& grad_output, const Tensor& self);
// The gradients of a normalization: input in x's dtype, weight and bias in x's
// accumulate type (float32, float64 for float64); each is undefined unless asked for.
struct NormGrads {
  Tensor input, weight, bias;
};
struct NormGradsWanted {
  bool input = true, weight = true, bias = true;
};
// mean and rstd: layer_norm's statistics outputs (x's leading dims, accumulate type).
NormGrads layer_norm_backward(const Tensor& grad_y, const Tensor& x, const Shape& normalized_shape,
                              const Tensor& mean, const Tensor& rstd, const Tensor& weight = Tensor(),
                              NormGradsWanted wanted = {});
// rstd: rms_norm's statistics output; `wanted.bias` is ignored (rms_norm has no bias).
NormGrads rms_norm_backward(const Tensor& grad_y, const Tensor& x, const Shape& normalized_shape, const Tensor& rstd,
                            const Tensor& weight = Tensor(), NormGradsWanted wanted = {});
// Normalizes groups of channels of x [N, C, ...].
Tensor group_norm(const Tensor& x, int64_t num_groups, const Tensor& weight = Tensor(),
                  const Tensor& bias = Tensor(), double eps = 1e-5);
// Batch statistics in training (and updates the running stats in place),
// running statistics in evaluation. x: [N, C, ...].
Tensor batch_norm(const Tensor& x, const Tensor& running_mean, const Tensor& running_var,
                  const Tensor& weight = Tensor(), const Tensor& bias = Tensor(), bool training = false,
                  double momentum = 0.1, double eps = 1e-5);
// Zeroes elements with probability p and scales the rest by 1/(1-p) (training only).
Tensor dropout(const Tensor& x, double p = 0.5, bool training = true, Generator* gen = nullptr);

// Cross entropy of logits [N, C] (or [N, C, d...], or [C]) against class
// indices [N] (int) or class probabilities (same shape as the logits).
Tensor cross_entropy(const Tensor& logits, const Tensor& target, const Tensor& weight = Tensor(),
                     int64_t ignore_index = -100, Reduction reduction = Reduction::Mean,
                     double label_smoothing = 0.0);
// The fused row kernel cross_entropy runs for class-index targets (Note [Fused
// cross-entropy]): logits [N, C] (floating), target [N] (int64 or int32), weight [C] in the
// logits' accumulate type (or undefined). Per row: the loss (weighted, smoothed; 0 where
// the target is ignore_index) and the logsumexp, both [N] in the accumulate type (float32,
// float64 for float64). Differentiable in the logits only: lse comes back detached, and a
// weight that requires grad is refused (cross_entropy takes its unfused path for it).
struct CrossEntropyRows {
  Tensor loss, lse;
};
CrossEntropyRows cross_entropy_rows(const Tensor& logits, const Tensor& target, const Tensor& weight = Tensor(),
                                    int64_t ignore_index = -100, double label_smoothing = 0.0);
// Its backward: grad_loss [N] (accumulate type) times d loss / d logits, from the forward's
// lse; not differentiable. The gradient comes back in the logits' dtype.
Tensor cross_entropy_rows_backward(const Tensor& grad_loss, const Tensor& logits, const Tensor& target,
                                   const Tensor& lse, const Tensor& weight = Tensor(), int64_t ignore_index = -100,
                                   double label_smoothing = 0.0);
// Negative log likelihood of log-probabilities [N, C] at class indices [N].
Tensor nll_loss(const Tensor& log_probs, const Tensor& target, const Tensor& weight = Tensor(),
                int64_t ignore_index = -100, Reduction reduction = Reduction::Mean);
Tensor mse_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
Tensor smooth_l1_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                      double beta = 1.0);
Tensor huber_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
                  double delta = 1.0);
// Binary cross entropy of probabilities (banned under CUDA autocast: use the logits form).
Tensor binary_cross_entropy(const Tensor& probs, const Tensor& target, const Tensor& weight = Tensor(),
                            Reduction reduction = Reduction::Mean);
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& target, const Tensor& weight = Tensor(),
                                        const Tensor& pos_weight = Tensor(), Reduction reduction = Reduction::Mean);
// KL divergence with `input` = log-probabilities (and `target` log-probabilities when log_target).
Tensor kl_div(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean,
              bool log_target = false);
// Poisson negative log likelihood: exp(input) - target * input with log_input, else
// input - target * log(input + eps); `full` adds Stirling's approximation of log(target!)
// where target > 1.
Tensor poisson_nll_loss(const Tensor& input, const Tensor& target, bool log_input = true, bool full = false,
                        double eps = 1e-8, Reduction reduction = Reduction::Mean);
// Rows of input1 and input2 ([N, D] with target [N], or [D] with a 0-D target): 1 - cos where
// the target is 1, max(0, cos - margin) where it is -1.
Tensor cosine_embedding_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0.0,
                             Reduction reduction = Reduction::Mean);
// input where the target is 1, max(0, margin - input) where it is -1.
Tensor hinge_embedding_loss(const Tensor& input, const Tensor& target, double margin = 1.0,
                            Reduction reduction = Reduction::Mean);
// max(0, -target * (input1 - input2) + margin); the three have one number of dims.
Tensor margin_ranking_loss(const Tensor& input1, const Tensor& input2, const Tensor& target, double margin = 0.0,
                           Reduction reduction = Reduction::Mean);
// max(0, d(anchor, positive) - d(anchor, negative) + margin), d the p-norm of a - b + eps
// over the last dim ([N, D] or [D] each); `swap` uses min(d(a, n), d(p, n)).
Tensor triplet_margin_loss(const Tensor& anchor, const Tensor& positive, const Tensor& negative, double margin = 1.0,
                           double p = 2.0, double eps = 1e-6, bool swap = false,
                           Reduction reduction = Reduction::Mean);
// input [C] or [N, C]; target of its shape holds class indices, ended by the first -1. Per
// sample: the sum of max(0, 1 - (x[y] - x[i])) over target classes y and other classes i, / C.
Tensor multilabel_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
// log(1 + exp(-target * input)).
Tensor soft_margin_loss(const Tensor& input, const Tensor& target, Reduction reduction = Reduction::Mean);
// input [C] or [N, C], class indices target [] or [N]. Per sample: the sum over i != y of
// weight[y] * max(0, margin - x[y] + x[i])^p, / C; p is 1 or 2, weight [C] or none.
Tensor multi_margin_loss(const Tensor& input, const Tensor& target, int64_t p = 1, double margin = 1.0,
                         const Tensor& weight = Tensor(), Reduction reduction = Reduction::Mean);
Tensor cosine_similarity(const Tensor& a, const Tensor& b, int64_t dim = 1, double eps = 1e-8);
// x1 [*, in1]^T weight [out, in1, in2] x2 [*, in2] + bias [out]: the bilinear layer, [*, out].
Tensor bilinear(const Tensor& x1, const Tensor& x2, const Tensor& weight, const Tensor& bias = Tensor());

// softmax(q k^T * scale + mask) v over the last two dims; `attn_mask` is bool
// (true = attend) or additive floating; is_causal masks the upper triangle.
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const Tensor& attn_mask = Tensor(), double dropout_p = 0.0,
                                    bool is_causal = false, std::optional<double> scale = std::nullopt,
                                    Generator* gen = nullptr);

// x [N, C_in, L], weight [C_out, C_in/groups, K].
Tensor conv1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), int64_t stride = 1,
              int64_t padding = 0, int64_t dilation = 1, int64_t groups = 1);
// x [N, C_in, H, W], weight [C_out, C_in/groups, KH, KW].
Tensor conv2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), const Shape& stride = {1, 1},
              const Shape& padding = {0, 0}, const Shape& dilation = {1, 1}, int64_t groups = 1);
// Sliding-window patches: x [N, C, *spatial] -> [N, C * prod(kernel), L] (the
// columns of a convolution as a GEMM); col2im is its adjoint.
Tensor im2col(const Tensor& x, const Shape& kernel, const Shape& stride, const Shape& padding,
              const Shape& dilation);
Tensor col2im(const Tensor& cols, const Shape& spatial, const Shape& kernel, const Shape& stride,
              const Shape& padding, const Shape& dilation);

// x [N, C_in, D, H, W] (or unbatched [C_in, D, H, W]), weight [C_out, C_in/groups, KD, KH, KW].
// Each of stride, padding and dilation holds one value per spatial dim, or one for all of them.
Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), const Shape& stride = {1},
              const Shape& padding = {0}, const Shape& dilation = {1}, int64_t groups = 1);
// Transposed convolutions (the adjoint of convNd with respect to its input), in PyTorch's
// argument order: x [N, C_in, *spatial] (or unbatched), weight [C_in, C_out/groups, *kernel];
// each output size is (in - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1,
// with output_padding smaller than the stride or the dilation.
Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(), int64_t stride = 1,
                        int64_t padding = 0, int64_t output_padding = 0, int64_t groups = 1, int64_t dilation = 1);
Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                        const Shape& stride = {1}, const Shape& padding = {0}, const Shape& output_padding = {0},
                        int64_t groups = 1, const Shape& dilation = {1});
Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor(),
                        const Shape& stride = {1}, const Shape& padding = {0}, const Shape& output_padding = {0},
                        int64_t groups = 1, const Shape& dilation = {1});

// Pooling over the trailing 1, 2 or 3 dims of x [N, C, *spatial] (or [C, *spatial]). An unset
// or empty stride is the kernel size; padding is at most half the kernel; ceil_mode rounds the
// output size up (a last window must start inside the input or its left padding).
// avg_pool: count_include_pad divides by the window's size within the padded input, else by
// its size within the input.
Tensor avg_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride = std::nullopt,
                  int64_t padding = 0, bool ceil_mode = false, bool count_include_pad = true);
Tensor avg_pool2d(const Tensor& x, const Shape& kernel_size, const Shape& stride = {}, const Shape& padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true);
Tensor avg_pool3d(const Tensor& x, const Shape& kernel_size, const Shape& stride = {}, const Shape& padding = {0},
                  bool ceil_mode = false, bool count_include_pad = true);
// max_pool: the maximum of each window (NaN wins); the _with_indices forms also return where
// it is, as PyTorch's return_indices: the flat index into each input plane (h * W + w), int64.
struct PoolWithIndices {
  Tensor values, indices;
};
Tensor max_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride = std::nullopt,
                  int64_t padding = 0, int64_t dilation = 1, bool ceil_mode = false);
Tensor max_pool2d(const Tensor& x, const Shape& kernel_size, const Shape& stride = {}, const Shape& padding = {0},
                  const Shape& dilation = {1}, bool ceil_mode = false);
PoolWithIndices max_pool1d_with_indices(const Tensor& x, int64_t kernel_size,
                                        std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                                        int64_t dilation = 1, bool ceil_mode = false);
PoolWithIndices max_pool2d_with_indices(const Tensor& x, const Shape& kernel_size, const Shape& stride = {},
                                        const Shape& padding = {0}, const Shape& dilation = {1},
                                        bool ceil_mode = false);
// The mean of windows [floor(i * in / out), ceil((i + 1) * in / out)) for each output index i.
Tensor adaptive_avg_pool1d(const Tensor& x, int64_t output_size);
Tensor adaptive_avg_pool2d(const Tensor& x, const Shape& output_size);

// Padding, as PyTorch's F.pad: `pad` holds (before, after) pairs from the last dim on.
// mode "constant" pads any number of dims with `value` (0 when unset; a negative pad
// crops); "reflect" (mirrors without repeating the edge; pads smaller than the dim) and
// "replicate" (repeats the edge) pad the last 1 or 2 dims of a 2-D/3-D or 3-D/4-D input.
Tensor pad(const Tensor& x, const Shape& pad, std::string_view mode = "constant",
           std::optional<double> value = std::nullopt);
Tensor constant_pad_nd(const Tensor& x, const Shape& pad, const Scalar& value = 0);
Tensor reflection_pad1d(const Tensor& x, const Shape& pad);
Tensor reflection_pad2d(const Tensor& x, const Shape& pad);
Tensor replication_pad1d(const Tensor& x, const Shape& pad);
Tensor replication_pad2d(const Tensor& x, const Shape& pad);

// Resizes the trailing dims of x [N, C, W] or [N, C, H, W] to `size`, or by `scale_factor`
// (one value per resized dim, or one for all: the size is floor(in * scale)), as PyTorch's
// F.interpolate: mode "nearest" (source index floor(out * in / size)), "linear" (3-D x) or
// "bilinear" (4-D x), whose align_corners maps the corner pixels onto each other.
Tensor interpolate(const Tensor& x, const Shape& size = {}, const std::vector<double>& scale_factor = {},
                   std::string_view mode = "nearest", std::optional<bool> align_corners = std::nullopt);
// The ops behind it: x [N, C, H, W] -> [N, C, *output_size]; a scale is the factor asked
// for (the source position is out / scale), unset: the size ratio.
Tensor upsample_nearest2d(const Tensor& x, const Shape& output_size, std::optional<double> scale_h = std::nullopt,
                          std::optional<double> scale_w = std::nullopt);
Tensor upsample_bilinear2d(const Tensor& x, const Shape& output_size, bool align_corners,
                           std::optional<double> scale_h = std::nullopt, std::optional<double> scale_w = std::nullopt);
// Samples input [N, C, H, W] at grid [N, H', W', 2] (x then y, in [-1, 1] across the input)
// into [N, C, H', W']: mode "bilinear" or "nearest", padding_mode "zeros" or "border"
// (outside points read 0, or the nearest edge); align_corners puts -1 and 1 at the corner
// pixels' centres rather than their outer edges.
Tensor grid_sample(const Tensor& input, const Tensor& grid, std::string_view mode = "bilinear",
                   std::string_view padding_mode = "zeros", bool align_corners = false);

// ---- recurrent cells (PyTorch's gate order; biases optional; 1-D input: one unbatched sample) ----
// input [B, I] (or [I]), hidden states [B, H] (or [H]); an undefined state starts at zeros.
struct LstmState {
  Tensor h;
  Tensor c;
};
// i, f, g, o = chunk(input w_ih^T + b_ih + h w_hh^T + b_hh, 4); c' = sigmoid(f) c + sigmoid(i) tanh(g);
// h' = sigmoid(o) tanh(c'). w_ih [4H, I], w_hh [4H, H], biases [4H].
LstmState lstm_cell(const Tensor& input, const LstmState& state, const Tensor& w_ih, const Tensor& w_hh,
                    const Tensor& b_ih = Tensor(), const Tensor& b_hh = Tensor());
// r, z, n gates: n = tanh(x_n + r (h_n)), h' = (1 - z) n + z h. w_ih [3H, I], w_hh [3H, H], biases [3H].
Tensor gru_cell(const Tensor& input, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh,
                const Tensor& b_ih = Tensor(), const Tensor& b_hh = Tensor());
// h' = tanh(input w_ih^T + b_ih + h w_hh^T + b_hh) (relu for rnn_relu_cell). w_ih [H, I], w_hh [H, H].
Tensor rnn_tanh_cell(const Tensor& input, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh,
                     const Tensor& b_ih = Tensor(), const Tensor& b_hh = Tensor());
Tensor rnn_relu_cell(const Tensor& input, const Tensor& h, const Tensor& w_ih, const Tensor& w_hh,
                     const Tensor& b_ih = Tensor(), const Tensor& b_hh = Tensor());

}  // namespace mixt::nn::functional
