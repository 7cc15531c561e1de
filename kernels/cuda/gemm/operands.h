// Tensors as GEMM operands: strides -> transposes and leading dimensions (a contiguous copy
// when neither matrix stride is 1), the operand's real alignment, and the GemmKey of a
// row-major product. Host code.
#pragma once

#include <mixt/dispatcher/op_call.h>
#include <mixt/kernels/common/gemm_key.h>

namespace mixt::cuda::gemm {

// A row-major matrix t [B?, rows, cols] as cuBLAS (column-major) sees it: the memory holds
// either t^T column-major (trans = false: op N gives t^T) or t column-major (trans = true).
struct MatrixOperand {
  Tensor keep;  // the tensor `ptr` points into (a contiguous copy when the strides do not fit)
  const void* ptr = nullptr;
  bool trans = false;
  int64_t ld = 1;
  int64_t batch_stride = 0;  // elements; 0 for 2-D operands (and broadcast batches)
  uint16_t align = mixt::gemm::kMaxAlignment;
};

// `t` (2-D or 3-D, on CUDA) as a GEMM operand; copies it only when it must.
MatrixOperand matrix_operand(const Tensor& t, const OpCall& c);

// The key of out[B, n, m] = x[B, n, k] @ y[B, k, m] with `out` row-major contiguous (ld m):
// column-major, out^T = y^T @ x^T, so cuBLAS's A is y and its B is x.
mixt::gemm::GemmKey product_key(const MatrixOperand& x, const MatrixOperand& y, const Tensor& out, int64_t batch,
                                int64_t n, int64_t k, int64_t m, ScalarType in_dtype, mixt::gemm::ComputeType compute);

// `t` contiguous and 256-byte aligned (a fresh copy otherwise): epilogue vectors and matrices
// (bias, aux) are not part of the plan key, so their pointers must have the alignment
// cuBLASLt assumes for them.
Tensor aligned_contiguous(const Tensor& t);

// The compute type of a GEMM with `in` operands under the float32 matmul precision knob.
mixt::gemm::ComputeType compute_for(ScalarType in);

}  // namespace mixt::cuda::gemm
