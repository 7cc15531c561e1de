// Linear-algebra composites: addmv, addr, addbmm, addmm_activation, vdot, linalg_vecdot,
// chain_matmul, linalg_multi_dot, tensordot, bilinear and einsum, written in mm, bmm, addmm,
// sum and views, so every backend runs them and autograd differentiates through them.
// attrs.dtype (an out_dtype autocast may set) goes to the GEMM that makes the result.
#include <algorithm>
#include <array>
#include <limits>
#include <string>
#include <vector>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/composite/products.h>
#include <mixt/kernels/composite/register.h>
#include <mixt/runtime/ops/nn.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {
namespace {

void check_same_dtype(const OpCall& c, const Tensor& a, const Tensor& b) {
  MIXT_CHECK_OP(a.dtype() == b.dtype(), c, "expected operands of one dtype, but got {} and {}", a.dtype(),
                b.dtype());
}

// The dtype of a result: attrs.dtype when set, else the operands'.
ScalarType result_dtype(const OpCall& c, ScalarType operands) {
  return c.attrs.dtype == ScalarType::Undefined ? operands : c.attrs.dtype;
}

// `self` as the bias of an [n, m] product: it must broadcast to [n, m] (sizes in the message).
void check_bias(const OpCall& c, const Tensor& self, const Shape& result) {
  bool fits = self.dim() <= result.size();
  for (int64_t i = 1; fits && i <= self.dim(); ++i) {
    const int64_t s = self.size(-i), r = result[result.size() - i];
    fits = s == r || s == 1;
  }
  MIXT_CHECK_OP(fits, c, "self of shape {} cannot be broadcast to the result's shape {}", self.sizes(), result);
}

// beta * self + alpha * (mat [n, m] @ vec [m]).
void addmv_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &self = c.in[0], &mat = c.in[1], &vec = c.in[2];
  MIXT_CHECK_OP(mat.dim() == 2 && vec.dim() == 1, c,
                "expected a 2-D matrix and a 1-D vector, but got shapes {} and {}", mat.sizes(), vec.sizes());
  MIXT_CHECK_OP(mat.size(1) == vec.size(0), c, "matrix of shape {} and vector of shape {} cannot be multiplied",
                mat.sizes(), vec.sizes());
  check_same_dtype(c, mat, vec);
  check_same_dtype(c, self, mat);
  check_bias(c, self, Shape{mat.size(0)});
  const attrs::Addmm& a = c.attrs.get<attrs::Addmm>();
  const Tensor bias = self.expand({mat.size(0)}).unsqueeze(1);
  c.out[0] = addmm(bias, mat, vec.unsqueeze(1), a.beta, a.alpha, c.attrs.dtype).squeeze(1);
}

// beta * self + alpha * outer(vec1 [n], vec2 [m]).
void addr_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &self = c.in[0], &v1 = c.in[1], &v2 = c.in[2];
  MIXT_CHECK_OP(v1.dim() == 1 && v2.dim() == 1, c, "expected 1-D vectors, but got shapes {} and {}", v1.sizes(),
                v2.sizes());
  check_same_dtype(c, v1, v2);
  check_same_dtype(c, self, v1);
  check_bias(c, self, Shape{v1.size(0), v2.size(0)});
  const attrs::Addmm& a = c.attrs.get<attrs::Addmm>();
  c.out[0] = addmm(self, v1.unsqueeze(1), v2.unsqueeze(0), a.beta, a.alpha, c.attrs.dtype);
}

// beta * self + alpha * sum_b batch1[b] @ batch2[b]: the batches laid side by side along k make one addmm.
void addbmm_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &self = c.in[0], &b1 = c.in[1], &b2 = c.in[2];
  MIXT_CHECK_OP(b1.dim() == 3 && b2.dim() == 3, c, "expected 3-D batches, but got shapes {} and {}", b1.sizes(),
                b2.sizes());
  MIXT_CHECK_OP(b1.size(0) == b2.size(0) && b1.size(2) == b2.size(1), c,
                "batches of shapes {} and {} cannot be multiplied", b1.sizes(), b2.sizes());
  check_same_dtype(c, b1, b2);
  check_same_dtype(c, self, b1);
  const int64_t batch = b1.size(0), n = b1.size(1), k = b1.size(2), m = b2.size(2);
  check_bias(c, self, Shape{n, m});
  const attrs::Addmm& a = c.attrs.get<attrs::Addmm>();
  const Tensor rows = b1.permute({1, 0, 2}).reshape({n, batch * k});
  c.out[0] = addmm(self, rows, b2.reshape({batch * k, m}), a.beta, a.alpha, c.attrs.dtype);
}

// addmm, then relu or gelu: the exact (erf) form on every device, so the result does not depend on
// the backend (PyTorch's CUDA kernel takes cuBLASLt's tanh approximation: docs/ops.md, "Differences
// from PyTorch"). Narrow floats take the activation in float32 and round once.
void addmm_activation_kernel(OpCall& c, DispatchKeySet) {
  const attrs::AddmmActivation& a = c.attrs.get<attrs::AddmmActivation>();
  const ScalarType dt = c.in[1].dtype(), work = composite::chain_work_dtype(dt), result = result_dtype(c, dt);
  MIXT_CHECK_OP(!a.use_gelu || is_floating(dt), c, "gelu needs floating operands, but got {}", dt);
  const Tensor r = addmm(c.in[0], c.in[1], c.in[2], a.beta, a.alpha, work == dt ? c.attrs.dtype : work);
  const Tensor y = a.use_gelu ? nn::functional::gelu(r) : relu(r);
  c.out[0] = y.dtype() == result ? y : y.to(result);
}

void vdot_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &a = c.in[0], &b = c.in[1];
  MIXT_CHECK_OP(a.dim() == 1 && b.dim() == 1, c, "expected 1-D tensors, but got shapes {} and {}", a.sizes(),
                b.sizes());
  check_same_dtype(c, a, b);
  MIXT_CHECK_OP(a.size(0) == b.size(0), c, "inconsistent sizes: {} and {} elements", a.size(0), b.size(0));
  c.out[0] = mm(a.unsqueeze(0), b.unsqueeze(1), c.attrs.dtype).view(Shape{});
}

// sum(x * y, dim) over x and y broadcast together: the pairs of lines along `dim` as a batch of
// [1, k] @ [k, 1] products (one rounding, the GEMM's accumulation).
void linalg_vecdot_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &x = c.in[0], &y = c.in[1];
  MIXT_CHECK_OP(is_floating(x.dtype()), c, "expected floating operands, but got {}", x.dtype());
  check_same_dtype(c, x, y);
  Shape shape;
  try {
    shape = broadcast_shapes(x.sizes(), y.sizes(), "linalg_vecdot");
  } catch (const Error&) {
    MIXT_FAIL_OP(c, "shapes {} and {} cannot be broadcast together", x.sizes(), y.sizes());
  }
  const int64_t nd = shape.size(), d = c.attrs.get<attrs::Dim>().dim;
  MIXT_CHECK_OP(d >= -nd && d < nd, c, "dim {} is out of range for the broadcast shape {}", d, shape);
  const int64_t dim = d < 0 ? d + nd : d;
  Shape order;  // `dim` last
  for (int64_t i = 0; i < nd; ++i)
    if (i != dim) order.push_back(i);
  order.push_back(dim);
  const Tensor xs = x.expand(shape).permute(order), ys = y.expand(shape).permute(order);
  c.out[0] = matmul(xs.unsqueeze(-2), ys.unsqueeze(-1), c.attrs.dtype).squeeze(-1).squeeze(-1);
}

// The product of `m` (2-D, one dtype) in the order that costs the fewest multiplications: the
// classic dynamic programme over the chain's sizes p[0] x p[1], p[1] x p[2], ... Narrow floats
// accumulate in float32 through the chain and round once, to `result`.
Tensor cheapest_product(const std::vector<Tensor>& m, ScalarType result) {
  const size_t n = m.size();
  std::vector<int64_t> p(n + 1);
  for (size_t i = 0; i < n; ++i) p[i] = m[i].size(0);
  p[n] = m[n - 1].size(1);
  // cost[i][j]: the cheapest product of m[i..j]; split[i][j]: where its last multiplication splits it.
  std::vector<std::vector<double>> cost(n, std::vector<double>(n, 0.0));
  std::vector<std::vector<size_t>> split(n, std::vector<size_t>(n, 0));
  for (size_t len = 2; len <= n; ++len)
    for (size_t i = 0; i + len <= n; ++i) {
      const size_t j = i + len - 1;
      cost[i][j] = std::numeric_limits<double>::infinity();
      for (size_t s = i; s < j; ++s) {
        const double q = cost[i][s] + cost[s + 1][j] + static_cast<double>(p[i]) * static_cast<double>(p[s + 1]) *
                                                          static_cast<double>(p[j + 1]);
        if (q < cost[i][j]) cost[i][j] = q, split[i][j] = s;
      }
    }
  const ScalarType work = composite::chain_work_dtype(m[0].dtype());
  auto product = [&](auto&& self, size_t i, size_t j) -> Tensor {
    if (i == j) return m[i];
    const size_t s = split[i][j];
    return composite::product_in(self(self, i, s), self(self, s + 1, j), work, false);
  };
  const Tensor r = product(product, 0, n - 1);
  if (r.dtype() != result) return r.to(result);
  return n == 1 ? r.clone() : r;
}

// The checks chain_matmul and linalg_multi_dot share: one dtype and device, 2-D (after the vector ends are
// made matrices), neighbours that can be multiplied.
void check_chain(const OpCall& c, const std::vector<Tensor>& m) {
  for (size_t i = 0; i < m.size(); ++i) {
    MIXT_CHECK_OP(m[i].dtype() == m[0].dtype(), c, "expected tensors of one dtype, but tensor {} is {} and tensor 0 {}",
                  i, m[i].dtype(), m[0].dtype());
    MIXT_CHECK_OP(m[i].device() == m[0].device(), c, "expected tensors on one device, but tensor {} is on {} and tensor 0 on {}",
                  i, m[i].device(), m[0].device());
    if (i > 0)
      MIXT_CHECK_OP(m[i - 1].size(1) == m[i].size(0), c, "tensors {} and {} of shapes {} and {} cannot be multiplied",
                    i - 1, i, m[i - 1].sizes(), m[i].sizes());
  }
}

void chain_matmul_kernel(OpCall& c, DispatchKeySet) {
  const std::vector<Tensor> m(c.list.begin(), c.list.end());
  MIXT_CHECK_OP(!m.empty(), c, "expected a non-empty list of matrices");
  for (size_t i = 0; i < m.size(); ++i)
    MIXT_CHECK_OP(m[i].dim() == 2, c, "expected 2-D matrices, but tensor {} has shape {}", i, m[i].sizes());
  check_chain(c, m);
  c.out[0] = cheapest_product(m, result_dtype(c, m[0].dtype()));
}

// linalg_multi_dot: a 1-D first argument is a row vector, a 1-D last one a column vector, and those dims
// leave the result.
void linalg_multi_dot_kernel(OpCall& c, DispatchKeySet) {
  std::vector<Tensor> m(c.list.begin(), c.list.end());
  const size_t n = m.size();
  MIXT_CHECK_OP(n >= 2, c, "expected at least 2 tensors, but got {}", n);
  for (size_t i = 0; i < n; ++i) {
    const bool end = i == 0 || i == n - 1;
    MIXT_CHECK_OP(m[i].dim() == 2 || (end && m[i].dim() == 1), c,
                  "tensor {} has shape {}: the first and last tensors must be 1-D or 2-D, the others 2-D", i,
                  m[i].sizes());
  }
  const bool row = m[0].dim() == 1, col = m[n - 1].dim() == 1;
  if (row) m[0] = m[0].unsqueeze(0);
  if (col) m[n - 1] = m[n - 1].unsqueeze(1);
  check_chain(c, m);
  Tensor r = cheapest_product(m, result_dtype(c, m[0].dtype()));
  if (col) r = r.squeeze(1);
  if (row) r = r.squeeze(0);
  c.out[0] = r;
}

// Sums a's dims_a[i] against b's dims_b[i]: a as [free, k] times b as [k, free], one mm.
void tensordot_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &a = c.in[0], &b = c.in[1];
  const attrs::Tensordot& t = c.attrs.get<attrs::Tensordot>();
  MIXT_CHECK_OP(t.dims_a.size() == t.dims_b.size(), c,
                "both operands need as many contracted dims, but got {} and {}", t.dims_a, t.dims_b);
  check_same_dtype(c, a, b);
  std::array<bool, kMaxDims> summed_a{}, summed_b{};
  Shape ka, kb;
  int64_t k = 1;
  for (int64_t i = 0; i < t.dims_a.size(); ++i) {
    const int64_t da = t.dims_a[i], db = t.dims_b[i];
    MIXT_CHECK_OP(da >= -a.dim() && da < a.dim() && db >= -b.dim() && db < b.dim(), c,
                  "dims {} and {} are out of range for shapes {} and {}", da, db, a.sizes(), b.sizes());
    const int64_t wa = da < 0 ? da + a.dim() : da, wb = db < 0 ? db + b.dim() : db;
    MIXT_CHECK_OP(!summed_a[wa] && !summed_b[wb], c, "a dim is contracted twice in {} and {}", t.dims_a, t.dims_b);
    MIXT_CHECK_OP(a.size(wa) == b.size(wb), c,
                  "contracted dims must match, but dim {} of {} has size {} and dim {} of {} has size {}", wa,
                  a.sizes(), a.size(wa), wb, b.sizes(), b.size(wb));
    summed_a[wa] = summed_b[wb] = true;
    ka.push_back(wa), kb.push_back(wb);
    k *= a.size(wa);
  }
  Shape order_a, order_b = kb, out;
  int64_t rows = 1, cols = 1;
  for (int64_t i = 0; i < a.dim(); ++i)
    if (!summed_a[i]) order_a.push_back(i), out.push_back(a.size(i)), rows *= a.size(i);
  for (int64_t i = 0; i < b.dim(); ++i)
    if (!summed_b[i]) order_b.push_back(i), out.push_back(b.size(i)), cols *= b.size(i);
  for (int64_t d : ka) order_a.push_back(d);
  const Tensor lhs = a.permute(order_a).reshape({rows, k}), rhs = b.permute(order_b).reshape({k, cols});
  c.out[0] = mm(lhs, rhs, c.attrs.dtype).view(out);
}

// x1 [*, in1]^T weight [out, in1, in2] x2 [*, in2] + bias: x1 times weight as one mm ([R, out * in2]),
// then a batch of [out, in2] @ [in2, 1] products. Narrow floats keep the intermediate in float32 and
// round once.
void bilinear_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &x1 = c.in[0], &x2 = c.in[1], &w = c.in[2];
  const Tensor bias = c.n_in > 3 ? c.in[3] : Tensor();
  MIXT_CHECK_OP(x1.dim() >= 1 && x2.dim() == x1.dim(), c,
                "expected inputs of one rank (at least 1-D), but got shapes {} and {}", x1.sizes(), x2.sizes());
  for (int64_t i = 0; i + 1 < x1.dim(); ++i)
    MIXT_CHECK_OP(x1.size(i) == x2.size(i), c, "the inputs' leading dims differ: shapes {} and {}", x1.sizes(),
                  x2.sizes());
  MIXT_CHECK_OP(w.dim() == 3 && w.size(1) == x1.size(-1) && w.size(2) == x2.size(-1), c,
                "weight of shape {} does not fit inputs of shapes {} and {} (expected [out, {}, {}])", w.sizes(),
                x1.sizes(), x2.sizes(), x1.size(-1), x2.size(-1));
  check_same_dtype(c, x1, x2);
  check_same_dtype(c, x1, w);
  const int64_t out = w.size(0), in1 = w.size(1), in2 = w.size(2);
  if (bias.defined()) {
    check_same_dtype(c, x1, bias);
    MIXT_CHECK_OP(bias.dim() == 1 && bias.size(0) == out, c, "expected a bias of shape [{}], but got {}", out,
                  bias.sizes());
  }
  const ScalarType dt = x1.dtype();
  MIXT_CHECK_OP(dt != kBool, c, "not implemented for bool operands");
  const ScalarType work = composite::chain_work_dtype(dt);
  Shape lead;
  for (int64_t i = 0; i + 1 < x1.dim(); ++i) lead.push_back(x1.size(i));
  const int64_t rows = lead.numel();
  const Tensor x1w = composite::product_in(x1.reshape({rows, in1}), w.permute({1, 0, 2}).reshape({in1, out * in2}),
                                           work, false);  // [R, out * in2]
  Tensor y = composite::product_in(x1w.view({rows, out, in2}), x2.reshape({rows, in2, 1}), work, true);
  y = y.view({rows, out});
  if (bias.defined()) y = add(y, bias.to(work));
  lead.push_back(out);
  c.out[0] = y.to(result_dtype(c, dt)).view(lead);
}

}  // namespace

void einsum_kernel(OpCall& c, DispatchKeySet);  // kernels/composite/einsum.cpp

void register_linalg_composite_kernels() {
  register_composite(OpId::addmv, addmv_kernel);
  register_composite(OpId::addr, addr_kernel);
  register_composite(OpId::addbmm, addbmm_kernel);
  register_composite(OpId::addmm_activation, addmm_activation_kernel);
  register_composite(OpId::vdot, vdot_kernel);
  register_composite(OpId::linalg_vecdot, linalg_vecdot_kernel);
  register_composite(OpId::chain_matmul, chain_matmul_kernel);
  register_composite(OpId::linalg_multi_dot, linalg_multi_dot_kernel);
  register_composite(OpId::tensordot, tensordot_kernel);
  register_composite(OpId::bilinear, bilinear_kernel);
  register_composite(OpId::einsum, einsum_kernel);
}

}  // namespace mixt
