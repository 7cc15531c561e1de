// The standard layers: Linear, Embedding, norms, Dropout, activations,
// Sequential, MultiheadAttention and a pre-norm TransformerBlock. Parameters are
// created in float32 on the CPU from mixt's default generator; use to() to move
// or convert them.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <mixt/runtime/nn/module.h>
#include <mixt/runtime/ops/nn.h>

namespace mixt::nn {

// y = x W^T + b with W [out, in]; W and b start U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's init).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Linear"; }
  std::string extra_repr() const override;
  // The weight [out_features, in_features].
  const Tensor& weight() const { return weight_; }
  // The bias [out_features] (undefined without bias).
  const Tensor& bias() const { return bias_; }

 private:
  int64_t in_features_, out_features_;
  Tensor weight_, bias_;
};

// A lookup table [num_embeddings, embedding_dim] initialized N(0, 1). padding_idx
// (negative: counted from the end) names a row that starts at zero and receives no gradient.
class Embedding : public Module {
 public:
  Embedding(int64_t num_embeddings, int64_t embedding_dim, std::optional<int64_t> padding_idx = std::nullopt);
  Tensor forward(const Tensor& indices) override;
  std::string name() const override { return "Embedding"; }
  std::string extra_repr() const override;
  // The table [num_embeddings, embedding_dim].
  const Tensor& weight() const { return weight_; }

 private:
  std::optional<int64_t> padding_idx_;  // in [0, num_embeddings)
  Tensor weight_;
};

// ---- recurrent layers (runtime/nn/recurrent.cpp) ----
// Every weight and bias starts U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) (PyTorch's init).
// Inputs are [B, input_size] for the cells, or one unbatched sample [input_size]; an
// undefined state starts at zeros.

// The parameters of a cell with G gates of hidden_size rows each: w_ih [G H, I], w_hh [G H, H],
// b_ih and b_hh [G H] (undefined without bias).
struct RecurrentWeights {
  Tensor w_ih, w_hh, b_ih, b_hh;
};

// One LSTM step: functional::lstm_cell with its own weights.
class LSTMCell : public Module {
 public:
  LSTMCell(int64_t input_size, int64_t hidden_size, bool bias = true);
  // (h', c') from x and (h, c).
  functional::LstmState forward(const Tensor& x, const functional::LstmState& state);
  // h' from a zero state.
  Tensor forward(const Tensor& x) override { return forward(x, {}).h; }
  std::string name() const override { return "LSTMCell"; }
  std::string extra_repr() const override;
  const RecurrentWeights& weights() const { return w_; }

 private:
  int64_t input_size_, hidden_size_;
  RecurrentWeights w_;
};

// One GRU step: functional::gru_cell with its own weights.
class GRUCell : public Module {
 public:
  GRUCell(int64_t input_size, int64_t hidden_size, bool bias = true);
  // h' from x and h.
  Tensor forward(const Tensor& x, const Tensor& h);
  Tensor forward(const Tensor& x) override { return forward(x, Tensor()); }
  std::string name() const override { return "GRUCell"; }
  std::string extra_repr() const override;
  const RecurrentWeights& weights() const { return w_; }

 private:
  int64_t input_size_, hidden_size_;
  RecurrentWeights w_;
};

// One Elman RNN step: h' = tanh (or relu) of x w_ih^T + b_ih + h w_hh^T + b_hh.
class RNNCell : public Module {
 public:
  // nonlinearity: "tanh" or "relu".
  RNNCell(int64_t input_size, int64_t hidden_size, bool bias = true, const std::string& nonlinearity = "tanh");
  Tensor forward(const Tensor& x, const Tensor& h);
  Tensor forward(const Tensor& x) override { return forward(x, Tensor()); }
  std::string name() const override { return "RNNCell"; }
  std::string extra_repr() const override;
  const RecurrentWeights& weights() const { return w_; }

 private:
  int64_t input_size_, hidden_size_;
  bool relu_;
  RecurrentWeights w_;
};

// What LSTM and GRU return: the last layer's h at every step, and each layer's final states.
struct RecurrentOutput {
  Tensor output;  // [T, B, H] ([B, T, H] with batch_first; [T, H] unbatched)
  Tensor h;       // [num_layers, B, H] ([num_layers, H] unbatched)
  Tensor c;       // LSTM only, as h
};

// A stack of num_layers LSTM cells run over a sequence x [T, B, input_size] ([B, T, input_size]
// with batch_first, [T, input_size] unbatched); layer l > 0 reads layer l - 1's outputs.
// Parameters per layer as PyTorch names them: weight_ih_l{l}, weight_hh_l{l}, bias_ih_l{l}, bias_hh_l{l}.
class LSTM : public Module {
 public:
  LSTM(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1, bool bias = true, bool batch_first = false);
  // state: initial h and c, [num_layers, B, H] each (undefined: zeros).
  RecurrentOutput forward(const Tensor& x, const functional::LstmState& state);
  Tensor forward(const Tensor& x) override { return forward(x, {}).output; }
  std::string name() const override { return "LSTM"; }
  std::string extra_repr() const override;
  const std::vector<RecurrentWeights>& layers() const { return layers_; }

 private:
  int64_t input_size_, hidden_size_;
  bool batch_first_;
  std::vector<RecurrentWeights> layers_;
};

// A stack of GRU cells over a sequence, as LSTM (parameters named alike; no cell state).
class GRU : public Module {
 public:
  GRU(int64_t input_size, int64_t hidden_size, int64_t num_layers = 1, bool bias = true, bool batch_first = false);
  // h0: the initial hidden state [num_layers, B, H] (undefined: zeros).
  RecurrentOutput forward(const Tensor& x, const Tensor& h0);
  Tensor forward(const Tensor& x) override { return forward(x, Tensor()).output; }
  std::string name() const override { return "GRU"; }
  std::string extra_repr() const override;
  const std::vector<RecurrentWeights>& layers() const { return layers_; }

 private:
  int64_t input_size_, hidden_size_;
  bool batch_first_;
  std::vector<RecurrentWeights> layers_;
};

// Layer normalization over the trailing `normalized_shape` dims (weight 1, bias 0).
class LayerNorm : public Module {
 public:
  LayerNorm(const Shape& normalized_shape, double eps = 1e-5, bool elementwise_affine = true, bool bias = true);
  // Normalizes over one trailing dim of size `dim`.
  explicit LayerNorm(int64_t dim, double eps = 1e-5, bool elementwise_affine = true, bool bias = true)
      : LayerNorm(Shape{dim}, eps, elementwise_affine, bias) {}
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "LayerNorm"; }
  std::string extra_repr() const override;
  // The scale (undefined without elementwise_affine).
  const Tensor& weight() const { return weight_; }
  // The shift (undefined without elementwise_affine or bias).
  const Tensor& bias() const { return bias_; }

 private:
  Shape shape_;
  double eps_;
  Tensor weight_, bias_;
};

// RMS normalization over the trailing dims (eps unset: the dtype's machine epsilon).
class RMSNorm : public Module {
 public:
  RMSNorm(const Shape& normalized_shape, std::optional<double> eps = std::nullopt, bool elementwise_affine = true);
  // Normalizes over one trailing dim of size `dim`.
  explicit RMSNorm(int64_t dim, std::optional<double> eps = std::nullopt, bool elementwise_affine = true)
      : RMSNorm(Shape{dim}, eps, elementwise_affine) {}
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "RMSNorm"; }
  std::string extra_repr() const override;
  // The scale (undefined without elementwise_affine).
  const Tensor& weight() const { return weight_; }

 private:
  Shape shape_;
  std::optional<double> eps_;
  Tensor weight_;
};

// Zeroes elements with probability p in training mode (identity in eval mode).
class Dropout : public Module {
 public:
  explicit Dropout(double p = 0.5);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Dropout"; }
  std::string extra_repr() const override;

 private:
  double p_;
};

// GELU, exact ("none") or with the "tanh" approximation.
class GELU : public Module {
 public:
  explicit GELU(std::string approximate = "none");
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "GELU"; }
  std::string extra_repr() const override;

 private:
  std::string approximate_;
};

// x clamped to [min_val, max_val].
class Hardtanh : public Module {
 public:
  explicit Hardtanh(double min_val = -1.0, double max_val = 1.0);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Hardtanh"; }
  std::string extra_repr() const override;

 private:
  double min_val_, max_val_;
};

// x where x > 0, else negative_slope x.
class LeakyReLU : public Module {
 public:
  explicit LeakyReLU(double negative_slope = 0.01);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "LeakyReLU"; }
  std::string extra_repr() const override;

 private:
  double negative_slope_;
};

// x where x > 0, else alpha (exp(x) - 1).
class ELU : public Module {
 public:
  explicit ELU(double alpha = 1.0);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "ELU"; }
  std::string extra_repr() const override;

 private:
  double alpha_;
};

// prelu with a learned weight [num_parameters] (1, or the channel count), every element
// starting at `init`.
class PReLU : public Module {
 public:
  explicit PReLU(int64_t num_parameters = 1, double init = 0.25);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "PReLU"; }
  std::string extra_repr() const override;
  const Tensor& weight() const { return weight_; }

 private:
  Tensor weight_;
};

// A parameterless module applying one elementwise op.
#define MIXT_NN_ELEMENTWISE_MODULE(Name)                \
  class Name : public Module {                          \
   public:                                              \
    Tensor forward(const Tensor& x) override;           \
    std::string name() const override { return #Name; } \
  };
MIXT_NN_ELEMENTWISE_MODULE(ReLU)
MIXT_NN_ELEMENTWISE_MODULE(SiLU)
MIXT_NN_ELEMENTWISE_MODULE(Tanh)
MIXT_NN_ELEMENTWISE_MODULE(Sigmoid)
MIXT_NN_ELEMENTWISE_MODULE(Hardswish)
MIXT_NN_ELEMENTWISE_MODULE(Hardsigmoid)
MIXT_NN_ELEMENTWISE_MODULE(SELU)
MIXT_NN_ELEMENTWISE_MODULE(Mish)
#undef MIXT_NN_ELEMENTWISE_MODULE

// What the Conv and ConvTranspose modules share: the geometry, a weight [out, in / groups,
// *kernel] ([in, out / groups, *kernel] when transposed) and a bias [out], both starting
// U(-1/sqrt(fan_in), 1/sqrt(fan_in)) with fan_in = weight.size(1) * prod(kernel) (PyTorch's init).
class ConvModule : public Module {
 public:
  std::string extra_repr() const override;
  const Tensor& weight() const { return weight_; }
  // The bias [out_channels] (undefined without bias).
  const Tensor& bias() const { return bias_; }

 protected:
  ConvModule(const char* name, bool transposed, int64_t in_channels, int64_t out_channels, const Shape& kernel_size,
             const Shape& stride, const Shape& padding, const Shape& output_padding, const Shape& dilation,
             int64_t groups, bool bias);
  Shape stride_, padding_, output_padding_, dilation_;
  int64_t groups_;
  Tensor weight_, bias_;
};

// conv1d over x [N, C_in, L], with PyTorch's argument order.
class Conv1d : public ConvModule {
 public:
  Conv1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1, int64_t padding = 0,
         int64_t dilation = 1, int64_t groups = 1, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Conv1d"; }
};

// conv2d over x [N, C_in, H, W]; each geometry value: one per dim, or one for both.
class Conv2d : public ConvModule {
 public:
  Conv2d(int64_t in_channels, int64_t out_channels, const Shape& kernel_size, const Shape& stride = {1},
         const Shape& padding = {0}, const Shape& dilation = {1}, int64_t groups = 1, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Conv2d"; }
};

// conv3d over x [N, C_in, D, H, W] (or unbatched); each geometry value: one per dim, or one for all.
class Conv3d : public ConvModule {
 public:
  Conv3d(int64_t in_channels, int64_t out_channels, const Shape& kernel_size, const Shape& stride = {1},
         const Shape& padding = {0}, const Shape& dilation = {1}, int64_t groups = 1, bool bias = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Conv3d"; }
};

// conv_transpose1d / conv_transpose2d, with PyTorch's argument order.
class ConvTranspose1d : public ConvModule {
 public:
  ConvTranspose1d(int64_t in_channels, int64_t out_channels, int64_t kernel_size, int64_t stride = 1,
                  int64_t padding = 0, int64_t output_padding = 0, int64_t groups = 1, bool bias = true,
                  int64_t dilation = 1);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "ConvTranspose1d"; }
};
class ConvTranspose2d : public ConvModule {
 public:
  ConvTranspose2d(int64_t in_channels, int64_t out_channels, const Shape& kernel_size, const Shape& stride = {1},
                  const Shape& padding = {0}, const Shape& output_padding = {0}, int64_t groups = 1, bool bias = true,
                  const Shape& dilation = {1});
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "ConvTranspose2d"; }
};

// Pooling layers (nn::functional's max_pool / avg_pool; an empty or unset stride is the kernel
// size). The max pools return the maxima only: F::max_pool2d_with_indices gives the indices.
class MaxPool1d : public Module {
 public:
  explicit MaxPool1d(int64_t kernel_size, std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                     int64_t dilation = 1, bool ceil_mode = false);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "MaxPool1d"; }
  std::string extra_repr() const override;

 private:
  int64_t kernel_, stride_, padding_, dilation_;
  bool ceil_mode_;
};
class MaxPool2d : public Module {
 public:
  explicit MaxPool2d(const Shape& kernel_size, const Shape& stride = {}, const Shape& padding = {0},
                     const Shape& dilation = {1}, bool ceil_mode = false);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "MaxPool2d"; }
  std::string extra_repr() const override;

 private:
  Shape kernel_, stride_, padding_, dilation_;
  bool ceil_mode_;
};
class AvgPool1d : public Module {
 public:
  explicit AvgPool1d(int64_t kernel_size, std::optional<int64_t> stride = std::nullopt, int64_t padding = 0,
                     bool ceil_mode = false, bool count_include_pad = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "AvgPool1d"; }
  std::string extra_repr() const override;

 private:
  int64_t kernel_, stride_, padding_;
  bool ceil_mode_, count_include_pad_;
};
class AvgPool2d : public Module {
 public:
  explicit AvgPool2d(const Shape& kernel_size, const Shape& stride = {}, const Shape& padding = {0},
                     bool ceil_mode = false, bool count_include_pad = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "AvgPool2d"; }
  std::string extra_repr() const override;

 private:
  Shape kernel_, stride_, padding_;
  bool ceil_mode_, count_include_pad_;
};

// F::interpolate to `size`, or by `scale_factor`, with `mode` "nearest", "linear" or "bilinear".
class Upsample : public Module {
 public:
  explicit Upsample(const Shape& size = {}, std::vector<double> scale_factor = {}, std::string mode = "nearest",
                    std::optional<bool> align_corners = std::nullopt);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Upsample"; }
  std::string extra_repr() const override;

 private:
  Shape size_;
  std::vector<double> scale_factor_;
  std::string mode_;
  std::optional<bool> align_corners_;
};

// Runs its children in order, feeding each one's output to the next. Children are
// named "0", "1", ...; pass modules by value (moved) or as shared_ptr.
class Sequential : public Module {
 public:
  Sequential() = default;
  template <class... M>
  requires(sizeof...(M) > 0) explicit Sequential(M&&... modules) { (push_back(std::forward<M>(modules)), ...); }
  // Appends a module given by value.
  template <ModuleValue M>
  void push_back(M&& module) {
    push_back(std::shared_ptr<Module>(std::make_shared<std::remove_cvref_t<M>>(std::move(module))));
  }
  // Appends a shared module.
  void push_back(std::shared_ptr<Module> module);
  // Number of children.
  size_t size() const { return named_children().size(); }
  // Child `index` (raises when out of range).
  const std::shared_ptr<Module>& operator[](size_t index) const;
  // Child `index` as an M (raises when it is another type).
  template <class M>
  M& at(size_t index) const {
    M* m = dynamic_cast<M*>((*this)[index].get());
    if (m == nullptr) wrong_type(index);
    return *m;
  }
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Sequential"; }

 private:
  [[noreturn]] void wrong_type(size_t index) const;
};

// Multi-head attention over batch-first [B, L, E] inputs: a packed in-projection
// [3E, E] (xavier-uniform, zero bias), scaled_dot_product_attention per head and
// out_proj (zero bias). Masks follow scaled_dot_product_attention: bool true =
// attend, or additive floating, broadcastable to [B, num_heads, L, S].
class MultiheadAttention : public Module {
 public:
  MultiheadAttention(int64_t embed_dim, int64_t num_heads, bool bias = true, double dropout = 0.0);
  // Attention of `query` [B, L, E] over `key`/`value` [B, S, E]; returns [B, L, E].
  Tensor forward(const Tensor& query, const Tensor& key, const Tensor& value, const Tensor& attn_mask = Tensor(),
                 bool is_causal = false);
  // Self-attention: forward(x, x, x).
  Tensor forward(const Tensor& x) override { return forward(x, x, x); }
  std::string name() const override { return "MultiheadAttention"; }
  std::string extra_repr() const override;
  // The packed q, k, v projection weights [3E, E].
  const Tensor& in_proj_weight() const { return in_proj_weight_; }
  // The packed projection biases [3E] (undefined without bias).
  const Tensor& in_proj_bias() const { return in_proj_bias_; }
  // The output projection.
  Linear& out_proj() const { return *out_proj_; }

 private:
  int64_t embed_dim_, num_heads_;
  double dropout_;
  Tensor in_proj_weight_, in_proj_bias_;
  std::shared_ptr<Linear> out_proj_;
};

// A pre-norm transformer block: x + drop(attn(ln1(x))), then x + mlp(ln2(x)) with
// mlp = Linear(dim, hidden) -> GELU -> Linear(hidden, dim) -> Dropout.
class TransformerBlock : public Module {
 public:
  TransformerBlock(int64_t dim, int64_t num_heads, double mlp_ratio = 4.0, double dropout = 0.0, bool causal = true);
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "TransformerBlock"; }
  std::string extra_repr() const override;
  // The sub-modules, for inspection.
  LayerNorm& ln1() const { return *ln1_; }
  MultiheadAttention& attn() const { return *attn_; }
  LayerNorm& ln2() const { return *ln2_; }
  Sequential& mlp() const { return *mlp_; }

 private:
  bool causal_;
  std::shared_ptr<LayerNorm> ln1_;
  std::shared_ptr<MultiheadAttention> attn_;
  std::shared_ptr<Dropout> drop_;
  std::shared_ptr<LayerNorm> ln2_;
  std::shared_ptr<Sequential> mlp_;
};

}  // namespace mixt::nn
