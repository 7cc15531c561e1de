// Products of the linear-algebra composites (kernels/composite/linalg.cpp, einsum.cpp) that
// chain several GEMMs: narrow floats (float16, bfloat16, float8) accumulate through the chain
// in float32 and round once at the end, as a single mm does.
#pragma once

#include <mixt/runtime/ops/ops.h>

namespace mixt::composite {

// The dtype a chain of products of `dt` operands works in.
inline ScalarType chain_work_dtype(ScalarType dt) { return is_reduced_float(dt) ? kFloat32 : dt; }

// a @ b (bmm when `batched`) with its result in `work`: operands of the input dtype run the
// narrow GEMM with a float32 output; one already widened meets the other widened (exactly).
inline Tensor product_in(const Tensor& a, const Tensor& b, ScalarType work, bool batched) {
  const bool mixed = a.dtype() != b.dtype();
  const Tensor x = mixed ? a.to(work) : a, y = mixed ? b.to(work) : b;
  const ScalarType out = x.dtype() == work ? ScalarType::Undefined : work;
  return batched ? bmm(x, y, out) : mm(x, y, out);
}

}  // namespace mixt::composite
