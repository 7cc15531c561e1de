// The plans of mm, bmm, addmm, baddbmm, linear and scaled_mm: operand checks, the
// result's shape and dtype. Shared by every backend's kernel and the meta rules, so
// they raise the same errors. Host code.
#pragma once

#include <mixt/dispatcher/op_call.h>

namespace mixt {

// One checked matrix product: a [B?, n, k] @ b [B?, k, m], plus beta * bias for addmm/baddbmm.
struct MatmulPlan {
  Tensor a, b, bias;
  bool batched = false;
  int64_t batch = 1, n = 0, k = 0, m = 0;
  ScalarType in_dtype = ScalarType::Undefined;
  ScalarType out_dtype = ScalarType::Undefined;
  Scalar alpha = 1, beta = 0;
  Shape out_shape;
};

// Validates the inputs of mm/bmm (`batched`) or addmm/baddbmm (`scaled`: in0 is the bias)
// and plans the product; raises mixt::Error naming the op.
MatmulPlan plan_matmul(const OpCall& c, bool batched, bool scaled);

// linear(x [*, in], weight [out, in], bias?) as one product: x's rows (a view, or a
// contiguous copy when x's memory has no row layout) times weight^T, plus the bias, which
// may be any tensor that broadcasts to the result (taken as [rows, out] when it varies along
// x's leading dims). The result has shape x.shape[:-1] + [out] (`out_shape` is the 2-D [rows, out]).
struct LinearPlan {
  MatmulPlan product;
  Shape result_shape;
};
LinearPlan plan_linear(const OpCall& c);

// linear_backward(grad_output [*, out], input [*, in], weight [out, in]) checked: one dtype
// (not bool) and one device, a 2-D weight, matching leading dims and features. The outputs
// asked for (attrs::LinearBackward) get their shapes: input's, [out, in] and [out]; the
// others stay undefined. Reads no data and makes no tensors (the meta rule uses it).
struct LinearBackwardPlan {
  int64_t rows = 0, in = 0, out = 0;  // the product's sizes: grad_output as [rows, out]
  bool input_grad = false, weight_grad = false, bias_grad = false;
  ScalarType dtype = ScalarType::Undefined;
  Shape input_shape;
};
LinearBackwardPlan plan_linear_backward(const OpCall& c);

// The plan of a plain product a [n, k] @ b [k, m] with operands and result in `dtype` (no bias,
// alpha 1), for kernels that have already checked their operands (linear_backward's GEMMs).
MatmulPlan plain_product(const Tensor& a, const Tensor& b, ScalarType dtype);

// `t` [*, cols] as a [rows, cols] matrix: a view when its strides allow (no dispatch), else
// reshape's contiguous copy. `rows` is the product of t's leading dims.
Tensor as_rows(const Tensor& t, int64_t rows, int64_t cols);

// scaled_mm(a [M, K], b [K, N], scale_a, scale_b, bias?, scale_result?) checked (Note [Scaled mm]):
// float8 operands (not both e5m2), float32 scales one element each (per tensor) or [M, 1] and
// [1, N] (row-wise; not with a float8 result), a bias [N] and a scale_result under PyTorch's
// rules, all on one device.
struct ScaledMmPlan {
  Tensor a, b, scale_a, scale_b, bias, scale_result;  // bias, scale_result: undefined when absent
  int64_t m = 0, k = 0, n = 0;
  bool rowwise = false;                              // scale_a[i] * scale_b[j] per element
  ScalarType out_dtype = ScalarType::Undefined;
  bool float8_out = false;                           // scale_result and amax apply
  Shape out_shape;
};
ScaledMmPlan plan_scaled_mm(const OpCall& c);

}  // namespace mixt
