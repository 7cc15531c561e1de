// The standard layers (runtime/nn/modules.h).
#include <mixt/runtime/nn/modules.h>

#include <cmath>

#include <mixt/runtime/check.h>
#include <mixt/runtime/ops/nn.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::nn {
namespace F = functional;

namespace {

// A float32 tensor of `shape` drawn from U(-bound, bound).
Tensor uniform_init(const Shape& shape, double bound) {
  Tensor t = empty(shape);
  return uniform_(t, -bound, bound);
}

}  // namespace

// ---- Linear --------------------------------------------------------------------

Linear::Linear(int64_t in_features, int64_t out_features, bool bias)
    : in_features_(in_features), out_features_(out_features) {
  MIXT_CHECK(in_features >= 0 && out_features >= 0, "Linear", "negative size: in_features={}, out_features={}",
             in_features, out_features);
  const double bound = in_features > 0 ? 1.0 / std::sqrt(static_cast<double>(in_features)) : 0.0;
  weight_ = register_parameter("weight", uniform_init({out_features, in_features}, bound));
  if (bias) bias_ = register_parameter("bias", uniform_init({out_features}, bound));
}

Tensor Linear::forward(const Tensor& x) { return F::linear(x, weight_, bias_); }

std::string Linear::extra_repr() const {
  return fmt::format("in_features={}, out_features={}, bias={}", in_features_, out_features_, bias_.defined());
}

// ---- Embedding -----------------------------------------------------------------

Embedding::Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx) {
  MIXT_CHECK(num_embeddings >= 0 && embedding_dim >= 0, "Embedding", "negative size: num_embeddings={}, dim={}",
             num_embeddings, embedding_dim);
  MIXT_CHECK(!padding_idx || (*padding_idx >= -num_embeddings && *padding_idx < num_embeddings), "Embedding",
             "padding_idx {} is out of range for {} embeddings", *padding_idx, num_embeddings);
  if (padding_idx && *padding_idx < 0) *padding_idx += num_embeddings;
  padding_idx_ = padding_idx;
  Tensor w = randn({num_embeddings, embedding_dim});
  if (padding_idx) w.select(0, *padding_idx).zero_();
  weight_ = register_parameter("weight", w);
}

Tensor Embedding::forward(const Tensor& indices) { return F::embedding(indices, weight_, padding_idx_); }

std::string Embedding::extra_repr() const {
  std::string s = fmt::format("{}, {}", weight_.size(0), weight_.size(1));
  return padding_idx_ ? s + fmt::format(", padding_idx={}", *padding_idx_) : s;
}

// ---- norms ---------------------------------------------------------------------

LayerNorm::LayerNorm(const Shape& normalized_shape, double eps, bool elementwise_affine, bool bias)
    : shape_(normalized_shape), eps_(eps) {
  MIXT_CHECK(!normalized_shape.empty(), "LayerNorm", "normalized_shape must not be empty");
  if (!elementwise_affine) return;
  weight_ = register_parameter("weight", ones(normalized_shape));
  if (bias) bias_ = register_parameter("bias", zeros(normalized_shape));
}

Tensor LayerNorm::forward(const Tensor& x) { return F::layer_norm(x, shape_, weight_, bias_, eps_); }

std::string LayerNorm::extra_repr() const {
  return fmt::format("{}, eps={}, elementwise_affine={}", shape_, eps_, weight_.defined());
}

RMSNorm::RMSNorm(const Shape& normalized_shape, std::optional<double> eps, bool elementwise_affine)
    : shape_(normalized_shape), eps_(eps) {
  MIXT_CHECK(!normalized_shape.empty(), "RMSNorm", "normalized_shape must not be empty");
  if (elementwise_affine) weight_ = register_parameter("weight", ones(normalized_shape));
}

Tensor RMSNorm::forward(const Tensor& x) { return F::rms_norm(x, shape_, weight_, eps_); }

std::string RMSNorm::extra_repr() const {
  return fmt::format("{}, eps={}, elementwise_affine={}", shape_, eps_ ? fmt::format("{}", *eps_) : "none",
                     weight_.defined());
}

// ---- dropout and activations ---------------------------------------------------

Dropout::Dropout(double p) : p_(p) {
  MIXT_CHECK(p >= 0.0 && p <= 1.0, "Dropout", "probability must be in [0, 1], got {}", p);
}

Tensor Dropout::forward(const Tensor& x) { return F::dropout(x, p_, is_training()); }

std::string Dropout::extra_repr() const { return fmt::format("p={}", p_); }

GELU::GELU(std::string approximate) : approximate_(std::move(approximate)) {
  MIXT_CHECK(approximate_ == "none" || approximate_ == "tanh", "GELU", "approximate must be 'none' or 'tanh', got '{}'",
             approximate_);
}

Tensor GELU::forward(const Tensor& x) { return F::gelu(x, approximate_); }

std::string GELU::extra_repr() const { return "approximate=" + approximate_; }

Tensor ReLU::forward(const Tensor& x) { return relu(x); }
Tensor SiLU::forward(const Tensor& x) { return F::silu(x); }
Tensor Tanh::forward(const Tensor& x) { return tanh(x); }
Tensor Sigmoid::forward(const Tensor& x) { return sigmoid(x); }
Tensor Hardswish::forward(const Tensor& x) { return F::hardswish(x); }
Tensor Hardsigmoid::forward(const Tensor& x) { return F::hardsigmoid(x); }
Tensor SELU::forward(const Tensor& x) { return F::selu(x); }
Tensor Mish::forward(const Tensor& x) { return F::mish(x); }

Hardtanh::Hardtanh(double min_val, double max_val) : min_val_(min_val), max_val_(max_val) {
  MIXT_CHECK(max_val > min_val, "Hardtanh", "max_val must be greater than min_val, got min_val={} max_val={}", min_val,
             max_val);
}
Tensor Hardtanh::forward(const Tensor& x) { return F::hardtanh(x, min_val_, max_val_); }
std::string Hardtanh::extra_repr() const { return fmt::format("min_val={}, max_val={}", min_val_, max_val_); }

LeakyReLU::LeakyReLU(double negative_slope) : negative_slope_(negative_slope) {}
Tensor LeakyReLU::forward(const Tensor& x) { return F::leaky_relu(x, negative_slope_); }
std::string LeakyReLU::extra_repr() const { return fmt::format("negative_slope={}", negative_slope_); }

ELU::ELU(double alpha) : alpha_(alpha) {}
Tensor ELU::forward(const Tensor& x) { return F::elu(x, alpha_); }
std::string ELU::extra_repr() const { return fmt::format("alpha={}", alpha_); }

PReLU::PReLU(int64_t num_parameters, double init) {
  MIXT_CHECK(num_parameters >= 1, "PReLU", "num_parameters must be at least 1, got {}", num_parameters);
  weight_ = register_parameter("weight", full({num_parameters}, init));
}
Tensor PReLU::forward(const Tensor& x) { return F::prelu(x, weight_); }
std::string PReLU::extra_repr() const { return fmt::format("num_parameters={}", weight_.numel()); }

// ---- Sequential ----------------------------------------------------------------

void Sequential::push_back(std::shared_ptr<Module> module) { register_module(std::to_string(size()), module); }

const std::shared_ptr<Module>& Sequential::operator[](size_t index) const {
  MIXT_CHECK(index < size(), "Sequential", "index {} is out of range for {} modules", index, size());
  return named_children()[index].second;
}

void Sequential::wrong_type(size_t index) const {
  MIXT_FAIL("Sequential", "module {} is a {}, not the requested type", index, (*this)[index]->name());
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor y = x;
  for (const auto& [n, m] : named_children()) y = m->forward(y);
  return y;
}

// ---- MultiheadAttention --------------------------------------------------------

MultiheadAttention::MultiheadAttention(int64_t embed_dim, int64_t num_heads, bool bias, double dropout)
    : embed_dim_(embed_dim), num_heads_(num_heads), dropout_(dropout) {
  MIXT_CHECK(embed_dim > 0 && num_heads > 0 && embed_dim % num_heads == 0, "MultiheadAttention",
             "embed_dim ({}) must be a positive multiple of num_heads ({})", embed_dim, num_heads);
  MIXT_CHECK(dropout >= 0.0 && dropout <= 1.0, "MultiheadAttention", "dropout must be in [0, 1], got {}", dropout);
  // xavier_uniform_ of a [3E, E] matrix: fan_in E, fan_out 3E.
  const double bound = std::sqrt(6.0 / static_cast<double>(4 * embed_dim));
  in_proj_weight_ = register_parameter("in_proj_weight", uniform_init({3 * embed_dim, embed_dim}, bound));
  if (bias) in_proj_bias_ = register_parameter("in_proj_bias", zeros({3 * embed_dim}));
  out_proj_ = register_module("out_proj", Linear(embed_dim, embed_dim, bias));
  if (bias) out_proj_->bias().detach().zero_();
}

Tensor MultiheadAttention::forward(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask,
                                   bool is_causal) {
  const int64_t e = embed_dim_, h = num_heads_;
  auto check = [&](const Tensor& t, const char* what) {
    MIXT_CHECK(t.defined() && t.dim() == 3 && t.size(2) == e, "MultiheadAttention",
               "{} must be [batch, length, {}], got {}", what, e, t.defined() ? t.sizes().str() : "undefined");
  };
  check(query, "query");
  check(key, "key");
  check(value, "value");
  MIXT_CHECK(key.size(0) == query.size(0) && value.size(0) == query.size(0) && key.size(1) == value.size(1),
             "MultiheadAttention", "batch or source length mismatch: query {}, key {}, value {}", query.sizes(),
             key.sizes(), value.sizes());
  // Split heads: [B, L, E] -> [B, H, L, E/H].
  auto heads = [&](const Tensor& t) { return t.view({t.size(0), t.size(1), h, e / h}).transpose(1, 2); };
  const double p = is_training() ? dropout_ : 0.0;
  Tensor q, k, v;
  if (query.is_same(key) && key.is_same(value)) {
    // Self-attention: one projection with the packed weight (one GEMM, and under
    // autocast one cast of the input and one cached cast of the whole weight).
    const std::vector<Tensor> qkv = chunk(F::linear(query, in_proj_weight_, in_proj_bias_), 3, -1);
    q = qkv[0], k = qkv[1], v = qkv[2];
  } else {
    // Separate inputs: the q/k/v rows of the packed weight.
    auto project = [&](const Tensor& x, int64_t part) {
      const Tensor w = in_proj_weight_.narrow(0, part * e, e);
      const Tensor b = in_proj_bias_.defined() ? in_proj_bias_.narrow(0, part * e, e) : Tensor();
      return F::linear(x, w, b);
    };
    q = project(query, 0), k = project(key, 1), v = project(value, 2);
  }
  Tensor out = F::scaled_dot_product_attention(heads(q), heads(k), heads(v), attn_mask, p, is_causal);
  out = out.transpose(1, 2).reshape({query.size(0), query.size(1), e});
  return out_proj_->forward(out);
}

std::string MultiheadAttention::extra_repr() const {
  return fmt::format("embed_dim={}, num_heads={}, dropout={}", embed_dim_, num_heads_, dropout_);
}

// ---- TransformerBlock ----------------------------------------------------------

TransformerBlock::TransformerBlock(int64_t dim, int64_t num_heads, double mlp_ratio, double dropout, bool causal)
    : causal_(causal) {
  const auto hidden = static_cast<int64_t>(static_cast<double>(dim) * mlp_ratio);
  MIXT_CHECK(hidden > 0, "TransformerBlock", "mlp_ratio {} gives no hidden units for dim {}", mlp_ratio, dim);
  ln1_ = register_module("ln1", LayerNorm(dim));
  attn_ = register_module("attn", MultiheadAttention(dim, num_heads, true, dropout));
  drop_ = register_module("drop", Dropout(dropout));
  ln2_ = register_module("ln2", LayerNorm(dim));
  mlp_ = register_module("mlp", Sequential(Linear(dim, hidden), GELU(), Linear(hidden, dim), Dropout(dropout)));
}

Tensor TransformerBlock::forward(const Tensor& x) {
  const Tensor a = ln1_->forward(x);
  const Tensor h = x + drop_->forward(attn_->forward(a, a, a, Tensor(), causal_));
  return h + mlp_->forward(ln2_->forward(h));
}

std::string TransformerBlock::extra_repr() const { return fmt::format("causal={}", causal_); }

// ---- convolutions and pooling ----------------------------------------------------

ConvModule::ConvModule(const char* name, bool transposed, int64_t in_channels, int64_t out_channels,
                       const Shape& kernel_size, const Shape& stride, const Shape& padding,
                       const Shape& output_padding, const Shape& dilation, int64_t groups, bool bias)
    : stride_(stride), padding_(padding), output_padding_(output_padding), dilation_(dilation), groups_(groups) {
  MIXT_CHECK(in_channels > 0 && out_channels > 0 && groups > 0 && in_channels % groups == 0 &&
                 out_channels % groups == 0,
             name, "in_channels ({}) and out_channels ({}) must be positive multiples of groups ({})", in_channels,
             out_channels, groups);
  Shape w{transposed ? in_channels : out_channels, (transposed ? out_channels : in_channels) / groups};
  for (int64_t k : kernel_size) {
    MIXT_CHECK(k > 0, name, "kernel sizes must be positive, got {}", kernel_size);
    w.push_back(k);
  }
  const double bound = 1.0 / std::sqrt(static_cast<double>(w[1] * kernel_size.numel()));
  weight_ = register_parameter("weight", uniform_init(w, bound));
  if (bias) bias_ = register_parameter("bias", uniform_init({out_channels}, bound));
}

std::string ConvModule::extra_repr() const {
  const bool transposed = name().rfind("ConvTranspose", 0) == 0;
  const int64_t in = transposed ? weight_.size(0) : weight_.size(1) * groups_;
  const int64_t out = transposed ? weight_.size(1) * groups_ : weight_.size(0);
  Shape kernel;
  for (int64_t i = 2; i < weight_.dim(); ++i) kernel.push_back(weight_.size(i));
  std::string s = fmt::format("{}, {}, kernel_size={}, stride={}, padding={}", in, out, kernel, stride_, padding_);
  if (transposed) s += fmt::format(", output_padding={}", output_padding_);
  return s + fmt::format(", dilation={}, groups={}, bias={}", dilation_, groups_, bias_.defined());
}

Conv1d::Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride, int64_t padding,
               int64_t dilation, int64_t groups, bool bias)
    : ConvModule("Conv1d", false, in_channels, out_channels, {kernel_size}, {stride}, {padding}, {0}, {dilation},
                 groups, bias) {}
Tensor Conv1d::forward(const Tensor& x) {
  return F::conv1d(x, weight_, bias_, stride_[0], padding_[0], dilation_[0], groups_);
}

namespace {
// A geometry value for `dims` spatial dims: as given, or its one value repeated.
Shape per_dim(const Shape& s, int dims) { return s.size() == 1 ? Shape::filled(dims, s[0]) : s; }
}  // namespace

Conv2d::Conv2d(int64_t in_channels, int64_t out_channels, const Shape& kernel_size, const Shape& stride,
               const Shape& padding, const Shape& dilation, int64_t groups, bool bias)
    : ConvModule("Conv2d", false, in_channels, out_channels, per_dim(kernel_size, 2), per_dim(stride, 2),
                 per_dim(padding, 2), {0}, per_dim(dilation, 2), groups, bias) {}
Tensor Conv2d::forward(const Tensor& x) { return F::conv2d(x, weight_, bias_, stride_, padding_, dilation_, groups_); }

Conv3d::Conv3d(int64_t in_channels, int64_t out_channels, const Shape& kernel_size, const Shape& stride,
               const Shape& padding, const Shape& dilation, int64_t groups, bool bias)
    : ConvModule("Conv3d", false, in_channels, out_channels,
                 kernel_size.size() == 1 ? Shape::filled(3, kernel_size[0]) : kernel_size, stride, padding, {0},
                 dilation, groups, bias) {}
Tensor Conv3d::forward(const Tensor& x) { return F::conv3d(x, weight_, bias_, stride_, padding_, dilation_, groups_); }

ConvTranspose1d::ConvTranspose1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride,
                                 int64_t padding, int64_t output_padding, int64_t groups, bool bias, int64_t dilation)
    : ConvModule("ConvTranspose1d", true, in_channels, out_channels, {kernel_size}, {stride}, {padding},
                 {output_padding}, {dilation}, groups, bias) {}
Tensor ConvTranspose1d::forward(const Tensor& x) {
  return F::conv_transpose1d(x, weight_, bias_, stride_[0], padding_[0], output_padding_[0], groups_, dilation_[0]);
}

ConvTranspose2d::ConvTranspose2d(int64_t in_channels, int64_t out_channels, const Shape& kernel_size,
                                 const Shape& stride, const Shape& padding, const Shape& output_padding,
                                 int64_t groups, bool bias, const Shape& dilation)
    : ConvModule("ConvTranspose2d", true, in_channels, out_channels,
                 kernel_size.size() == 1 ? Shape::filled(2, kernel_size[0]) : kernel_size, stride, padding,
                 output_padding, dilation, groups, bias) {}
Tensor ConvTranspose2d::forward(const Tensor& x) {
  return F::conv_transpose2d(x, weight_, bias_, stride_, padding_, output_padding_, groups_, dilation_);
}

MaxPool1d::MaxPool1d(int64_t kernel_size, std::optional<int64_t> stride, int64_t padding, int64_t dilation,
                     bool ceil_mode)
    : kernel_(kernel_size), stride_(stride.value_or(kernel_size)), padding_(padding), dilation_(dilation),
      ceil_mode_(ceil_mode) {}
Tensor MaxPool1d::forward(const Tensor& x) {
  return F::max_pool1d(x, kernel_, stride_, padding_, dilation_, ceil_mode_);
}
std::string MaxPool1d::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={}", kernel_, stride_, padding_,
                     dilation_, ceil_mode_);
}

MaxPool2d::MaxPool2d(const Shape& kernel_size, const Shape& stride, const Shape& padding, const Shape& dilation,
                     bool ceil_mode)
    : kernel_(kernel_size), stride_(stride.empty() ? kernel_size : stride), padding_(padding), dilation_(dilation),
      ceil_mode_(ceil_mode) {}
Tensor MaxPool2d::forward(const Tensor& x) {
  return F::max_pool2d(x, kernel_, stride_, padding_, dilation_, ceil_mode_);
}
std::string MaxPool2d::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}, dilation={}, ceil_mode={}", kernel_, stride_, padding_,
                     dilation_, ceil_mode_);
}

AvgPool1d::AvgPool1d(int64_t kernel_size, std::optional<int64_t> stride, int64_t padding, bool ceil_mode,
                     bool count_include_pad)
    : kernel_(kernel_size), stride_(stride.value_or(kernel_size)), padding_(padding), ceil_mode_(ceil_mode),
      count_include_pad_(count_include_pad) {}
Tensor AvgPool1d::forward(const Tensor& x) {
  return F::avg_pool1d(x, kernel_, stride_, padding_, ceil_mode_, count_include_pad_);
}
std::string AvgPool1d::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}, ceil_mode={}, count_include_pad={}", kernel_, stride_,
                     padding_, ceil_mode_, count_include_pad_);
}

AvgPool2d::AvgPool2d(const Shape& kernel_size, const Shape& stride, const Shape& padding, bool ceil_mode,
                     bool count_include_pad)
    : kernel_(kernel_size), stride_(stride.empty() ? kernel_size : stride), padding_(padding), ceil_mode_(ceil_mode),
      count_include_pad_(count_include_pad) {}
Tensor AvgPool2d::forward(const Tensor& x) {
  return F::avg_pool2d(x, kernel_, stride_, padding_, ceil_mode_, count_include_pad_);
}
std::string AvgPool2d::extra_repr() const {
  return fmt::format("kernel_size={}, stride={}, padding={}, ceil_mode={}, count_include_pad={}", kernel_, stride_,
                     padding_, ceil_mode_, count_include_pad_);
}

Upsample::Upsample(const Shape& size, std::vector<double> scale_factor, std::string mode,
                   std::optional<bool> align_corners)
    : size_(size), scale_factor_(std::move(scale_factor)), mode_(std::move(mode)), align_corners_(align_corners) {}
Tensor Upsample::forward(const Tensor& x) {
  return F::interpolate(x, size_, scale_factor_, mode_, align_corners_);
}
std::string Upsample::extra_repr() const {
  std::string s = size_.empty() ? fmt::format("scale_factor={}", fmt::join(scale_factor_, ", "))
                                : fmt::format("size={}", size_);
  return s + fmt::format(", mode={}", mode_);
}

}  // namespace mixt::nn
