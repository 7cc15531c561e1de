// Tensors as GEMM operands (operands.h).
#include <mixt/kernels/cuda/gemm/operands.h>

#include <algorithm>

#include <mixt/dispatcher/op_check.h>
#include <mixt/runtime/gemm_settings.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cuda::gemm {

using mixt::gemm::offset_alignment;
using mixt::gemm::pointer_alignment;

MatrixOperand matrix_operand(const Tensor& t, const OpCall& c) {
  const mixt::gemm::OperandLayout l = mixt::gemm::operand_layout(t.size(-2), t.size(-1), t.stride(-2), t.stride(-1));
  MatrixOperand op;
  op.keep = l.fits ? t : contiguous(t);
  op.trans = l.trans;
  op.ld = l.ld;
  op.ptr = op.keep.data_ptr();
  op.batch_stride = op.keep.dim() == 3 && op.keep.size(0) > 1 ? op.keep.stride(0) : 0;
  const int64_t es = op.keep.element_size();
  op.align = std::min({pointer_alignment(op.ptr), offset_alignment(op.ld * es), offset_alignment(op.batch_stride * es)});
  MIXT_CHECK_OP(op.ld <= mixt::gemm::kMaxLd, c, "matrix of shape {} has a leading dimension {} beyond 2^40", t.sizes(),
                op.ld);
  return op;
}

mixt::gemm::GemmKey product_key(const MatrixOperand& x, const MatrixOperand& y, const Tensor& out, int64_t batch,
                                int64_t n, int64_t k, int64_t m, ScalarType in_dtype, mixt::gemm::ComputeType compute) {
  mixt::gemm::GemmKey key;
  key.m = m;
  key.n = n;
  key.k = k;
  key.batch = batch;
  key.a = key.b = in_dtype;
  key.c = key.d = out.dtype();
  key.compute = compute;
  // cuBLAS's A = y: y^T [m, k] is op N of y's memory when y is row-major.
  key.trans_a = y.trans;
  key.trans_b = x.trans;
  key.lda = y.ld;
  key.ldb = x.ld;
  key.ldc = key.ldd = std::max<int64_t>(m, 1);
  if (batch > 1) {
    key.stride_a = y.batch_stride;
    key.stride_b = x.batch_stride;
    key.stride_c = key.stride_d = n * m;
  }
  key.align_a = y.align;
  key.align_b = x.align;
  const uint16_t out_align = std::min(mixt::gemm::pointer_alignment(out.data_ptr()),
                                      offset_alignment(key.ldd * out.element_size()));
  key.align_c = key.align_d = std::min(out_align, offset_alignment(key.stride_d * out.element_size()));
  return key;
}

Tensor aligned_contiguous(const Tensor& t) {
  const Tensor c = contiguous(t);
  if (pointer_alignment(c.data_ptr()) >= mixt::gemm::kMaxAlignment) return c;
  Tensor fresh = make_empty(c.sizes(), c.dtype(), c.device());
  copy_(fresh, c);
  return fresh;
}

mixt::gemm::ComputeType compute_for(ScalarType in) {
  if (in == kFloat64) return mixt::gemm::ComputeType::F64;
  if (in == kFloat32 && float32_matmul_precision() != Float32MatmulPrecision::Highest)
    return mixt::gemm::ComputeType::F32FastTF32;
  return mixt::gemm::ComputeType::F32;
}

}  // namespace mixt::cuda::gemm
