// Front ends of the view ops and of the shape helpers built on them.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/checked.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {

Tensor view(const Tensor& t, const Shape& shape) {
  OpCall c(OpId::view);
  c.push(t);
  c.attrs.get<attrs::Sizes>().sizes = shape;
  return call_op(c);
}

Tensor view(const Tensor& t, ScalarType dtype) {
  OpCall c(OpId::view_dtype);
  c.push(t);
  c.attrs.dtype = dtype;
  return call_op(c);
}

Tensor reshape(const Tensor& t, const Shape& shape) {
  MIXT_CHECK(t.defined(), "reshape", "the tensor is undefined");
  const Shape sizes = infer_size(shape, t.numel(), "reshape");
  if (view_strides(t.sizes(), t.strides(), sizes)) return view(t, sizes);
  return view(clone(t), sizes);
}

Tensor permute(const Tensor& t, const Shape& dims) {
  OpCall c(OpId::permute);
  c.push(t);
  c.attrs.get<attrs::Dims>().dims = dims;
  return call_op(c);
}

Tensor transpose(const Tensor& t, int64_t dim0, int64_t dim1) {
  MIXT_CHECK(t.defined(), "transpose", "the tensor is undefined");
  const int64_t n = t.dim();
  if (n == 0) {
    wrap_dim(dim0, 0, "transpose");
    wrap_dim(dim1, 0, "transpose");
    return permute(t, {});
  }
  const int64_t a = wrap_dim(dim0, n, "transpose"), b = wrap_dim(dim1, n, "transpose");
  Shape dims;
  for (int64_t i = 0; i < n; ++i) dims.push_back(i == a ? b : i == b ? a : i);
  return permute(t, dims);
}

Tensor slice(const Tensor& t, int64_t dim, int64_t start, int64_t end, int64_t step) {
  OpCall c(OpId::slice);
  c.push(t);
  c.attrs.get<attrs::Slice>() = {dim, start, end, step};
  return call_op(c);
}

Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length) {
  MIXT_CHECK(t.defined() && t.dim() > 0, "narrow", "expected a tensor with at least one dimension");
  const int64_t d = wrap_dim(dim, t.dim(), "narrow");
  const int64_t n = t.size(d);
  if (start < 0) start += n;
  MIXT_CHECK(start >= 0 && length >= 0 && start <= n && length <= n - start, "narrow",
             "start {} and length {} exceed dimension {} of size {}", start, length, d, n);
  return slice(t, d, start, start + length, 1);
}

Tensor select(const Tensor& t, int64_t dim, int64_t index) {
  OpCall c(OpId::select);
  c.push(t);
  c.attrs.get<attrs::Select>() = {dim, index};
  return call_op(c);
}

Tensor expand(const Tensor& t, const Shape& shape) {
  OpCall c(OpId::expand);
  c.push(t);
  c.attrs.get<attrs::Sizes>().sizes = shape;
  return call_op(c);
}

Tensor broadcast_to(const Tensor& t, const Shape& shape) { return expand(t, shape); }

Tensor squeeze(const Tensor& t) {
  OpCall c(OpId::squeeze);
  c.push(t);
  return call_op(c);
}

Tensor squeeze(const Tensor& t, const Shape& dims) {
  MIXT_CHECK(!dims.empty(), "squeeze", "no dims given (call squeeze(t) to drop every size-1 dim)");
  OpCall c(OpId::squeeze);
  c.push(t);
  c.attrs.get<attrs::Dims>().dims = dims;
  return call_op(c);
}

Tensor unsqueeze(const Tensor& t, int64_t dim) {
  OpCall c(OpId::unsqueeze);
  c.push(t);
  c.attrs.get<attrs::Dim>().dim = dim;
  return call_op(c);
}

Tensor flatten(const Tensor& t, int64_t start_dim, int64_t end_dim) {
  MIXT_CHECK(t.defined(), "flatten", "the tensor is undefined");
  if (t.dim() == 0) return reshape(t, {1});
  const int64_t s = wrap_dim(start_dim, t.dim(), "flatten"), e = wrap_dim(end_dim, t.dim(), "flatten");
  MIXT_CHECK(s <= e, "flatten", "start_dim {} comes after end_dim {}", start_dim, end_dim);
  if (s == e) return t;
  Shape shape;
  int64_t merged = 1;
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (d < s || d > e) shape.push_back(t.size(d));
    else merged *= t.size(d);
    if (d == e) shape.push_back(merged);
  }
  return reshape(t, shape);
}

Tensor as_strided(const Tensor& t, const Shape& sizes, const Shape& strides, int64_t storage_offset) {
  OpCall c(OpId::as_strided);
  c.push(t);
  auto& a = c.attrs.get<attrs::AsStrided>();
  a.sizes = sizes;
  a.strides = strides;
  if (storage_offset >= 0) a.storage_offset = storage_offset;
  return call_op(c);
}

std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim) {
  MIXT_CHECK(t.defined() && t.dim() > 0, "split", "expected a tensor with at least one dimension");
  const int64_t d = wrap_dim(dim, t.dim(), "split");
  const int64_t n = t.size(d);
  MIXT_CHECK(split_size > 0 || (split_size == 0 && n == 0), "split", "split_size must be positive (got {})",
             split_size);
  std::vector<Tensor> out;
  if (n == 0) {
    out.push_back(t);
    return out;
  }
  for (int64_t at = 0; at < n;) {
    const int64_t len = std::min(split_size, n - at);  // at + split_size may not fit
    out.push_back(narrow(t, d, at, len));
    at += len;
  }
  return out;
}

std::vector<Tensor> split_with_sizes(const Tensor& t, const std::vector<int64_t>& sizes, int64_t dim) {
  MIXT_CHECK(t.defined() && t.dim() > 0, "split_with_sizes", "expected a tensor with at least one dimension");
  const int64_t d = wrap_dim(dim, t.dim(), "split_with_sizes");
  int64_t total = 0;
  for (int64_t s : sizes) {
    MIXT_CHECK(s >= 0, "split_with_sizes", "negative size {}", s);
    total = checked_add(total, s, "split_with_sizes");
  }
  MIXT_CHECK(total == t.size(d), "split_with_sizes", "sizes sum to {} but dimension {} has size {}", total, d,
             t.size(d));
  std::vector<Tensor> out;
  int64_t at = 0;
  for (int64_t s : sizes) {
    out.push_back(narrow(t, d, at, s));
    at += s;
  }
  return out;
}

std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim) {
  MIXT_CHECK(chunks > 0, "chunk", "chunks must be positive (got {})", chunks);
  MIXT_CHECK(t.defined() && t.dim() > 0, "chunk", "expected a tensor with at least one dimension");
  const int64_t n = t.size(wrap_dim(dim, t.dim(), "chunk"));
  const int64_t size = n == 0 ? 0 : (n - 1) / chunks + 1;  // ceil(n / chunks) without n + chunks overflowing
  return split(t, size == 0 ? 0 : size, dim);
}

}  // namespace mixt
