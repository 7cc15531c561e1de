// Front ends of the factories and in-place fills.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {
namespace {

ScalarType or_default(ScalarType t, ScalarType fallback) { return t == ScalarType::Undefined ? fallback : t; }

Tensor finish(Tensor t, const TensorOptions& o) {
  if (o.requires_grad) t.set_requires_grad(true);
  return t;
}

OpCall factory_call(OpId id, ScalarType dtype, std::optional<Device> device) {
  OpCall c(id);
  c.attrs.dtype = dtype;
  c.attrs.device = device.value_or(default_device());
  return c;
}

TensorOptions like(const Tensor& t, TensorOptions o) {
  MIXT_CHECK(t.defined(), "*_like", "the tensor is undefined");
  if (o.dtype == ScalarType::Undefined) o.dtype = t.dtype();
  if (!o.device) o.device = t.device();
  return o;
}

}  // namespace

Tensor empty(const Shape& sizes, TensorOptions o) {
  OpCall c = factory_call(OpId::empty, or_default(o.dtype, kFloat32), o.device);
  c.attrs.get<attrs::Sizes>().sizes = sizes;
  return finish(call_op(c), o);
}

Tensor full(const Shape& sizes, const Scalar& value, TensorOptions o) {
  MIXT_CHECK(value.has_value(), "full", "no fill value given");
  OpCall c = factory_call(OpId::full, or_default(o.dtype, value.default_dtype()), o.device);
  auto& a = c.attrs.get<attrs::Full>();
  a.sizes = sizes;
  a.value = value;
  return finish(call_op(c), o);
}

Tensor zeros(const Shape& sizes, TensorOptions o) {
  o.dtype = or_default(o.dtype, kFloat32);
  return full(sizes, 0, o);
}

Tensor ones(const Shape& sizes, TensorOptions o) {
  o.dtype = or_default(o.dtype, kFloat32);
  return full(sizes, 1, o);
}

Tensor arange(const Scalar& end, TensorOptions o) { return arange(0, end, 1, o); }

Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step, TensorOptions o) {
  MIXT_CHECK(start.has_value() && end.has_value() && step.has_value(), "arange", "start, end and step are required");
  const bool all_int = !start.is_floating() && !end.is_floating() && !step.is_floating();
  OpCall c = factory_call(OpId::arange, or_default(o.dtype, all_int ? kInt64 : kFloat32), o.device);
  c.attrs.get<attrs::Arange>() = {start, end, step};
  return finish(call_op(c), o);
}

Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions o) {
  OpCall c = factory_call(OpId::linspace, or_default(o.dtype, kFloat32), o.device);
  c.attrs.get<attrs::Linspace>() = {start, end, steps};
  return finish(call_op(c), o);
}

Tensor eye(int64_t n, int64_t m, TensorOptions o) {
  OpCall c = factory_call(OpId::eye, or_default(o.dtype, kFloat32), o.device);
  c.attrs.get<attrs::Eye>() = {n, m < 0 ? n : m};
  return finish(call_op(c), o);
}

Tensor rand(const Shape& sizes, TensorOptions o, Generator* gen) {
  const bool rg = o.requires_grad;
  o.requires_grad = false;
  Tensor t = empty(sizes, o);
  uniform_(t, 0.0, 1.0, gen);
  o.requires_grad = rg;
  return finish(t, o);
}

Tensor randn(const Shape& sizes, TensorOptions o, Generator* gen) {
  const bool rg = o.requires_grad;
  o.requires_grad = false;
  Tensor t = empty(sizes, o);
  normal_(t, 0.0, 1.0, gen);
  o.requires_grad = rg;
  return finish(t, o);
}

Tensor randint(int64_t low, int64_t high, const Shape& sizes, TensorOptions o, Generator* gen) {
  o.dtype = or_default(o.dtype, kInt64);
  Tensor t = empty(sizes, o);
  random_(t, low, high, gen);
  return t;
}

Tensor empty_like(const Tensor& t, TensorOptions o) {
  o = like(t, o);
  return empty(t.sizes(), o);
}
Tensor zeros_like(const Tensor& t, TensorOptions o) {
  o = like(t, o);
  return zeros(t.sizes(), o);
}
Tensor ones_like(const Tensor& t, TensorOptions o) {
  o = like(t, o);
  return ones(t.sizes(), o);
}
Tensor full_like(const Tensor& t, const Scalar& value, TensorOptions o) {
  o = like(t, o);
  return full(t.sizes(), value, o);
}
Tensor rand_like(const Tensor& t, TensorOptions o, Generator* gen) {
  o = like(t, o);
  return rand(t.sizes(), o, gen);
}
Tensor randn_like(const Tensor& t, TensorOptions o, Generator* gen) {
  o = like(t, o);
  return randn(t.sizes(), o, gen);
}
Tensor randint_like(const Tensor& t, int64_t low, int64_t high, TensorOptions o, Generator* gen) {
  o = like(t, o);
  o.requires_grad = false;
  return randint(low, high, t.sizes(), o, gen);
}

Tensor& fill_(Tensor& t, const Scalar& value) {
  MIXT_CHECK(value.has_value(), "fill_", "no fill value given");
  OpCall c(OpId::fill_);
  c.push(t);
  c.attrs.get<attrs::Value>().value = value;
  return call_inplace(c, t);
}

Tensor& zero_(Tensor& t) { return fill_(t, 0); }

Tensor& uniform_(Tensor& t, double low, double high, Generator* gen) {
  OpCall c(OpId::uniform_);
  c.push(t);
  c.attrs.get<attrs::Uniform>() = {low, high};
  c.attrs.generator = gen;
  return call_inplace(c, t);
}

Tensor& normal_(Tensor& t, double mean, double std, Generator* gen) {
  OpCall c(OpId::normal_);
  c.push(t);
  c.attrs.get<attrs::Normal>() = {mean, std};
  c.attrs.generator = gen;
  return call_inplace(c, t);
}

Tensor& random_(Tensor& t, int64_t low, int64_t high, Generator* gen) {
  OpCall c(OpId::random_);
  c.push(t);
  c.attrs.get<attrs::RandomInts>() = {low, high};
  c.attrs.generator = gen;
  return call_inplace(c, t);
}

}  // namespace mixt
