#include <mixt/kernels/common/matmul_plan.h>

#include <mixt/dispatcher/op_check.h>
#include <mixt/runtime/checked.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {
namespace {

// True when `from` broadcasts to `to` (numpy rules, trailing dims aligned).
bool broadcasts_to(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  for (int i = 1; i <= from.size(); ++i) {
    const int64_t f = from[from.size() - i];
    if (f != 1 && f != to[to.size() - i]) return false;
  }
  return true;
}

// The dtype the result is returned in: the operands' dtype, or float32 from a narrow float.
ScalarType resolve_out_dtype(const OpCall& c, ScalarType in) {
  const ScalarType req = c.attrs.dtype;
  if (req == ScalarType::Undefined || req == in) return in;
  MIXT_CHECK_OP(req == kFloat32 && is_reduced_float(in), c,
                "out_dtype {} is not supported for {} operands (only float32 from float16, bfloat16 or float8)", req,
                in);
  return req;
}

}  // namespace

Tensor as_rows(const Tensor& t, int64_t rows, int64_t cols) {
  if (t.dim() == 2) return t;
  const Shape shape{rows, cols};
  const std::optional<Shape> flat = view_strides(t.sizes(), t.strides(), shape);
  return flat ? make_view(t, shape, *flat, t.storage_offset()) : reshape(t, shape);
}

MatmulPlan plain_product(const Tensor& a, const Tensor& b, ScalarType dtype) {
  MatmulPlan p;
  p.a = a;
  p.b = b;
  p.n = a.size(0);
  p.k = a.size(1);
  p.m = b.size(1);
  p.out_shape = {p.n, p.m};
  p.in_dtype = p.out_dtype = dtype;
  return p;
}

LinearBackwardPlan plan_linear_backward(const OpCall& c) {
  const Tensor& g = c.in[0];
  const Tensor& x = c.in[1];
  const Tensor& w = c.in[2];
  MIXT_CHECK_OP(w.dim() == 2, c, "expected a 2-D weight [out_features, in_features], but got shape {}", w.sizes());
  MIXT_CHECK_OP(x.dim() >= 1, c, "expected an input with at least one dimension, but got a 0-D tensor");
  MIXT_CHECK_OP(x.size(-1) == w.size(1), c, "input of shape {} and weight of shape {} cannot be multiplied ({} != {})",
                x.sizes(), w.sizes(), x.size(-1), w.size(1));
  MIXT_CHECK_OP(g.dim() == x.dim() && g.size(-1) == w.size(0), c,
                "expected grad_output of shape [*, {}] with the input's {} leading dims, but got {} (input {}, weight "
                "{})",
                w.size(0), x.dim() - 1, g.sizes(), x.sizes(), w.sizes());
  for (int d = 0; d + 1 < x.dim(); ++d)
    MIXT_CHECK_OP(g.size(d) == x.size(d), c,
                  "grad_output of shape {} and input of shape {} differ in dim {} ({} != {})", g.sizes(), x.sizes(), d,
                  g.size(d), x.size(d));
  MIXT_CHECK_OP(g.dtype() == x.dtype() && x.dtype() == w.dtype(), c,
                "expected grad_output, input and weight in one dtype, but got {}, {} and {}", g.dtype(), x.dtype(),
                w.dtype());
  MIXT_CHECK_OP(g.device() == x.device() && x.device() == w.device(), c,
                "expected grad_output, input and weight on one device, but found {}, {} and {}", g.device(), x.device(),
                w.device());
  MIXT_CHECK_OP(x.dtype() != kBool, c, "not implemented for bool operands");
  const attrs::LinearBackward& a = c.attrs.get<attrs::LinearBackward>();
  LinearBackwardPlan p;
  p.in = w.size(1);
  p.out = w.size(0);
  Shape lead;
  for (int d = 0; d + 1 < x.dim(); ++d) lead.push_back(x.size(d));
  p.rows = checked_numel(lead, "linear_backward");
  p.input_grad = a.input_grad;
  p.weight_grad = a.weight_grad;
  p.bias_grad = a.bias_grad;
  p.dtype = x.dtype();
  p.input_shape = x.sizes();
  return p;
}

LinearPlan plan_linear(const OpCall& c) {
  const Tensor& x = c.in[0];
  const Tensor& w = c.in[1];
  const Tensor bias = c.n_in > 2 ? c.in[2] : Tensor();
  MIXT_CHECK_OP(w.dim() == 2, c, "expected a 2-D weight [out_features, in_features], but got shape {}", w.sizes());
  MIXT_CHECK_OP(x.dim() >= 1, c, "expected an input with at least one dimension, but got a 0-D tensor");
  MIXT_CHECK_OP(x.size(-1) == w.size(1), c, "input of shape {} and weight of shape {} cannot be multiplied ({} != {})",
                x.sizes(), w.sizes(), x.size(-1), w.size(1));
  MIXT_CHECK_OP(x.dtype() == w.dtype(), c, "expected m1 and m2 to have the same dtype, but got: {} != {}", x.dtype(),
                w.dtype());
  MIXT_CHECK_OP(x.device() == w.device(), c, "expected both operands on one device, but found {} and {}", x.device(),
                w.device());
  MIXT_CHECK_OP(x.dtype() != kBool, c, "not implemented for bool operands");
  LinearPlan l;
  MatmulPlan& p = l.product;
  const int64_t in = w.size(1), out = w.size(0);
  Shape lead;
  for (int d = 0; d + 1 < x.dim(); ++d) lead.push_back(x.size(d));
  const int64_t rows = checked_numel(lead, "linear");
  l.result_shape = lead;
  l.result_shape.push_back(out);
  p.a = as_rows(x, rows, in);
  p.b = make_view(w, {in, out}, {w.stride(1), w.stride(0)}, w.storage_offset());  // weight^T without a copy
  p.n = rows;
  p.k = in;
  p.m = out;
  p.out_shape = {p.n, out};
  p.in_dtype = x.dtype();
  p.out_dtype = resolve_out_dtype(c, p.in_dtype);
  if (bias.defined()) {
    p.bias = bias;
    p.beta = 1;
    MIXT_CHECK_OP(bias.device() == x.device(), c, "expected the bias on {}, but found {}", x.device(), bias.device());
    MIXT_CHECK_OP(bias.dtype() == p.in_dtype || bias.dtype() == p.out_dtype, c,
                  "expected the bias in {} (the operands' dtype) or the out_dtype, but got {}", p.in_dtype,
                  bias.dtype());
    // Any bias that broadcasts to the output, as PyTorch's (which adds it in place: it never grows the
    // output). One that varies along x's leading dims is taken as rows of the product too.
    MIXT_CHECK_OP(broadcasts_to(bias.sizes(), l.result_shape), c,
                  "bias of shape {} cannot be broadcast to the output's shape {}", bias.sizes(), l.result_shape);
    if (!broadcasts_to(bias.sizes(), p.out_shape)) p.bias = as_rows(expand(bias, l.result_shape), rows, out);
  }
  return l;
}

MatmulPlan plan_matmul(const OpCall& c, bool batched, bool scaled) {
  MatmulPlan p;
  const int first = scaled ? 1 : 0;
  p.a = c.in[first];
  p.b = c.in[first + 1];
  p.batched = batched;
  const int64_t rank = batched ? 3 : 2;
  MIXT_CHECK_OP(p.a.dim() == rank && p.b.dim() == rank, c, "expected {}-D operands, got {}-D and {}-D", rank,
                p.a.dim(), p.b.dim());
  MIXT_CHECK_OP(p.a.device() == p.b.device(), c, "expected both operands on one device, but found {} and {}",
                p.a.device(), p.b.device());
  MIXT_CHECK_OP(p.a.dtype() == p.b.dtype(), c, "expected m1 and m2 to have the same dtype, but got: {} != {}",
                p.a.dtype(), p.b.dtype());
  p.in_dtype = p.a.dtype();
  MIXT_CHECK_OP(p.in_dtype != kBool, c, "not implemented for bool operands");
  MIXT_CHECK_OP(p.a.size(-1) == p.b.size(-2), c, "shapes {} and {} cannot be multiplied ({} != {})", p.a.sizes(),
                p.b.sizes(), p.a.size(-1), p.b.size(-2));
  if (batched)
    MIXT_CHECK_OP(p.a.size(0) == p.b.size(0), c, "batch sizes differ: {} and {}", p.a.size(0), p.b.size(0));
  p.batch = batched ? p.a.size(0) : 1;
  p.n = p.a.size(-2);
  p.k = p.a.size(-1);
  p.m = p.b.size(-1);
  p.out_shape = batched ? Shape{p.batch, p.n, p.m} : Shape{p.n, p.m};
  p.out_dtype = resolve_out_dtype(c, p.in_dtype);
  if (scaled) {
    p.bias = c.in[0];
    p.beta = c.attrs.get<attrs::Addmm>().beta;
    p.alpha = c.attrs.get<attrs::Addmm>().alpha;
    MIXT_CHECK_OP(p.bias.device() == p.a.device(), c, "expected the bias on {}, but found {}", p.a.device(),
                  p.bias.device());
    MIXT_CHECK_OP(p.bias.dtype() == p.in_dtype || p.bias.dtype() == p.out_dtype, c,
                  "expected the bias in {} (the operands' dtype) or the out_dtype, but got {}", p.in_dtype,
                  p.bias.dtype());
    MIXT_CHECK_OP(broadcasts_to(p.bias.sizes(), p.out_shape), c, "bias of shape {} cannot be broadcast to {}",
                  p.bias.sizes(), p.out_shape);
  }
  if (is_integral(p.in_dtype))
    MIXT_CHECK_OP(!p.alpha.is_floating() && !p.beta.is_floating(), c,
                  "alpha and beta must not be floating point numbers for {} operands", p.in_dtype);
  return p;
}

ScaledMmPlan plan_scaled_mm(const OpCall& c) {
  ScaledMmPlan p;
  p.a = c.in[0];
  p.b = c.in[1];
  p.scale_a = c.in[2];
  p.scale_b = c.in[3];
  if (c.n_in > 4) p.bias = c.in[4];
  if (c.n_in > 5) p.scale_result = c.in[5];
  const Tensor& a = p.a;
  const Tensor& b = p.b;
  MIXT_CHECK_OP(a.dim() == 2 && b.dim() == 2, c, "expected 2-D operands a [M, K] and b [K, N], but got shapes {} and {}",
                a.sizes(), b.sizes());
  MIXT_CHECK_OP(is_float8(a.dtype()) && is_float8(b.dtype()), c,
                "expected float8_e4m3fn or float8_e5m2 operands, but got {} and {}", a.dtype(), b.dtype());
  MIXT_CHECK_OP(a.dtype() == kFloat8_e4m3fn || b.dtype() == kFloat8_e4m3fn, c,
                "float8_e5m2 @ float8_e5m2 is not supported (cuBLASLt has no such kernel): make one operand "
                "float8_e4m3fn");
  for (int i = 1; i < c.n_in; ++i)
    MIXT_CHECK_OP(!c.in[i].defined() || c.in[i].device() == a.device(), c,
                  "expected every input on {} (a's device), but input {} is on {}", a.device(), i, c.in[i].device());
  MIXT_CHECK_OP(a.size(1) == b.size(0), c, "shapes {} and {} cannot be multiplied ({} != {})", a.sizes(), b.sizes(),
                a.size(1), b.size(0));
  p.m = a.size(0);
  p.k = a.size(1);
  p.n = b.size(1);
  p.out_shape = {p.m, p.n};
  // Scales: dequantisation multipliers in float32, per tensor or per row of a and column of b.
  const Tensor& sa = p.scale_a;
  const Tensor& sb = p.scale_b;
  MIXT_CHECK_OP(sa.dtype() == kFloat32 && sb.dtype() == kFloat32, c,
                "expected float32 scales, but got scale_a {} and scale_b {}", sa.dtype(), sb.dtype());
  const bool per_tensor = sa.numel() == 1 && sb.numel() == 1;
  p.rowwise = !per_tensor && sa.sizes() == Shape{p.m, 1} && sb.sizes() == Shape{1, p.n};
  MIXT_CHECK_OP(per_tensor || p.rowwise, c,
                "expected per-tensor scales (one element each) or row-wise scales (scale_a [M, 1] = {}, scale_b "
                "[1, N] = {}), but got scale_a of shape {} and scale_b of shape {}",
                Shape{p.m, 1}, Shape{1, p.n}, sa.sizes(), sb.sizes());
  // The result's dtype: a's when unset (PyTorch's default); float8_e5m2 needs an e5m2 operand (cuBLASLt's table).
  p.out_dtype = c.attrs.dtype == ScalarType::Undefined ? a.dtype() : c.attrs.dtype;
  const ScalarType out = p.out_dtype;
  p.float8_out = is_float8(out);
  MIXT_CHECK_OP(out == kBFloat16 || out == kFloat16 || out == kFloat32 || p.float8_out, c,
                "out_dtype {} is not supported (bfloat16, float16, float32, float8_e4m3fn or float8_e5m2)", out);
  MIXT_CHECK_OP(out != kFloat8_e5m2 || a.dtype() == kFloat8_e5m2 || b.dtype() == kFloat8_e5m2, c,
                "a float8_e5m2 result needs a float8_e5m2 operand (cuBLASLt's fp8 table), but the operands are {} "
                "and {}",
                a.dtype(), b.dtype());
  // cuBLASLt's outer-vector scaling has no D scale and no amax, and writes only 16-bit or float32 D;
  // PyTorch refuses the combination too (docs/gemm.md, "Row-wise scales and float8 results").
  MIXT_CHECK_OP(!p.rowwise || !p.float8_out, c,
                "row-wise scales need a bfloat16, float16 or float32 out_dtype (cuBLASLt's outer-vector scaling has "
                "no result scale or amax), but out_dtype is {}{}",
                out, c.attrs.dtype == ScalarType::Undefined ? " (a's dtype when unset)" : "");
  // The bias: PyTorch's rules (bfloat16 for bfloat16 results, float16 for float16 results, either for float8
  // results, none with float32 results).
  if (p.bias.defined()) {
    const Tensor& bias = p.bias;
    MIXT_CHECK_OP(bias.dim() == 1 && bias.size(0) == p.n, c, "expected a bias of shape [N] = [{}], but got shape {}",
                  p.n, bias.sizes());
    MIXT_CHECK_OP(out != kFloat32, c, "a bias is not supported with a float32 out_dtype (as in PyTorch)");
    const ScalarType want = out == kBFloat16 ? kBFloat16 : out == kFloat16 ? kFloat16 : ScalarType::Undefined;
    if (want != ScalarType::Undefined)
      MIXT_CHECK_OP(bias.dtype() == want, c, "expected a {} bias for a {} result, but got {}", want, out, bias.dtype());
    else
      MIXT_CHECK_OP(bias.dtype() == kBFloat16 || bias.dtype() == kFloat16, c,
                    "expected a bfloat16 or float16 bias for a {} result, but got {}", out, bias.dtype());
  }
  if (p.scale_result.defined()) {
    const Tensor& sr = p.scale_result;
    MIXT_CHECK_OP(p.float8_out, c, "scale_result applies only to float8 results, but out_dtype is {}", out);
    MIXT_CHECK_OP(sr.dtype() == kFloat32 && sr.numel() == 1, c,
                  "expected a one-element float32 scale_result, but got {} of shape {}", sr.dtype(), sr.sizes());
  }
  return p;
}

}  // namespace mixt
