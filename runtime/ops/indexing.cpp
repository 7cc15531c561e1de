// Front ends of the indexing ops.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/runtime/check.h>
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

Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha) {
  OpCall c(OpId::index_add);
  c.push(self);
  c.push(index);
  c.push(source);
  c.attrs.get<attrs::IndexAdd>() = {dim, alpha};
  return call_op(c);
}

Tensor index_put(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values, bool accumulate) {
  for (const Tensor& t : indices) MIXT_CHECK(t.defined(), "index_put", "the index list holds an undefined tensor");
  OpCall c(OpId::index_put);
  c.push(self);
  c.push(values);
  c.list = indices;
  c.attrs.get<attrs::IndexPut>().accumulate = accumulate;
  return call_op(c);
}

Tensor masked_select(const Tensor& t, const Tensor& mask) {
  OpCall c(OpId::masked_select);
  c.push(t);
  c.push(mask);
  return call_op(c);
}

Tensor nonzero(const Tensor& t) {
  OpCall c(OpId::nonzero);
  c.push(t);
  return call_op(c);
}

ValuesIndices sort(const Tensor& t, int64_t dim, bool descending, bool stable) {
  OpCall c(OpId::sort);
  c.push(t);
  c.attrs.get<attrs::Sort>() = {dim, descending, stable};
  dispatch(c);
  return {std::move(c.out[0]), std::move(c.out[1])};
}

Tensor argsort(const Tensor& t, int64_t dim, bool descending, bool stable) {
  OpCall c(OpId::argsort);
  c.push(t);
  c.attrs.get<attrs::Sort>() = {dim, descending, stable};
  return call_op(c);
}

ValuesIndices topk(const Tensor& t, int64_t k, int64_t dim, bool largest, bool sorted) {
  OpCall c(OpId::topk);
  c.push(t);
  c.attrs.get<attrs::Topk>() = {k, dim, largest, sorted};
  dispatch(c);
  return {std::move(c.out[0]), std::move(c.out[1])};
}

UniqueResult unique(const Tensor& t, bool sorted, bool return_inverse, bool return_counts) {
  OpCall c(OpId::unique);
  c.push(t);
  c.attrs.get<attrs::Unique>() = {sorted, return_inverse, return_counts};
  dispatch(c);
  return {std::move(c.out[0]), std::move(c.out[1]), std::move(c.out[2])};
}

}  // namespace mixt
