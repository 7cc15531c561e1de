// Front ends of the reductions and scans.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {
namespace {

Tensor reduce(OpId id, const Tensor& t, const Shape& dims, bool keepdim, ScalarType dtype = ScalarType::Undefined) {
  OpCall c(id);
  c.push(t);
  c.attrs.get<attrs::Reduce>() = {dims, keepdim};
  c.attrs.dtype = dtype;
  return call_op(c);
}

ValuesIndices reduce_with_indices(OpId id, const Tensor& t, int64_t dim, bool keepdim) {
  OpCall c(id);
  c.push(t);
  c.attrs.get<attrs::ReduceDim>() = {dim, keepdim};
  dispatch(c);
  return {std::move(c.out[0]), std::move(c.out[1])};
}

Tensor arg_reduce(OpId id, const Tensor& t, std::optional<int64_t> dim, bool keepdim) {
  OpCall c(id);
  c.push(t);
  c.attrs.get<attrs::ArgReduce>() = {dim, keepdim};
  return call_op(c);
}

Tensor scan(OpId id, const Tensor& t, int64_t dim, ScalarType dtype) {
  OpCall c(id);
  c.push(t);
  c.attrs.get<attrs::Dim>().dim = dim;
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
  OpCall c(OpId::var);
  c.push(t);
  c.attrs.get<attrs::Variance>() = {dims, correction, keepdim};
  return call_op(c);
}
Tensor std(const Tensor& t, const Shape& dims, double correction, bool keepdim) {
  OpCall c(OpId::std);
  c.push(t);
  c.attrs.get<attrs::Variance>() = {dims, correction, keepdim};
  return call_op(c);
}
Tensor norm(const Tensor& t, double p, const Shape& dims, bool keepdim, ScalarType dtype) {
  OpCall c(OpId::norm);
  c.push(t);
  c.attrs.get<attrs::Norm>() = {p, dims, keepdim};
  c.attrs.dtype = dtype;
  return call_op(c);
}
Tensor logsumexp(const Tensor& t, const Shape& dims, bool keepdim) {
  return reduce(OpId::logsumexp, t, dims, keepdim);
}
Tensor cumsum(const Tensor& t, int64_t dim, ScalarType dtype) { return scan(OpId::cumsum, t, dim, dtype); }
Tensor cumprod(const Tensor& t, int64_t dim, ScalarType dtype) { return scan(OpId::cumprod, t, dim, dtype); }
Tensor all(const Tensor& t, const Shape& dims, bool keepdim) { return reduce(OpId::all, t, dims, keepdim); }
Tensor any(const Tensor& t, const Shape& dims, bool keepdim) { return reduce(OpId::any, t, dims, keepdim); }

namespace {
Tensor distance(OpId id, std::initializer_list<Tensor> inputs, double p) {
  OpCall c(id);
  for (const Tensor& t : inputs) c.push(t);
  c.attrs.get<attrs::Distance>().p = p;
  return call_op(c);
}
}  // namespace
// torch.dist's front end is a method only: mixt::dist names the distributed namespace.
Tensor Tensor::dist(const Tensor& o, double p) const { return distance(OpId::dist, {*this, o}, p); }
Tensor cdist(const Tensor& x1, const Tensor& x2, double p) { return distance(OpId::cdist, {x1, x2}, p); }
Tensor pdist(const Tensor& x, double p) { return distance(OpId::pdist, {x}, p); }
Tensor renorm(const Tensor& x, double p, int64_t dim, double maxnorm) {
  OpCall c(OpId::renorm);
  c.push(x);
  c.attrs.get<attrs::Renorm>() = {p, dim, maxnorm};
  return call_op(c);
}

}  // namespace mixt
