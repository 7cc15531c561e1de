// Front ends of the matmul family.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/runtime/check.h>
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

Tensor addmv(const Tensor& self, const Tensor& mat, const Tensor& vec, const Scalar& beta, const Scalar& alpha) {
  return scaled_product(OpId::addmv, self, mat, vec, beta, alpha, ScalarType::Undefined);
}
Tensor addr(const Tensor& self, const Tensor& vec1, const Tensor& vec2, const Scalar& beta, const Scalar& alpha) {
  return scaled_product(OpId::addr, self, vec1, vec2, beta, alpha, ScalarType::Undefined);
}
Tensor addbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta,
              const Scalar& alpha) {
  return scaled_product(OpId::addbmm, self, batch1, batch2, beta, alpha, ScalarType::Undefined);
}
Tensor addmm_activation(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta,
                        const Scalar& alpha, bool use_gelu) {
  OpCall c(OpId::addmm_activation);
  c.push(self);
  c.push(mat1);
  c.push(mat2);
  c.attrs.get<attrs::AddmmActivation>() = {beta, alpha, use_gelu};
  return call_op(c);
}
Tensor vdot(const Tensor& a, const Tensor& b) { return product(OpId::vdot, a, b, ScalarType::Undefined); }
namespace {
// A two-operand op whose one attribute is a dim (linalg_vecdot, cross).
Tensor binary_along(OpId id, const Tensor& a, const Tensor& b, int64_t dim) {
  OpCall c(id);
  c.push(a);
  c.push(b);
  c.attrs.get<attrs::Dim>().dim = dim;
  return call_op(c);
}
}  // namespace
Tensor linalg_vecdot(const Tensor& x, const Tensor& y, int64_t dim) {
  return binary_along(OpId::linalg_vecdot, x, y, dim);
}

namespace {
Tensor list_op(OpId id, const char* name, const std::vector<Tensor>& tensors) {
  MIXT_CHECK(!tensors.empty(), name, "expected a non-empty list of tensors");
  for (const Tensor& t : tensors) MIXT_CHECK(t.defined(), name, "the list holds an undefined tensor");
  OpCall c(id);
  c.list = tensors;
  return call_op(c);
}
}  // namespace

Tensor chain_matmul(const std::vector<Tensor>& matrices) {
  return list_op(OpId::chain_matmul, "chain_matmul", matrices);
}
Tensor linalg_multi_dot(const std::vector<Tensor>& tensors) {
  return list_op(OpId::linalg_multi_dot, "linalg_multi_dot", tensors);
}

Tensor tensordot(const Tensor& a, const Tensor& b, const Shape& dims_a, const Shape& dims_b) {
  OpCall c(OpId::tensordot);
  c.push(a);
  c.push(b);
  c.attrs.get<attrs::Tensordot>() = {dims_a, dims_b};
  return call_op(c);
}
Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims) {
  MIXT_CHECK(a.defined() && b.defined(), "tensordot", "an operand is undefined");
  MIXT_CHECK(dims >= 0, "tensordot", "dims must be non-negative, but got {}", dims);
  MIXT_CHECK(dims <= a.dim() && dims <= b.dim(), "tensordot",
             "cannot contract {} dims of tensors of shapes {} and {}", dims, a.sizes(), b.sizes());
  Shape dims_a, dims_b;
  for (int64_t i = 0; i < dims; ++i) {
    dims_a.push_back(a.dim() - dims + i);
    dims_b.push_back(i);
  }
  return tensordot(a, b, dims_a, dims_b);
}

Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands) {
  MIXT_CHECK(equation.size() <= EinsumEquation::kMaxChars, "einsum",
             "the equation has {} characters; at most {} are supported", equation.size(), EinsumEquation::kMaxChars);
  MIXT_CHECK(equation.find('\0') == std::string_view::npos, "einsum", "the equation holds a NUL character");
  OpCall c(OpId::einsum);
  equation.copy(c.attrs.get<attrs::Einsum>().equation.text, equation.size());
  MIXT_CHECK(!operands.empty(), "einsum", "expected at least one operand");
  for (const Tensor& t : operands) MIXT_CHECK(t.defined(), "einsum", "an operand is undefined");
  c.list = operands;
  return call_op(c);
}
Tensor cross(const Tensor& a, const Tensor& b, int64_t dim) { return binary_along(OpId::cross, a, b, dim); }

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
