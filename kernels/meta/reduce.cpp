// Meta rules of the reductions and scans: which dims are reduced and each op's result
// dtype, from kernels/common/reduce_meta.h as the kernels use them.
#include <mixt/kernels/common/reduce_meta.h>
#include <mixt/kernels/meta/rules.h>

namespace mixt::meta {
namespace {

// The reduced sizes of input 0 over `dims`, as `dtype`.
void reduced(const OpCall& c, const Shape& dims, bool keepdim, ScalarType dtype, OutputMeta* out) {
  out[0] = {make_reduce_spec(c, c.in[0].sizes(), dims, keepdim).out_sizes, dtype};
}

// Max-like ops have no identity: an empty reduced extent is an error.
void check_nonempty(const OpCall& c, const ReduceSpec& spec) {
  MIXT_CHECK_OP(spec.reduced_numel > 0, c,
                "cannot reduce over a zero-size dimension (the operation has no identity); specify a dim that is "
                "not empty");
}

}  // namespace

void reduce_sum(const OpCall& c, OutputMeta* out) {
  const auto& a = c.attrs.get<attrs::Reduce>();
  reduced(c, a.dims, a.keepdim, sum_result_dtype(c.in[0].dtype(), c.attrs.dtype), out);
}

void reduce_mean(const OpCall& c, OutputMeta* out) {
  const auto& a = c.attrs.get<attrs::Reduce>();
  reduced(c, a.dims, a.keepdim, floating_result_dtype(c, c.in[0].dtype(), c.attrs.dtype), out);
}

void reduce_same(const OpCall& c, OutputMeta* out) {
  const auto& a = c.attrs.get<attrs::Reduce>();
  const ReduceSpec spec = make_reduce_spec(c, c.in[0].sizes(), a.dims, a.keepdim);
  check_nonempty(c, spec);
  out[0] = {spec.out_sizes, c.in[0].dtype()};
}

void reduce_with_indices(const OpCall& c, OutputMeta* out) {
  const auto& a = c.attrs.get<attrs::ReduceDim>();
  const ReduceSpec spec = make_reduce_spec(c, c.in[0].sizes(), Shape{a.dim}, a.keepdim);
  check_nonempty(c, spec);
  out[0] = {spec.out_sizes, c.in[0].dtype()};
  out[1] = {spec.out_sizes, kInt64};
}

void arg_reduce(const OpCall& c, OutputMeta* out) {
  const auto& a = c.attrs.get<attrs::ArgReduce>();
  const Tensor& x = c.in[0];
  MIXT_CHECK_OP(x.dtype() != kBool, c, "not implemented for dtype {}", x.dtype());  // PyTorch has no bool argmax
  if (!a.dim) {
    check_nonempty(c, make_reduce_spec(c, Shape{x.numel()}, Shape{0}, false));
    out[0] = {a.keepdim ? Shape::filled(static_cast<int>(x.dim()), 1) : Shape{}, kInt64};
    return;
  }
  const ReduceSpec spec = make_reduce_spec(c, x.sizes(), Shape{*a.dim}, a.keepdim);
  check_nonempty(c, spec);
  out[0] = {spec.out_sizes, kInt64};
}

void variance(const OpCall& c, OutputMeta* out) {
  const auto& a = c.attrs.get<attrs::Variance>();
  reduced(c, a.dims, a.keepdim, floating_result_dtype(c, c.in[0].dtype(), ScalarType::Undefined), out);
}

void norm(const OpCall& c, OutputMeta* out) {
  const auto& a = c.attrs.get<attrs::Norm>();
  MIXT_CHECK_OP(c.in[0].is_floating_point(), c, "expected a floating input, got {}", c.in[0].dtype());
  MIXT_CHECK_OP(!std::isnan(a.p), c, "the order p must not be NaN");
  const ReduceSpec spec = make_reduce_spec(c, c.in[0].sizes(), a.dims, a.keepdim);
  MIXT_CHECK_OP(spec.reduced_numel > 0 || (a.p >= 0.0 && !std::isinf(a.p)), c,
                "cannot compute the {} norm over a zero-size dimension (the operation has no identity)", a.p);
  out[0] = {spec.out_sizes, floating_result_dtype(c, c.in[0].dtype(), c.attrs.dtype)};
}

void logsumexp(const OpCall& c, OutputMeta* out) {
  const auto& a = c.attrs.get<attrs::Reduce>();
  reduced(c, a.dims, a.keepdim, logsumexp_result_dtype(c.in[0].dtype()), out);
}

void reduce_bool(const OpCall& c, OutputMeta* out) {
  const auto& a = c.attrs.get<attrs::Reduce>();
  reduced(c, a.dims, a.keepdim, kBool, out);
}

void scan(const OpCall& c, OutputMeta* out) {
  const Tensor& in = c.in[0];
  const int64_t nd = in.dim() > 0 ? in.dim() : 1, d = c.attrs.get<attrs::Dim>().dim;
  MIXT_CHECK_OP(d >= -nd && d < nd, c, "dimension {} is out of range for a tensor of {}", d,
                  detail::counted(in.dim(), "dimension"));
  out[0] = {in.sizes(), sum_result_dtype(in.dtype(), c.attrs.dtype)};
}

}  // namespace mixt::meta
