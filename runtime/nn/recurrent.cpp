// The recurrent layers of runtime/nn/modules.h: LSTMCell, GRUCell, RNNCell, and the
// multi-layer LSTM and GRU, which loop the cells over the time steps.
#include <cmath>

#include <fmt/format.h>

#include <mixt/runtime/check.h>
#include <mixt/runtime/nn/modules.h>
#include <mixt/runtime/ops/nn.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::nn {
namespace F = functional;

namespace {

// Registers one cell's parameters (`gates` blocks of hidden_size rows) as weight_ih{suffix}, ...
RecurrentWeights make_weights(Module& m, const char* who, int64_t input_size, int64_t hidden_size, int64_t gates,
                              bool bias, const std::string& suffix) {
  MIXT_CHECK(input_size > 0 && hidden_size > 0, who, "sizes must be positive: input_size={}, hidden_size={}",
             input_size, hidden_size);
  const double bound = 1.0 / std::sqrt(static_cast<double>(hidden_size));
  // A float32 parameter drawn from U(-bound, bound).
  auto param = [&](const std::string& name, const Shape& shape) {
    Tensor t = empty(shape);
    return m.register_parameter(name + suffix, uniform_(t, -bound, bound));
  };
  const int64_t rows = gates * hidden_size;
  RecurrentWeights w{param("weight_ih", {rows, input_size}), param("weight_hh", {rows, hidden_size}), {}, {}};
  if (bias) {
    w.b_ih = param("bias_ih", {rows});
    w.b_hh = param("bias_hh", {rows});
  }
  return w;
}

// The weights of `layers` stacked cells, named with the suffix _l{layer}; layer 0 reads the input.
std::vector<RecurrentWeights> make_layers(Module& m, const char* who, int64_t input_size, int64_t hidden_size,
                                          int64_t layers, int64_t gates, bool bias) {
  MIXT_CHECK(layers > 0, who, "num_layers must be positive, got {}", layers);
  std::vector<RecurrentWeights> w;
  for (int64_t l = 0; l < layers; ++l)
    w.push_back(make_weights(m, who, l == 0 ? input_size : hidden_size, hidden_size, gates, bias,
                             "_l" + std::to_string(l)));
  return w;
}

std::string cell_repr(int64_t input_size, int64_t hidden_size, const RecurrentWeights& w) {
  return fmt::format("{}, {}, bias={}", input_size, hidden_size, w.b_ih.defined());
}

// A sequence layer's input as [T, B, I] (batch_first and unbatched inputs rearranged).
struct Sequence {
  Tensor steps;  // [T, B, I]
  bool batched;
};
Sequence as_steps(const Tensor& x, bool batch_first, int64_t input_size, const char* who) {
  MIXT_CHECK(x.defined() && (x.dim() == 2 || x.dim() == 3), who,
             "expected an input [T, B, input_size] ([B, T, input_size] with batch_first) or [T, input_size], got {}",
             x.defined() ? x.sizes() : Shape{});
  MIXT_CHECK(x.size(-1) == input_size, who, "expected input_size {}, got an input of shape {}", input_size, x.sizes());
  const bool batched = x.dim() == 3;
  const Tensor steps = batched ? (batch_first ? x.transpose(0, 1) : x) : x.unsqueeze(1);
  MIXT_CHECK(steps.size(0) > 0, who, "expected at least one time step, got an input of shape {}", x.sizes());
  return {steps, batched};
}

// Layer l's initial state from `state` [L, B, H] ([L, H] unbatched), or undefined (zeros).
Tensor layer_state(const Tensor& state, int64_t l, int64_t layers, int64_t batch, int64_t hidden, bool batched,
                   const char* who) {
  if (!state.defined()) return Tensor();
  const Shape want = batched ? Shape{layers, batch, hidden} : Shape{layers, hidden};
  MIXT_CHECK(state.sizes() == want, who, "expected an initial state of shape {}, got {}", want, state.sizes());
  const Tensor s = state.select(0, l);
  return batched ? s : s.unsqueeze(0);
}

// The sequence output and final states, back in the caller's layout.
RecurrentOutput finish(const std::vector<Tensor>& outputs, const std::vector<Tensor>& hs, const std::vector<Tensor>& cs,
                       bool batched, bool batch_first) {
  Tensor out = stack(outputs, 0);  // [T, B, H]
  Tensor h = stack(hs, 0), c = cs.empty() ? Tensor() : stack(cs, 0);
  if (!batched) {
    out = out.squeeze(1);
    h = h.squeeze(1);
    if (c.defined()) c = c.squeeze(1);
  } else if (batch_first) {
    out = out.transpose(0, 1);
  }
  return {out, h, c};
}

std::string sequence_repr(int64_t input_size, int64_t hidden_size, const std::vector<RecurrentWeights>& layers,
                          bool batch_first) {
  return fmt::format("{}, {}, num_layers={}, bias={}, batch_first={}", input_size, hidden_size, layers.size(),
                     layers.front().b_ih.defined(), batch_first);
}

}  // namespace

// ---- cells ----------------------------------------------------------------------

LSTMCell::LSTMCell(int64_t input_size, int64_t hidden_size, bool bias)
    : input_size_(input_size), hidden_size_(hidden_size),
      w_(make_weights(*this, "LSTMCell", input_size, hidden_size, 4, bias, "")) {}

F::LstmState LSTMCell::forward(const Tensor& x, const F::LstmState& state) {
  return F::lstm_cell(x, state, w_.w_ih, w_.w_hh, w_.b_ih, w_.b_hh);
}

std::string LSTMCell::extra_repr() const { return cell_repr(input_size_, hidden_size_, w_); }

GRUCell::GRUCell(int64_t input_size, int64_t hidden_size, bool bias)
    : input_size_(input_size), hidden_size_(hidden_size),
      w_(make_weights(*this, "GRUCell", input_size, hidden_size, 3, bias, "")) {}

Tensor GRUCell::forward(const Tensor& x, const Tensor& h) { return F::gru_cell(x, h, w_.w_ih, w_.w_hh, w_.b_ih, w_.b_hh); }

std::string GRUCell::extra_repr() const { return cell_repr(input_size_, hidden_size_, w_); }

RNNCell::RNNCell(int64_t input_size, int64_t hidden_size, bool bias, const std::string& nonlinearity)
    : input_size_(input_size), hidden_size_(hidden_size), relu_(nonlinearity == "relu") {
  MIXT_CHECK(nonlinearity == "tanh" || nonlinearity == "relu", "RNNCell",
             "nonlinearity must be \"tanh\" or \"relu\", got \"{}\"", nonlinearity);
  w_ = make_weights(*this, "RNNCell", input_size, hidden_size, 1, bias, "");
}

Tensor RNNCell::forward(const Tensor& x, const Tensor& h) {
  return relu_ ? F::rnn_relu_cell(x, h, w_.w_ih, w_.w_hh, w_.b_ih, w_.b_hh)
               : F::rnn_tanh_cell(x, h, w_.w_ih, w_.w_hh, w_.b_ih, w_.b_hh);
}

std::string RNNCell::extra_repr() const {
  return cell_repr(input_size_, hidden_size_, w_) + (relu_ ? ", nonlinearity=relu" : "");
}

// ---- sequences ------------------------------------------------------------------

LSTM::LSTM(int64_t input_size, int64_t hidden_size, int64_t num_layers, bool bias, bool batch_first)
    : input_size_(input_size), hidden_size_(hidden_size), batch_first_(batch_first),
      layers_(make_layers(*this, "LSTM", input_size, hidden_size, num_layers, 4, bias)) {}

RecurrentOutput LSTM::forward(const Tensor& x, const F::LstmState& state) {
  const Sequence seq = as_steps(x, batch_first_, input_size_, "LSTM");
  const int64_t steps = seq.steps.size(0), batch = seq.steps.size(1), n = static_cast<int64_t>(layers_.size());
  Tensor input = seq.steps;
  std::vector<Tensor> outputs, hs, cs;
  for (int64_t l = 0; l < n; ++l) {
    const RecurrentWeights& w = layers_[static_cast<size_t>(l)];
    F::LstmState s{layer_state(state.h, l, n, batch, hidden_size_, seq.batched, "LSTM"),
                   layer_state(state.c, l, n, batch, hidden_size_, seq.batched, "LSTM")};
    outputs.clear();
    for (int64_t t = 0; t < steps; ++t) {
      s = F::lstm_cell(input.select(0, t), s, w.w_ih, w.w_hh, w.b_ih, w.b_hh);
      outputs.push_back(s.h);
    }
    hs.push_back(s.h);
    cs.push_back(s.c);
    if (l + 1 < n) input = stack(outputs, 0);
  }
  return finish(outputs, hs, cs, seq.batched, batch_first_);
}

std::string LSTM::extra_repr() const { return sequence_repr(input_size_, hidden_size_, layers_, batch_first_); }

GRU::GRU(int64_t input_size, int64_t hidden_size, int64_t num_layers, bool bias, bool batch_first)
    : input_size_(input_size), hidden_size_(hidden_size), batch_first_(batch_first),
      layers_(make_layers(*this, "GRU", input_size, hidden_size, num_layers, 3, bias)) {}

RecurrentOutput GRU::forward(const Tensor& x, const Tensor& h0) {
  const Sequence seq = as_steps(x, batch_first_, input_size_, "GRU");
  const int64_t steps = seq.steps.size(0), batch = seq.steps.size(1), n = static_cast<int64_t>(layers_.size());
  Tensor input = seq.steps;
  std::vector<Tensor> outputs, hs;
  for (int64_t l = 0; l < n; ++l) {
    const RecurrentWeights& w = layers_[static_cast<size_t>(l)];
    Tensor h = layer_state(h0, l, n, batch, hidden_size_, seq.batched, "GRU");
    outputs.clear();
    for (int64_t t = 0; t < steps; ++t) {
      h = F::gru_cell(input.select(0, t), h, w.w_ih, w.w_hh, w.b_ih, w.b_hh);
      outputs.push_back(h);
    }
    hs.push_back(h);
    if (l + 1 < n) input = stack(outputs, 0);
  }
  return finish(outputs, hs, {}, seq.batched, batch_first_);
}

std::string GRU::extra_repr() const { return sequence_repr(input_size_, hidden_size_, layers_, batch_first_); }

}  // namespace mixt::nn
