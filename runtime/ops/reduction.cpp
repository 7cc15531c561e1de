// Front ends of the reductions and scans.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/runtime/ops.h>

namespace mixt {
namespace {

OpCall reduce_call(OpId id, const Tensor& t, const Shape& dims, bool keepdim, ScalarType dtype) {
  OpCall c(id);
  c.push(t);
  c.attrs.shape = dims;
  c.attrs.keepdim = keepdim;
  c.attrs.dtype = dtype;
  return c;
}

Tensor reduce(OpId id, const Tensor& t, const Shape& dims, bool keepdim, ScalarType dtype = ScalarType::Undefined) {
  OpCall c = reduce_call(id, t, dims, keepdim, dtype);
  return call_op(c);
}

ValuesIndices reduce_with_indices(OpId id, const Tensor& t, int64_t dim, bool keepdim) {
  OpCall c(id);
  c.push(t);
  c.attrs.dim = dim;
  c.attrs.keepdim = keepdim;
  dispatch(c);
  return {std::move(c.out[0]), std::move(c.out[1])};
}

Tensor arg_reduce(OpId id, const Tensor& t, std::optional<int64_t> dim, bool keepdim) {
  OpCall c(id);
  c.push(t);
  if (dim) c.attrs.shape = Shape{*dim};
  c.attrs.keepdim = keepdim;
  return call_op(c);
}

Tensor scan(OpId id, const Tensor& t, int64_t dim, ScalarType dtype) {
  OpCall c(id);
  c.push(t);
  c.attrs.dim = dim;
  c.attrs.dtype = dtype;
  return call_op(c);
}

}  // namespace

Tensor sum(const Tensor& t, const Shape& dims, bool keepdim, ScalarType dtype) {
  return reduce(OpId::sum, t, dims, keepdim, dtype);
}
Tensor mean(const Tensor& t, const Shape& dims, bool keepdim, ScalarType dtype) {
  return reduce(OpId::mean, t, dims, keepdim, dtype);
}
Tensor prod(const Tensor& t, const Shape& dims, bool keepdim, ScalarType dtype) {
  return reduce(OpId::prod, t, dims, keepdim, dtype);
}
Tensor amax(const Tensor& t, const Shape& dims, bool keepdim) { return reduce(OpId::amax, t, dims, keepdim); }
Tensor amin(const Tensor& t, const Shape& dims, bool keepdim) { return reduce(OpId::amin, t, dims, keepdim); }
Tensor max(const Tensor& t) { return amax(t); }
Tensor min(const Tensor& t) { return amin(t); }
ValuesIndices max(const Tensor& t, int64_t dim, bool keepdim) { return reduce_with_indices(OpId::max, t, dim, keepdim); }
ValuesIndices min(const Tensor& t, int64_t dim, bool keepdim) { return reduce_with_indices(OpId::min, t, dim, keepdim); }
Tensor argmax(const Tensor& t, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce(OpId::argmax, t, dim, keepdim);
}
Tensor argmin(const Tensor& t, std::optional<int64_t> dim, bool keepdim) {
  return arg_reduce(OpId::argmin, t, dim, keepdim);
}
Tensor var(const Tensor& t, const Shape& dims, double correction, bool keepdim) {
  OpCall c = reduce_call(OpId::var, t, dims, keepdim, ScalarType::Undefined);
  c.attrs.s0 = correction;
  return call_op(c);
}
Tensor std(const Tensor& t, const Shape& dims, double correction, bool keepdim) {
  OpCall c = reduce_call(OpId::std, t, dims, keepdim, ScalarType::Undefined);
  c.attrs.s0 = correction;
  return call_op(c);
}
Tensor norm(const Tensor& t, double p, const Shape& dims, bool keepdim, ScalarType dtype) {
  OpCall c = reduce_call(OpId::norm, t, dims, keepdim, dtype);
  c.attrs.s0 = p;
  return call_op(c);
}
Tensor logsumexp(const Tensor& t, const Shape& dims, bool keepdim) {
  return reduce(OpId::logsumexp, t, dims, keepdim);
}
Tensor cumsum(const Tensor& t, int64_t dim, ScalarType dtype) { return scan(OpId::cumsum, t, dim, dtype); }
Tensor cumprod(const Tensor& t, int64_t dim, ScalarType dtype) { return scan(OpId::cumprod, t, dim, dtype); }
Tensor all(const Tensor& t, const Shape& dims, bool keepdim) { return reduce(OpId::all, t, dims, keepdim); }
Tensor any(const Tensor& t, const Shape& dims, bool keepdim) { return reduce(OpId::any, t, dims, keepdim); }

}  // namespace mixt
