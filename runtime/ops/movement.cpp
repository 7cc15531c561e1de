// Front ends of copies and movement: contiguous, clone, copy_, to, cat, stack.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {

Tensor contiguous(const Tensor& t) {
  MIXT_CHECK(t.defined(), "contiguous", "the tensor is undefined");
  return t.is_contiguous() ? t : clone(t);
}

Tensor clone(const Tensor& t) {
  OpCall c(OpId::clone);
  c.push(t);
  return call_op(c);
}

Tensor& copy_(Tensor& dst, const Tensor& src) {
  OpCall c(OpId::copy_);
  c.push(dst);
  c.push(src);
  return call_inplace(c, dst);
}

Tensor to(const Tensor& t, Device device, ScalarType dtype) {
  MIXT_CHECK(t.defined(), "to", "the tensor is undefined");
  // Nothing to convert: the tensor itself, as PyTorch returns self (nothing is recorded).
  if ((dtype == ScalarType::Undefined || dtype == t.dtype()) && device == t.device()) return t;
  OpCall c(OpId::to);
  c.push(t);
  c.attrs.dtype = dtype;
  c.attrs.device = device;
  return call_op(c);
}

Tensor to(const Tensor& t, ScalarType dtype) {
  MIXT_CHECK(t.defined(), "to", "the tensor is undefined");
  return to(t, t.device(), dtype);
}

Tensor to(const Tensor& t, Device device) {
  MIXT_CHECK(t.defined(), "to", "the tensor is undefined");
  return to(t, device, t.dtype());
}

Tensor cat(const std::vector<Tensor>& tensors, int64_t dim) {
  MIXT_CHECK(!tensors.empty(), "cat", "expected a non-empty list of tensors");
  OpCall c(OpId::cat);
  c.list = tensors;
  c.attrs.get<attrs::Dim>().dim = dim;
  for (const Tensor& t : tensors) MIXT_CHECK(t.defined(), "cat", "the list holds an undefined tensor");
  return call_op(c);
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t dim) {
  MIXT_CHECK(!tensors.empty(), "stack", "expected a non-empty list of tensors");
  OpCall c(OpId::stack);
  c.list = tensors;
  c.attrs.get<attrs::Dim>().dim = dim;
  for (const Tensor& t : tensors) MIXT_CHECK(t.defined(), "stack", "the list holds an undefined tensor");
  return call_op(c);
}

}  // namespace mixt
