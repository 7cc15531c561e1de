// Op cases of the recurrent cells (lstm_cell, gru_cell, rnn_tanh_cell, rnn_relu_cell)
// with their references: PyTorch's gate formulas in double (plain loops). The cells
// compute in float32 (float64 for float64) and round each result once: the tolerance
// allows half an ulp plus the float32 roundings of the two GEMMs and the gate math at
// the size of the pre-activations.
#include <cmath>

#include "op_case_builder.h"

namespace mixt::testing {
namespace {

namespace nnf = nn::functional;
using ref::Ref;
using ref::Vec;
using Ins = std::vector<Tensor>;

size_t at(int64_t i) { return static_cast<size_t>(i); }
double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

// x w^T + b for a batch of rows: x [B, I] (or [I]), w [G, I], b [G] (empty: none); [B, G] row-major.
Vec affine(const Ref& x, const Ref& w, const Vec& b, int64_t batch) {
  const int64_t g = w.sizes[0], in = w.sizes[1];
  Vec y(at(batch * g), 0.0);
  for (int64_t r = 0; r < batch; ++r)
    for (int64_t o = 0; o < g; ++o) {
      double s = b.empty() ? 0.0 : b[at(o)];
      for (int64_t i = 0; i < in; ++i) s += x.v[at(r * in + i)] * w.v[at(o * in + i)];
      y[at(r * g + o)] = s;
    }
  return y;
}

// The cells' pre-activations x w_ih^T + b_ih and h w_hh^T + b_hh ([B, G H] each).
struct Pre {
  Vec xi, hh;
  int64_t batch, hidden;
};
Pre pre(const Ref& x, const Ref& h, const Ref& w_ih, const Ref& w_hh, const Refs& in, size_t bias_at) {
  const int64_t batch = x.sizes.size() == 2 ? x.sizes[0] : 1, hidden = w_hh.sizes[1];
  const Vec b_ih = in.size() > bias_at ? in[bias_at].v : Vec{}, b_hh = in.size() > bias_at + 1 ? in[bias_at + 1].v : Vec{};
  return {affine(x, w_ih, b_ih, batch), affine(h, w_hh, b_hh, batch), batch, hidden};
}

// lstm_cell's h' (want_c false) or c'.
Ref lstm_ref(const Refs& in, bool want_c) {
  const Pre p = pre(in[0], in[1], in[3], in[4], in, 5);
  Ref out{in[1].sizes, Vec(in[1].v.size())};
  const int64_t H = p.hidden;
  for (int64_t r = 0; r < p.batch; ++r)
    for (int64_t j = 0; j < H; ++j) {
      auto gate = [&](int64_t k) { return p.xi[at(r * 4 * H + k * H + j)] + p.hh[at(r * 4 * H + k * H + j)]; };
      const double i = sigmoid(gate(0)), f = sigmoid(gate(1)), g = std::tanh(gate(2)), o = sigmoid(gate(3));
      const double c = f * in[2].v[at(r * H + j)] + i * g;
      out.v[at(r * H + j)] = want_c ? c : o * std::tanh(c);
    }
  return out;
}

Ref gru_ref(const Refs& in) {
  const Pre p = pre(in[0], in[1], in[2], in[3], in, 4);
  Ref out{in[1].sizes, Vec(in[1].v.size())};
  const int64_t H = p.hidden;
  for (int64_t r = 0; r < p.batch; ++r)
    for (int64_t j = 0; j < H; ++j) {
      auto at3 = [&](const Vec& v, int64_t k) { return v[at(r * 3 * H + k * H + j)]; };
      const double rg = sigmoid(at3(p.xi, 0) + at3(p.hh, 0)), z = sigmoid(at3(p.xi, 1) + at3(p.hh, 1));
      const double n = std::tanh(at3(p.xi, 2) + rg * at3(p.hh, 2));
      out.v[at(r * H + j)] = (1 - z) * n + z * in[1].v[at(r * H + j)];
    }
  return out;
}

Ref rnn_ref(const Refs& in, bool relu) {
  const Pre p = pre(in[0], in[1], in[2], in[3], in, 4);
  Ref out{in[1].sizes, Vec(in[1].v.size())};
  for (size_t i = 0; i < out.v.size(); ++i) {
    const double s = p.xi[i] + p.hh[i];
    out.v[i] = relu ? std::max(0.0, s) : std::tanh(s);
  }
  return out;
}

// Data inputs of these shapes, values in [-1, 1] (weights and biases in [-0.5, 0.5]).
std::function<CaseInputs(ScalarType)> cell_inputs(std::vector<Shape> shapes, int n_states) {
  return [=](ScalarType dt) {
    CaseInputs ci;
    for (size_t i = 0; i < shapes.size(); ++i) {
      const double r = static_cast<int>(i) <= n_states ? 1.0 : 0.5;
      ci.data |= 1u << i;
      ci.in.push_back(data(dt, shapes[i], -r, r, 80 + static_cast<uint32_t>(i)));
    }
    return ci;
  };
}

Run run(std::function<Tensor(const Ins&)> f) {
  return [f](const Ins& in, ScalarType, Device) { return f(in); };
}

// The optional input i, or an undefined tensor.
Tensor opt(const Ins& in, size_t i) { return i < in.size() ? in[i] : Tensor(); }

}  // namespace

void add_rnn_cases(Builder& b) {
  // Up to |x| I + |h| H + 2 |b| <= 6 before the gates: the GEMMs' float32 roundings at that size.
  const Tolerance cell{0.5, 24, 6};
  const int64_t B = 2, I = 3, H = 2;
  b.add("lstm_cell/h", OpId::lstm_cell, F, F,
        cell_inputs({{B, I}, {B, H}, {B, H}, {4 * H, I}, {4 * H, H}, {4 * H}, {4 * H}}, 2),
        run([](const Ins& in) { return nnf::lstm_cell(in[0], {in[1], in[2]}, in[3], in[4], in[5], in[6]).h; }))
      .with([](const Refs& in, ScalarType) { return lstm_ref(in, false); }, cell);
  b.add("lstm_cell/c unbatched, no bias", OpId::lstm_cell, F, F,
        cell_inputs({{I}, {H}, {H}, {4 * H, I}, {4 * H, H}}, 2),
        run([](const Ins& in) { return nnf::lstm_cell(in[0], {in[1], in[2]}, in[3], in[4]).c; }))
      .with([](const Refs& in, ScalarType) { return lstm_ref(in, true); }, cell);
  b.add("gru_cell", OpId::gru_cell, F, F, cell_inputs({{B, I}, {B, H}, {3 * H, I}, {3 * H, H}, {3 * H}, {3 * H}}, 1),
        run([](const Ins& in) { return nnf::gru_cell(in[0], in[1], in[2], in[3], in[4], in[5]); }))
      .with([](const Refs& in, ScalarType) { return gru_ref(in); }, cell);
  b.add("gru_cell/unbatched", OpId::gru_cell, F, F, cell_inputs({{I}, {H}, {3 * H, I}, {3 * H, H}, {3 * H}}, 1),
        run([](const Ins& in) { return nnf::gru_cell(in[0], in[1], in[2], in[3], opt(in, 4)); }))
      .with([](const Refs& in, ScalarType) { return gru_ref(in); }, cell);
  b.add("rnn_tanh_cell", OpId::rnn_tanh_cell, F, F, cell_inputs({{B, I}, {B, H}, {H, I}, {H, H}, {H}, {H}}, 1),
        run([](const Ins& in) { return nnf::rnn_tanh_cell(in[0], in[1], in[2], in[3], in[4], in[5]); }))
      .with([](const Refs& in, ScalarType) { return rnn_ref(in, false); }, cell);
  b.add("rnn_relu_cell", OpId::rnn_relu_cell, F, F, cell_inputs({{B, I}, {B, H}, {H, I}, {H, H}}, 1),
        run([](const Ins& in) { return nnf::rnn_relu_cell(in[0], in[1], in[2], in[3]); }))
      .with([](const Refs& in, ScalarType) { return rnn_ref(in, true); }, cell);
}

}  // namespace mixt::testing
