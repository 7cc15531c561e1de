// Front ends of the elementwise ops (unary, binary, ternary) and operators.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {
namespace {

Tensor unary(OpId id, const Tensor& t) {
  OpCall c(id);
  c.push(t);
  return call_op(c);
}

Tensor& unary_(OpId id, Tensor& t) {
  OpCall c(id);
  c.push(t);
  return call_inplace(c, t);
}

OpCall binary_call(OpId id, const Tensor& a, const Tensor& b) {
  OpCall c(id);
  c.push(a);
  c.push(b);
  return c;
}

Tensor binary(OpId id, const Tensor& a, const Tensor& b) {
  OpCall c = binary_call(id, a, b);
  return call_op(c);
}

Tensor& binary_(OpId id, Tensor& a, const Tensor& b) {
  OpCall c = binary_call(id, a, b);
  return call_inplace(c, a);
}

Rounding rounding_mode_of(std::string_view mode) {
  if (mode.empty() || mode == "none") return Rounding::True;
  if (mode == "trunc") return Rounding::Trunc;
  if (mode == "floor") return Rounding::Floor;
  MIXT_FAIL("div", "rounding_mode must be \"\", \"trunc\" or \"floor\" (got \"{}\")", mode);
}

OpCall ternary_call(OpId id, const Tensor& t, const Tensor& a, const Tensor& b) {
  OpCall c(id);
  c.push(t);
  c.push(a);
  c.push(b);
  return c;
}

// addcmul / addcdiv: t + value * (a op b).
OpCall pointwise_call(OpId id, const Tensor& t, const Tensor& a, const Tensor& b, const Scalar& value) {
  OpCall c = ternary_call(id, t, a, b);
  c.attrs.get<attrs::Pointwise>().value = value;
  return c;
}

}  // namespace

// ---- unary ----
#define MIXT_DEFINE_UNARY_FRONT(name)                                    \
  Tensor name(const Tensor& t) { return unary(OpId::name, t); }          \
  Tensor& name##_(Tensor& t) { return unary_(OpId::name##_, t); }
MIXT_DEFINE_UNARY_FRONT(neg)
MIXT_DEFINE_UNARY_FRONT(abs)
MIXT_DEFINE_UNARY_FRONT(sign)
MIXT_DEFINE_UNARY_FRONT(exp)
MIXT_DEFINE_UNARY_FRONT(expm1)
MIXT_DEFINE_UNARY_FRONT(log)
MIXT_DEFINE_UNARY_FRONT(log1p)
MIXT_DEFINE_UNARY_FRONT(log2)
MIXT_DEFINE_UNARY_FRONT(log10)
MIXT_DEFINE_UNARY_FRONT(sqrt)
MIXT_DEFINE_UNARY_FRONT(rsqrt)
MIXT_DEFINE_UNARY_FRONT(reciprocal)
MIXT_DEFINE_UNARY_FRONT(sin)
MIXT_DEFINE_UNARY_FRONT(cos)
MIXT_DEFINE_UNARY_FRONT(tan)
MIXT_DEFINE_UNARY_FRONT(tanh)
MIXT_DEFINE_UNARY_FRONT(sigmoid)
MIXT_DEFINE_UNARY_FRONT(relu)
MIXT_DEFINE_UNARY_FRONT(erf)
MIXT_DEFINE_UNARY_FRONT(erfinv)
MIXT_DEFINE_UNARY_FRONT(floor)
MIXT_DEFINE_UNARY_FRONT(ceil)
MIXT_DEFINE_UNARY_FRONT(acos)
MIXT_DEFINE_UNARY_FRONT(asin)
MIXT_DEFINE_UNARY_FRONT(sinh)
MIXT_DEFINE_UNARY_FRONT(cosh)
MIXT_DEFINE_UNARY_FRONT(asinh)
MIXT_DEFINE_UNARY_FRONT(acosh)
MIXT_DEFINE_UNARY_FRONT(atanh)
MIXT_DEFINE_UNARY_FRONT(trunc)
MIXT_DEFINE_UNARY_FRONT(frac)
#undef MIXT_DEFINE_UNARY_FRONT

Tensor logit(const Tensor& t, std::optional<double> eps) {
  OpCall c(OpId::logit);
  c.push(t);
  c.attrs.get<attrs::Logit>().eps = eps;
  return call_op(c);
}

Tensor& logit_(Tensor& t, std::optional<double> eps) {
  OpCall c(OpId::logit_);
  c.push(t);
  c.attrs.get<attrs::Logit>().eps = eps;
  return call_inplace(c, t);
}

Tensor round(const Tensor& t, int64_t decimals) {
  OpCall c(OpId::round);
  c.push(t);
  c.attrs.get<attrs::Round>().decimals = decimals;
  return call_op(c);
}

Tensor& round_(Tensor& t, int64_t decimals) {
  OpCall c(OpId::round_);
  c.push(t);
  c.attrs.get<attrs::Round>().decimals = decimals;
  return call_inplace(c, t);
}

Tensor clamp(const Tensor& t, const Scalar& min, const Scalar& max) {
  MIXT_CHECK(min.has_value() || max.has_value(), "clamp", "at least one of min and max must be given");
  OpCall c(OpId::clamp);
  c.push(t);
  c.attrs.get<attrs::Clamp>() = {min, max};
  return call_op(c);
}

Tensor& clamp_(Tensor& t, const Scalar& min, const Scalar& max) {
  MIXT_CHECK(min.has_value() || max.has_value(), "clamp_", "at least one of min and max must be given");
  OpCall c(OpId::clamp_);
  c.push(t);
  c.attrs.get<attrs::Clamp>() = {min, max};
  return call_inplace(c, t);
}

Tensor clamp_min(const Tensor& t, const Scalar& min) { return clamp(t, min, Scalar()); }
Tensor clamp_max(const Tensor& t, const Scalar& max) { return clamp(t, Scalar(), max); }
Tensor isfinite(const Tensor& t) { return unary(OpId::isfinite, t); }
Tensor isnan(const Tensor& t) { return unary(OpId::isnan, t); }
Tensor isinf(const Tensor& t) { return unary(OpId::isinf, t); }
Tensor logical_not(const Tensor& t) { return unary(OpId::logical_not, t); }

// ---- binary ----
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  OpCall c = binary_call(OpId::add, a, b);
  c.attrs.get<attrs::Alpha>().alpha = alpha;
  return call_op(c);
}
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha) { return add(a, wrapped_scalar(b), alpha); }
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha) {
  OpCall c = binary_call(OpId::sub, a, b);
  c.attrs.get<attrs::Alpha>().alpha = alpha;
  return call_op(c);
}
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha) { return sub(a, wrapped_scalar(b), alpha); }
Tensor sub(const Scalar& a, const Tensor& b, const Scalar& alpha) { return sub(wrapped_scalar(a), b, alpha); }
Tensor mul(const Tensor& a, const Tensor& b) { return binary(OpId::mul, a, b); }
Tensor mul(const Tensor& a, const Scalar& b) { return mul(a, wrapped_scalar(b)); }
Tensor div(const Tensor& a, const Tensor& b, std::string_view rounding_mode) {
  OpCall c = binary_call(OpId::div, a, b);
  c.attrs.get<attrs::Div>().rounding_mode = rounding_mode_of(rounding_mode);
  return call_op(c);
}
Tensor div(const Tensor& a, const Scalar& b, std::string_view rounding_mode) {
  return div(a, wrapped_scalar(b), rounding_mode);
}
Tensor pow(const Tensor& a, const Tensor& b) { return binary(OpId::pow, a, b); }
Tensor pow(const Tensor& a, const Scalar& b) { return pow(a, wrapped_scalar(b)); }
Tensor pow(const Scalar& a, const Tensor& b) { return pow(wrapped_scalar(a), b); }
Tensor atan2(const Tensor& a, const Tensor& b) { return binary(OpId::atan2, a, b); }
Tensor maximum(const Tensor& a, const Tensor& b) { return binary(OpId::maximum, a, b); }
Tensor minimum(const Tensor& a, const Tensor& b) { return binary(OpId::minimum, a, b); }

Tensor& add_(Tensor& a, const Tensor& b, const Scalar& alpha) {
  OpCall c = binary_call(OpId::add_, a, b);
  c.attrs.get<attrs::Alpha>().alpha = alpha;
  return call_inplace(c, a);
}
Tensor& add_(Tensor& a, const Scalar& b, const Scalar& alpha) { return add_(a, wrapped_scalar(b), alpha); }
Tensor& sub_(Tensor& a, const Tensor& b, const Scalar& alpha) {
  OpCall c = binary_call(OpId::sub_, a, b);
  c.attrs.get<attrs::Alpha>().alpha = alpha;
  return call_inplace(c, a);
}
Tensor& sub_(Tensor& a, const Scalar& b, const Scalar& alpha) { return sub_(a, wrapped_scalar(b), alpha); }
Tensor& mul_(Tensor& a, const Tensor& b) { return binary_(OpId::mul_, a, b); }
Tensor& mul_(Tensor& a, const Scalar& b) { return mul_(a, wrapped_scalar(b)); }
Tensor& div_(Tensor& a, const Tensor& b, std::string_view rounding_mode) {
  OpCall c = binary_call(OpId::div_, a, b);
  c.attrs.get<attrs::Div>().rounding_mode = rounding_mode_of(rounding_mode);
  return call_inplace(c, a);
}
Tensor& div_(Tensor& a, const Scalar& b, std::string_view rounding_mode) {
  return div_(a, wrapped_scalar(b), rounding_mode);
}
Tensor& pow_(Tensor& a, const Tensor& b) { return binary_(OpId::pow_, a, b); }
Tensor& pow_(Tensor& a, const Scalar& b) { return pow_(a, wrapped_scalar(b)); }
Tensor& atan2_(Tensor& a, const Tensor& b) { return binary_(OpId::atan2_, a, b); }

#define MIXT_DEFINE_COMPARE_FRONT(name)                                                 \
  Tensor name(const Tensor& a, const Tensor& b) { return binary(OpId::name, a, b); } \
  Tensor name(const Tensor& a, const Scalar& b) { return binary(OpId::name, a, wrapped_scalar(b)); }
MIXT_DEFINE_COMPARE_FRONT(eq)
MIXT_DEFINE_COMPARE_FRONT(ne)
MIXT_DEFINE_COMPARE_FRONT(lt)
MIXT_DEFINE_COMPARE_FRONT(le)
MIXT_DEFINE_COMPARE_FRONT(gt)
MIXT_DEFINE_COMPARE_FRONT(ge)
#undef MIXT_DEFINE_COMPARE_FRONT
Tensor logical_and(const Tensor& a, const Tensor& b) { return binary(OpId::logical_and, a, b); }
Tensor logical_or(const Tensor& a, const Tensor& b) { return binary(OpId::logical_or, a, b); }
Tensor logical_xor(const Tensor& a, const Tensor& b) { return binary(OpId::logical_xor, a, b); }

// ---- ternary ----
Tensor addcmul(const Tensor& t, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  OpCall c = pointwise_call(OpId::addcmul, t, t1, t2, value);
  return call_op(c);
}
Tensor& addcmul_(Tensor& t, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  OpCall c = pointwise_call(OpId::addcmul_, t, t1, t2, value);
  return call_inplace(c, t);
}
Tensor addcdiv(const Tensor& t, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  OpCall c = pointwise_call(OpId::addcdiv, t, t1, t2, value);
  return call_op(c);
}
Tensor& addcdiv_(Tensor& t, const Tensor& t1, const Tensor& t2, const Scalar& value) {
  OpCall c = pointwise_call(OpId::addcdiv_, t, t1, t2, value);
  return call_inplace(c, t);
}
Tensor lerp(const Tensor& t, const Tensor& end, const Tensor& weight) {
  OpCall c = ternary_call(OpId::lerp, t, end, weight);
  return call_op(c);
}
Tensor lerp(const Tensor& t, const Tensor& end, const Scalar& weight) { return lerp(t, end, wrapped_scalar(weight)); }
Tensor& lerp_(Tensor& t, const Tensor& end, const Tensor& weight) {
  OpCall c = ternary_call(OpId::lerp_, t, end, weight);
  return call_inplace(c, t);
}
Tensor& lerp_(Tensor& t, const Tensor& end, const Scalar& weight) { return lerp_(t, end, wrapped_scalar(weight)); }

// ---- operators ----
Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator+(const Tensor& a, const Scalar& b) { return add(a, b); }
Tensor operator+(const Scalar& a, const Tensor& b) { return add(wrapped_scalar(a), b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator-(const Tensor& a, const Scalar& b) { return sub(a, b); }
Tensor operator-(const Scalar& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator*(const Tensor& a, const Scalar& b) { return mul(a, b); }
Tensor operator*(const Scalar& a, const Tensor& b) { return mul(wrapped_scalar(a), b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
Tensor operator/(const Tensor& a, const Scalar& b) { return div(a, b); }
Tensor operator/(const Scalar& a, const Tensor& b) { return div(wrapped_scalar(a), b); }
Tensor operator-(const Tensor& a) { return neg(a); }
// `scalar op tensor` is `tensor flipped-op scalar` (1 < t is t > 1).
#define MIXT_DEFINE_COMPARE_OPERATOR(op, name, flipped)                              \
  Tensor operator op(const Tensor& a, const Tensor& b) { return name(a, b); }       \
  Tensor operator op(const Tensor& a, const Scalar& b) { return name(a, b); }       \
  Tensor operator op(const Scalar& a, const Tensor& b) { return flipped(b, a); }
MIXT_DEFINE_COMPARE_OPERATOR(==, eq, eq)
MIXT_DEFINE_COMPARE_OPERATOR(!=, ne, ne)
MIXT_DEFINE_COMPARE_OPERATOR(<, lt, gt)
MIXT_DEFINE_COMPARE_OPERATOR(<=, le, ge)
MIXT_DEFINE_COMPARE_OPERATOR(>, gt, lt)
MIXT_DEFINE_COMPARE_OPERATOR(>=, ge, le)
#undef MIXT_DEFINE_COMPARE_OPERATOR

bool equal(const Tensor& a, const Tensor& b) {
  MIXT_CHECK(a.defined() && b.defined(), "equal", "an operand is undefined");
  MIXT_CHECK(a.device() == b.device(), "equal", "the tensors are on different devices: {} and {}", a.device(),
             b.device());
  MIXT_CHECK(!a.is_meta(), "equal", "meta tensors have no values to compare ({} and {})", a.describe(),
             b.describe());
  promote_types(a.dtype(), b.dtype());  // raises for float8 with another type, even when the shapes differ
  if (a.sizes() != b.sizes()) return false;
  return all(eq(a, b)).item<bool>();
}

ScalarType result_type(std::initializer_list<Tensor> operands) {
  ResultTypeState state;
  for (const Tensor& t : operands) {
    MIXT_CHECK(t.defined(), "result_type", "an operand is undefined");
    update_result_type(state, t.dtype(), operand_kind(t));
  }
  return result_type(state);
}

}  // namespace mixt
