// Front ends of the matmul family.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {
namespace {

Tensor product(OpId id, const Tensor& a, const Tensor& b, ScalarType out_dtype) {
  OpCall c(id);
  c.push(a);
  c.push(b);
  c.attrs.dtype = out_dtype;
  return call_op(c);
}

Tensor scaled_product(OpId id, const Tensor& bias, const Tensor& a, const Tensor& b, const Scalar& beta,
                      const Scalar& alpha, ScalarType out_dtype) {
  OpCall c(id);
  c.push(bias);
  c.push(a);
  c.push(b);
  c.attrs.get<attrs::Addmm>() = {beta, alpha};
  c.attrs.dtype = out_dtype;
  return call_op(c);
}

}  // namespace

Tensor mm(const Tensor& a, const Tensor& b, ScalarType out_dtype) { return product(OpId::mm, a, b, out_dtype); }
Tensor bmm(const Tensor& a, const Tensor& b, ScalarType out_dtype) { return product(OpId::bmm, a, b, out_dtype); }
Tensor matmul(const Tensor& a, const Tensor& b, ScalarType out_dtype) {
  return product(OpId::matmul, a, b, out_dtype);
}
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, const Scalar& beta, const Scalar& alpha,
             ScalarType out_dtype) {
  return scaled_product(OpId::addmm, bias, a, b, beta, alpha, out_dtype);
}
Tensor baddbmm(const Tensor& bias, const Tensor& a, const Tensor& b, const Scalar& beta, const Scalar& alpha,
               ScalarType out_dtype) {
  return scaled_product(OpId::baddbmm, bias, a, b, beta, alpha, out_dtype);
}
Tensor dot(const Tensor& a, const Tensor& b) { return product(OpId::dot, a, b, ScalarType::Undefined); }
Tensor mv(const Tensor& m, const Tensor& v) { return product(OpId::mv, m, v, ScalarType::Undefined); }
Tensor outer(const Tensor& a, const Tensor& b) { return product(OpId::outer, a, b, ScalarType::Undefined); }
Tensor cross(const Tensor& a, const Tensor& b, int64_t dim) {
  OpCall c(OpId::cross);
  c.push(a);
  c.push(b);
  c.attrs.get<attrs::Dim>().dim = dim;
  return call_op(c);
}

ScaledMmResult scaled_mm(const Tensor& a, const Tensor& b, const Tensor& scale_a, const Tensor& scale_b,
                         const ScaledMmOptions& options) {
  OpCall c(OpId::scaled_mm);
  for (const Tensor* t : {&a, &b, &scale_a, &scale_b}) c.push(*t);
  // The optional inputs keep their positions: an absent bias before a scale_result is an undefined slot.
  if (options.bias.defined() || options.scale_result.defined()) c.push(options.bias);
  if (options.scale_result.defined()) c.push(options.scale_result);
  c.attrs.get<attrs::ScaledMm>().use_fast_accum = options.use_fast_accum;
  c.attrs.dtype = options.out_dtype;
  dispatch(c);
  return {std::move(c.out[0]), std::move(c.out[1])};
}

}  // namespace mixt
