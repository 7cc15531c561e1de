// The recurrent cells as composites (autograd differentiates through the ops they call):
// lstm_cell, gru_cell, rnn_tanh_cell and rnn_relu_cell, with PyTorch's gate order and
// shapes. Narrow floats (float16, bfloat16, float8) compute in float32 and each result
// is rounded once to the input's dtype.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/composite/register.h>
#include <mixt/runtime/ops/nn.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {
namespace {

namespace F = nn::functional;

// `t` in float32 when it is a narrow float.
Tensor up(const Tensor& t) { return t.defined() && is_reduced_float(t.dtype()) ? t.to(kFloat32) : t; }

// A cell's operands, batched ([B, I] input, [B, H] states) and in the compute dtype.
struct Cell {
  Tensor x;
  Tensor states[2];
  Tensor w_ih, w_hh, b_ih, b_hh;
  bool batched;
  ScalarType dtype;  // of the inputs and results
};

// A cell's states: lstm_cell's list (h, c), or the others' input 1 (h).
std::vector<Tensor> states_of(const OpCall& c) {
  if (c.op == OpId::lstm_cell) return {c.list.begin(), c.list.end()};
  return {c.in[1]};
}

// Checks a cell's call: in: input, [h (but lstm_cell: list h, c)], w_ih, w_hh, b_ih?, b_hh?;
// `gates` blocks of H rows.
Cell check_cell(const OpCall& c, int64_t gates) {
  const std::vector<Tensor> states = states_of(c);
  const int first_weight = c.op == OpId::lstm_cell ? 1 : 2;
  MIXT_CHECK_OP(c.op != OpId::lstm_cell || states.size() == 2, c, "expected two states (h, c), got {}",
                states.size());
  const Tensor& x = c.in[0];
  const Tensor& w_ih = c.in[first_weight];
  const Tensor& w_hh = c.in[first_weight + 1];
  const int bias_at = first_weight + 2;
  const Tensor b_ih = c.n_in > bias_at ? c.in[bias_at] : Tensor();
  const Tensor b_hh = c.n_in > bias_at + 1 ? c.in[bias_at + 1] : Tensor();
  MIXT_CHECK_OP(is_floating(x.dtype()), c, "expected a floating input, got {}", x.dtype());
  std::vector<Tensor> operands(c.in.begin() + 1, c.in.begin() + c.n_in);
  operands.insert(operands.end(), states.begin(), states.end());
  for (const Tensor& t : operands)
    MIXT_CHECK_OP(!t.defined() || t.dtype() == x.dtype(), c,
                  "expected every operand in the input's dtype {}, got {}", x.dtype(), t.dtype());
  MIXT_CHECK_OP(x.dim() == 1 || x.dim() == 2, c, "expected an input [batch, input_size] or [input_size], got shape {}",
                x.sizes());
  MIXT_CHECK_OP(w_ih.dim() == 2 && w_hh.dim() == 2, c, "expected 2-D weights, got w_ih {} and w_hh {}", w_ih.sizes(),
                w_hh.sizes());
  const int64_t hidden = w_hh.size(1);
  MIXT_CHECK_OP(w_hh.size(0) == gates * hidden && w_ih.size(0) == gates * hidden, c,
                "expected w_ih [{} * hidden, input_size] and w_hh [{} * hidden, hidden] with hidden = {}, got {} and {}",
                gates, gates, hidden, w_ih.sizes(), w_hh.sizes());
  MIXT_CHECK_OP(w_ih.size(1) == x.size(-1), c, "the input of shape {} does not match w_ih of shape {}", x.sizes(),
                w_ih.sizes());
  const bool batched = x.dim() == 2;
  const Shape state_shape = batched ? Shape{x.size(0), hidden} : Shape{hidden};
  Cell cell{up(batched ? x : x.unsqueeze(0)), {}, up(w_ih), up(w_hh), up(b_ih), up(b_hh), batched, x.dtype()};
  for (size_t s = 0; s < states.size(); ++s) {
    const Tensor& h = states[s];
    MIXT_CHECK_OP(h.sizes() == state_shape, c, "expected a hidden state of shape {} for the input of shape {}, got {}",
                  state_shape, x.sizes(), h.sizes());
    cell.states[s] = up(batched ? h : h.unsqueeze(0));
  }
  for (const Tensor& b : {b_ih, b_hh})
    MIXT_CHECK_OP(!b.defined() || b.sizes() == Shape{gates * hidden}, c, "expected biases of shape [{}], got {}",
                  gates * hidden, b.sizes());
  return cell;
}

// A result of the cell in the inputs' dtype and batching.
Tensor result(const Cell& cell, const Tensor& t) { return (cell.batched ? t : t.squeeze(0)).to(cell.dtype); }

void lstm_cell_kernel(OpCall& c, DispatchKeySet) {
  const Cell cell = check_cell(c, 4);
  const Tensor gates = add(F::linear(cell.x, cell.w_ih, cell.b_ih), F::linear(cell.states[0], cell.w_hh, cell.b_hh));
  const std::vector<Tensor> g = chunk(gates, 4, 1);  // input, forget, cell, output
  const Tensor c_next = add(mul(sigmoid(g[1]), cell.states[1]), mul(sigmoid(g[0]), tanh(g[2])));
  const Tensor h_next = mul(sigmoid(g[3]), tanh(c_next));
  c.out[0] = result(cell, h_next);
  c.out[1] = result(cell, c_next);
}

void gru_cell_kernel(OpCall& c, DispatchKeySet) {
  const Cell cell = check_cell(c, 3);
  const std::vector<Tensor> gi = chunk(F::linear(cell.x, cell.w_ih, cell.b_ih), 3, 1);  // reset, update, new
  const std::vector<Tensor> gh = chunk(F::linear(cell.states[0], cell.w_hh, cell.b_hh), 3, 1);
  const Tensor r = sigmoid(add(gi[0], gh[0]));
  const Tensor z = sigmoid(add(gi[1], gh[1]));
  const Tensor n = tanh(add(gi[2], mul(r, gh[2])));
  c.out[0] = result(cell, add(n, mul(z, sub(cell.states[0], n))));  // (1 - z) n + z h
}

template <bool Relu>
void rnn_cell_kernel(OpCall& c, DispatchKeySet) {
  const Cell cell = check_cell(c, 1);
  const Tensor pre = add(F::linear(cell.x, cell.w_ih, cell.b_ih), F::linear(cell.states[0], cell.w_hh, cell.b_hh));
  c.out[0] = result(cell, Relu ? relu(pre) : tanh(pre));
}

}  // namespace

void register_rnn_composite_kernels() {
  register_composite(OpId::lstm_cell, lstm_cell_kernel);
  register_composite(OpId::gru_cell, gru_cell_kernel);
  register_composite(OpId::rnn_tanh_cell, rnn_cell_kernel<false>);
  register_composite(OpId::rnn_relu_cell, rnn_cell_kernel<true>);
}

}  // namespace mixt
