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
  MIXT_CHECK_OP(!bias.defined() || bias.dim() <= 1, c, "expected a 0-D or 1-D bias, but got shape {}", bias.sizes());
  LinearPlan l;
  MatmulPlan& p = l.product;
  const int64_t in = w.size(1), out = w.size(0);
  Shape lead;
  for (int d = 0; d + 1 < x.dim(); ++d) lead.push_back(x.size(d));
  const int64_t rows = checked_numel(lead, "linear");
  l.result_shape = lead;
  l.result_shape.push_back(out);
  // x as [rows, in]: a view made here when the strides allow (no dispatch), else reshape's copy.
  const Shape rows_in{rows, in};
  const std::optional<Shape> flat = x.dim() == 2 ? std::nullopt : view_strides(x.sizes(), x.strides(), rows_in);
  p.a = x.dim() == 2 ? x : flat ? make_view(x, rows_in, *flat, x.storage_offset()) : reshape(x, rows_in);
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
    MIXT_CHECK_OP(broadcasts_to(bias.sizes(), p.out_shape), c, "bias of shape {} cannot be broadcast to {}",
                  bias.sizes(), p.out_shape);
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


}  // namespace mixt
