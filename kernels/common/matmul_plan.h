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
// contiguous copy when x's memory has no row layout) times weight^T, plus the bias.
// The result has shape x.shape[:-1] + [out] (`out_shape` is the 2-D [rows, out]).
struct LinearPlan {
  MatmulPlan product;
  Shape result_shape;
};
LinearPlan plan_linear(const OpCall& c);

// scaled_mm(a [M, K], b [K, N], scale_a, scale_b, bias?, scale_result?) checked (Note [Scaled mm]):
// float8 operands (not both e5m2), float32 scales one element each (per tensor) or [M, 1] and
// [1, N] (row-wise), a bias [N] and a scale_result under PyTorch's rules, all on one device.
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
