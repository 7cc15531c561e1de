// Composite ops: one kernel for every backend, written with other ops' front ends (mm, bmm, addmm, views).
// matmul (numpy rules), linear, linear_backward, dot, mv and outer. attrs.dtype (out_dtype) is passed on to the GEMMs.
// Also prelu (PyTorch composes it too: a reshaped weight and one elementwise select).
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/matmul_plan.h>
#include <mixt/kernels/composite/register.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {
namespace {

// Sizes [lo, hi) of `s`.
Shape sub_shape(const Shape& s, int lo, int hi) {
  Shape r;
  for (int i = lo; i < hi; ++i) r.push_back(s[i]);
  return r;
}

// `s` followed by `tail`.
Shape concat(Shape s, std::initializer_list<int64_t> tail) {
  for (int64_t v : tail) s.push_back(v);
  return s;
}

// matmul with a batch on at least one side (the other side may be 1-D, 2-D or batched): broadcast the batch dims,
// flatten them, and run one bmm.
Tensor batched_matmul(const OpCall& c, const Tensor& a, const Tensor& b, ScalarType out_dtype) {
  const Tensor a3 = a.dim() == 1 ? a.unsqueeze(0) : a;  // [..., n, k]
  const Tensor b3 = b.dim() == 1 ? b.unsqueeze(1) : b;  // [..., k, m]
  const Shape batch_a = sub_shape(a3.sizes(), 0, a3.dim() - 2), batch_b = sub_shape(b3.sizes(), 0, b3.dim() - 2);
  Shape batch;
  try {
    batch = broadcast_shapes(batch_a, batch_b, "matmul");
  } catch (const Error&) {
    MIXT_FAIL_OP(c, "the batch dimensions of {} and {} cannot be broadcast together", a.sizes(), b.sizes());
  }
  const int64_t n = a3.size(-2), k = a3.size(-1), m = b3.size(-1), count = batch.numel();
  const Tensor a_flat = a3.expand(concat(batch, {n, k})).reshape({count, n, k});
  const Tensor b_flat = b3.expand(concat(batch, {k, m})).reshape({count, k, m});
  Shape out = batch;
  if (a.dim() > 1) out.push_back(n);
  if (b.dim() > 1) out.push_back(m);
  return bmm(a_flat, b_flat, out_dtype).view(out);
}

// numpy-style matmul of `a` and `b` (see runtime/ops/ops.h).
Tensor matmul_of(const OpCall& c, const Tensor& a, const Tensor& b, ScalarType out_dtype) {
  const int64_t da = a.dim(), db = b.dim();
  MIXT_CHECK_OP(da >= 1 && db >= 1, c, "both arguments need at least one dimension, but got {}-D and {}-D", da, db);
  const int64_t ka = a.size(-1), kb = db == 1 ? b.size(0) : b.size(-2);
  MIXT_CHECK_OP(ka == kb, c, "shapes {} and {} cannot be multiplied ({} != {})", a.sizes(), b.sizes(), ka, kb);
  if (da == 1 && db == 1) return mm(a.unsqueeze(0), b.unsqueeze(1), out_dtype).view(Shape{});
  if (da == 2 && db == 1) return mm(a, b.unsqueeze(1), out_dtype).squeeze(1);
  if (da == 1 && db == 2) return mm(a.unsqueeze(0), b, out_dtype).squeeze(0);
  if (da == 2 && db == 2) return mm(a, b, out_dtype);
  if (da >= 3 && db <= 2) {  // fold a's batch dims into its rows: one mm
    const Shape lead = sub_shape(a.sizes(), 0, static_cast<int>(da) - 1);
    const Tensor rows = a.reshape({lead.numel(), ka});
    if (db == 1) return mm(rows, b.unsqueeze(1), out_dtype).view(lead);
    return mm(rows, b, out_dtype).view(concat(lead, {b.size(1)}));
  }
  return batched_matmul(c, a, b, out_dtype);
}

void matmul_kernel(OpCall& c, DispatchKeySet) { c.out[0] = matmul_of(c, c.in[0], c.in[1], c.attrs.dtype); }

// x @ weight^T + bias, with x's leading dims folded into the rows of one mm/addmm. A bias
// that varies along those dims (it broadcasts to the output, not to one row) is expanded
// to the output and folded the same way.
void linear_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& x = c.in[0];
  const Tensor& w = c.in[1];
  Tensor bias = c.n_in > 2 ? c.in[2] : Tensor();
  const LinearPlan l = plan_linear(c);  // the checks the fused kernels make, with the same messages
  const ScalarType od = c.attrs.dtype;
  const Tensor wt = w.t();
  if (x.dim() == 2) {
    c.out[0] = bias.defined() ? addmm(bias, x, wt, 1, 1, od) : mm(x, wt, od);
    return;
  }
  const int64_t rows = l.product.n, out = l.product.m;
  if (bias.defined() && bias.dim() > 1) bias = bias.expand(l.result_shape).reshape({rows, out});
  const Tensor x2 = x.reshape({rows, x.size(-1)});
  const Tensor r = bias.defined() ? addmm(bias, x2, wt, 1, 1, od) : mm(x2, wt, od);
  c.out[0] = r.view(l.result_shape);
}

// linear's gradients from mm and sum (the backends without a kernel of their own, and
// the reference of those that have one): g [*, out] and x [*, in] as rows.
void linear_backward_kernel(OpCall& c, DispatchKeySet) {
  const LinearBackwardPlan p = plan_linear_backward(c);
  const Tensor g2 = c.in[0].reshape({p.rows, p.out});
  if (p.input_grad) c.out[0] = mm(g2, c.in[2]).view(p.input_shape);
  if (p.weight_grad) c.out[1] = mm(g2.t(), c.in[1].reshape({p.rows, p.in}));
  // Summed in the accumulate type (float32 for narrow floats, int64 for integers), rounded once.
  if (p.bias_grad) c.out[2] = sum(g2.to(accumulate_type(p.dtype)), {0}).to(p.dtype);
}

// Inner product of two 1-D tensors of one dtype: a 0-D result.
void dot_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& a = c.in[0];
  const Tensor& b = c.in[1];
  MIXT_CHECK_OP(a.dim() == 1 && b.dim() == 1, c, "expected 1-D tensors, but got {}-D and {}-D", a.dim(), b.dim());
  MIXT_CHECK_OP(a.dtype() == b.dtype(), c, "expected both vectors to have the same dtype, but found {} and {}",
                a.dtype(), b.dtype());
  MIXT_CHECK_OP(a.size(0) == b.size(0), c, "inconsistent sizes: {} and {} elements", a.size(0), b.size(0));
  c.out[0] = mm(a.unsqueeze(0), b.unsqueeze(1), c.attrs.dtype).view(Shape{});
}

// Matrix [n, k] times vector [k]: a [n] result.
void mv_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& m = c.in[0];
  const Tensor& v = c.in[1];
  MIXT_CHECK_OP(m.dim() == 2 && v.dim() == 1, c, "expected a 2-D matrix and a 1-D vector, but got {}-D and {}-D",
                m.dim(), v.dim());
  MIXT_CHECK_OP(m.size(1) == v.size(0), c, "matrix of shape {} and vector of shape {} cannot be multiplied",
                m.sizes(), v.sizes());
  c.out[0] = mm(m, v.unsqueeze(1), c.attrs.dtype).squeeze(1);
}

// Outer product of two 1-D tensors (dtypes promoted as PyTorch's a[:, None] * b[None, :] does).
void outer_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& a = c.in[0];
  const Tensor& b = c.in[1];
  MIXT_CHECK_OP(a.dim() == 1 && b.dim() == 1, c, "expected 1-D tensors, but got {}-D and {}-D", a.dim(), b.dim());
  const ScalarType dtype = promote_types_or_undefined(a.dtype(), b.dtype());
  MIXT_CHECK_OP(dtype != ScalarType::Undefined, c, "no common dtype for {} and {}", a.dtype(), b.dtype());
  MIXT_CHECK_OP(dtype != kBool, c, "not implemented for bool operands");
  c.out[0] = mm(a.to(dtype).unsqueeze(1), b.to(dtype).unsqueeze(0), c.attrs.dtype);
}

// max(0, x) + weight min(0, x): the weight (one element, or one per channel of dim 1; a
// 1-D x has one channel) is reshaped to broadcast over x, as PyTorch's prelu does.
void prelu_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& x = c.in[0];
  const Tensor& w = c.in[1];
  MIXT_CHECK_OP(is_floating(x.dtype()) && x.dtype() == w.dtype(), c,
                "expected a floating input and a weight of its dtype, got {} and {}", x.dtype(), w.dtype());
  MIXT_CHECK_OP(w.dim() <= 1, c, "expected a 0-D or 1-D weight, got {}", w.sizes());
  if (w.numel() != 1) {
    const int64_t channels = x.dim() > 1 ? x.size(1) : 1;
    MIXT_CHECK_OP(x.dim() > 0 && w.numel() == channels, c,
                  "a weight of {} elements needs an input with as many channels (dim 1), got input {}", w.numel(),
                  x.sizes());
  }
  Tensor wb = w;
  if (w.dim() != x.dim()) {
    Shape s = Shape::filled(static_cast<int>(x.dim()), 1);
    if (x.dim() > 1) s[1] = w.numel();
    wb = reshape(w, s);
  }
  c.out[0] = where(gt(x, 0), x, mul(wb, x));
}

}  // namespace

void register_composite_kernels() {
  register_composite(OpId::matmul, matmul_kernel);
  register_composite(OpId::linear, linear_kernel);
  register_composite(OpId::linear_backward, linear_backward_kernel);
  register_composite(OpId::dot, dot_kernel);
  register_composite(OpId::mv, mv_kernel);
  register_composite(OpId::outer, outer_kernel);
  register_composite(OpId::prelu, prelu_kernel);
}

}  // namespace mixt
