// Front ends of the indexing ops.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {
namespace {

// A call of an op whose attribute struct A has a `dim` (Dim, Scatter).
template <class A = attrs::Dim>
OpCall dim_call(OpId id, const Tensor& t, int64_t dim, const Tensor& index) {
  OpCall c(id);
  c.push(t);
  c.push(index);
  c.attrs.get<A>().dim = dim;
  return c;
}

}  // namespace

Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index) {
  OpCall c = dim_call(OpId::index_select, t, dim, index);
  return call_op(c);
}

Tensor gather(const Tensor& t, int64_t dim, const Tensor& index) {
  OpCall c = dim_call(OpId::gather, t, dim, index);
  return call_op(c);
}

Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
  OpCall c = dim_call<attrs::Scatter>(OpId::scatter, t, dim, index);
  c.push(src);
  return call_op(c);
}

Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Scalar& value) {
  OpCall c = dim_call<attrs::Scatter>(OpId::scatter, t, dim, index);
  c.attrs.get<attrs::Scatter>().value = value;
  return call_op(c);
}

Tensor& scatter_(Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
  OpCall c = dim_call<attrs::Scatter>(OpId::scatter_, t, dim, index);
  c.push(src);
  return call_inplace(c, t);
}

Tensor& scatter_(Tensor& t, int64_t dim, const Tensor& index, const Scalar& value) {
  OpCall c = dim_call<attrs::Scatter>(OpId::scatter_, t, dim, index);
  c.attrs.get<attrs::Scatter>().value = value;
  return call_inplace(c, t);
}

Tensor scatter_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
  OpCall c = dim_call(OpId::scatter_add, t, dim, index);
  c.push(src);
  return call_op(c);
}

Tensor& scatter_add_(Tensor& t, int64_t dim, const Tensor& index, const Tensor& src) {
  OpCall c = dim_call(OpId::scatter_add_, t, dim, index);
  c.push(src);
  return call_inplace(c, t);
}

Tensor masked_fill(const Tensor& t, const Tensor& mask, const Scalar& value) {
  OpCall c(OpId::masked_fill);
  c.push(t);
  c.push(mask);
  c.attrs.get<attrs::Value>().value = value;
  return call_op(c);
}

Tensor& masked_fill_(Tensor& t, const Tensor& mask, const Scalar& value) {
  OpCall c(OpId::masked_fill_);
  c.push(t);
  c.push(mask);
  c.attrs.get<attrs::Value>().value = value;
  return call_inplace(c, t);
}

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b) {
  OpCall c(OpId::where);
  c.push(condition);
  c.push(a);
  c.push(b);
  return call_op(c);
}

Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b) {
  return where(condition, wrapped_scalar(a), b);
}

Tensor where(const Tensor& condition, const Tensor& a, const Scalar& b) {
  return where(condition, a, wrapped_scalar(b));
}

}  // namespace mixt
