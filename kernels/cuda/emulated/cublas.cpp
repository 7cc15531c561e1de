// The emulated cuBLAS (-Dcuda=emulated): the handle calls and cublasGemmStridedBatchedEx
// (and its _64 form) as docs.nvidia.com/cuda/cublas describes them ("cublasCreate()",
// "cublasSetStream()", "cublasSetWorkspace()", "cublasSetMathMode()", "cublasGemmEx()",
// "cublasGemmStridedBatchedEx()"). The arithmetic is gemm_reference.cpp's.
//
// Note [Emulated cuBLAS reductions]: cublasMath_t says CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_
// REDUCTION "forces any reductions during matrix multiplications to use the accumulator type
// ... and not the output type" for mixed-precision routines whose output is narrower than the
// compute type. Without the flag the emulator does what the library is then allowed to do
// for a 16F/16BF output under COMPUTE_32F with k >= 256: it splits k in two and adds the
// second partial sum to the first one already rounded to the output type, so a handle that
// forgets the flag gives visibly different (less accurate) results.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include <cublas_v2.h>
#include <fmt/format.h>

#include <mixt/kernels/cuda/emulated/access_checks.h>
#include <mixt/kernels/cuda/emulated/emulator.h>
#include <mixt/kernels/cuda/emulated/gemm_reference.h>

#include <mixt/runtime/float_types.h>

// The handle the header forward-declares.
struct cublasContext {
  uint32_t magic = 0x4d43424c;  // "MCBL"
  cudaStream_t stream = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  cublasMath_t math = CUBLAS_DEFAULT_MATH;
  cublasPointerMode_t pointer_mode = CUBLAS_POINTER_MODE_HOST;
};

namespace mixt::cuda::emulated {
namespace {

constexpr int64_t kReducedPrecisionMinK = 256;

bool live(cublasHandle_t h) { return h && h->magic == 0x4d43424c; }

// The accumulation and scale type of cublasGemmEx's compute types, and whether its
// "Datatypes Supported" table admits A/B `ab` with C `c` (A type == B type).
bool gemm_ex_types(cublasComputeType_t compute, cudaDataType ab, cudaDataType c, Accumulate* acc, cudaDataType* scale) {
  switch (compute) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
      *acc = Accumulate::F16, *scale = CUDA_R_16F;
      return ab == CUDA_R_16F && c == CUDA_R_16F;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
      *acc = Accumulate::F32, *scale = CUDA_R_32F;
      return (ab == CUDA_R_16BF && (c == CUDA_R_16BF || c == CUDA_R_32F)) ||
             (ab == CUDA_R_16F && (c == CUDA_R_16F || c == CUDA_R_32F)) || (ab == CUDA_R_32F && c == CUDA_R_32F);
    case CUBLAS_COMPUTE_32F_FAST_16F:
      *acc = Accumulate::F32From16F, *scale = CUDA_R_32F;
      break;
    case CUBLAS_COMPUTE_32F_FAST_16BF:
      *acc = Accumulate::F32From16BF, *scale = CUDA_R_32F;
      break;
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      *acc = Accumulate::F32FromTF32, *scale = CUDA_R_32F;
      break;
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
      *acc = Accumulate::F32, *scale = CUDA_R_32F;
      break;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
      *acc = Accumulate::F64, *scale = CUDA_R_64F;
      return ab == CUDA_R_64F && c == CUDA_R_64F;
    default:
      return false;
  }
  return ab == CUDA_R_32F && c == CUDA_R_32F;  // the FAST and EMULATED 32F types
}

// A scalar of the scale type `t` at `p`.
double read_scalar(cudaDataType t, const void* p) {
  if (t != CUDA_R_16F) return load_element(t, p, 0);
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return static_cast<float>(Half::from_bits(bits));
}

// cublasGemmStridedBatchedEx for both integer widths.
cublasStatus_t gemm_strided_batched(cublasHandle_t h, cublasOperation_t transa, cublasOperation_t transb, int64_t m,
                                    int64_t n, int64_t k, const void* alpha, const void* A, cudaDataType ta,
                                    int64_t lda, long long stride_a, const void* B, cudaDataType tb, int64_t ldb,
                                    long long stride_b, const void* beta, void* C, cudaDataType tc, int64_t ldc,
                                    long long stride_c, int64_t batch, cublasComputeType_t compute) {
  if (!live(h)) return CUBLAS_STATUS_NOT_INITIALIZED;
  auto op_ok = [](cublasOperation_t o) { return o == CUBLAS_OP_N || o == CUBLAS_OP_T || o == CUBLAS_OP_C; };
  // The documented CUBLAS_STATUS_INVALID_VALUE conditions.
  if (m < 0 || n < 0 || k < 0 || batch < 0 || !op_ok(transa) || !op_ok(transb) ||
      lda < std::max<int64_t>(1, transa == CUBLAS_OP_N ? m : k) ||
      ldb < std::max<int64_t>(1, transb == CUBLAS_OP_N ? k : n) || ldc < std::max<int64_t>(1, m) || !alpha || !beta)
    return CUBLAS_STATUS_INVALID_VALUE;
  GemmProblem g;
  cudaDataType scale;
  if (ta != tb || !gemm_ex_types(compute, ta, tc, &g.acc, &scale)) return CUBLAS_STATUS_NOT_SUPPORTED;
  if (m == 0 || n == 0 || batch == 0) return CUBLAS_STATUS_SUCCESS;
  g.trans_a = transa != CUBLAS_OP_N, g.trans_b = transb != CUBLAS_OP_N;
  g.m = m, g.n = n, g.k = k, g.batch = batch;
  g.a = MatrixView{const_cast<void*>(A), ta, g.trans_a ? k : m, g.trans_a ? m : k, lda, stride_a};
  g.b = MatrixView{const_cast<void*>(B), tb, g.trans_b ? n : k, g.trans_b ? k : n, ldb, stride_b};
  g.c = g.d = MatrixView{C, tc, m, n, ldc, stride_c};
  // Note [Emulated cuBLAS reductions].
  g.split_k_in_output_type = !(h->math & CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION) &&
                             g.acc == Accumulate::F32 && (tc == CUDA_R_16F || tc == CUDA_R_16BF) &&
                             k >= kReducedPrecisionMinK;
  const bool device_scalars = h->pointer_mode == CUBLAS_POINTER_MODE_DEVICE;
  if (!device_scalars) g.alpha = read_scalar(scale, alpha), g.beta = read_scalar(scale, beta);
  auto work = [g, scale, device_scalars, alpha, beta]() mutable {
    auto reachable = [](const void* p, int64_t elems, cudaDataType t, const char* what) {
      const uint64_t bytes = static_cast<uint64_t>(elems) * element_size(t);
      if (bytes == 0 || device_accessible(p, bytes)) {
        if (reinterpret_cast<uintptr_t>(p) % element_size(t) == 0) return true;
        record_fault(
            cudaErrorMisalignedAddress,
            fmt::format("cublasGemmStridedBatchedEx: {} pointer {} is not aligned to its element size", what, p));
        return false;
      }
      record_fault(cudaErrorIllegalAddress,
                   fmt::format("cublasGemmStridedBatchedEx: {} [{}, +{} bytes) is not device memory", what, p, bytes));
      return false;
    };
    if (device_scalars) {
      if (!reachable(alpha, 1, scale, "alpha") || !reachable(beta, 1, scale, "beta")) return;
      g.alpha = read_scalar(scale, alpha), g.beta = read_scalar(scale, beta);
    }
    auto extent = [&](const MatrixView& v) { return extent_elements(v.rows, v.cols, v.ld, g.batch, v.stride); };
    if (!reachable(g.a.ptr, extent(g.a), g.a.type, "A") || !reachable(g.b.ptr, extent(g.b), g.b.type, "B") ||
        !reachable(g.d.ptr, extent(g.d), g.d.type, "C"))
      return;
    if (g.beta == 0) g.c.ptr = nullptr;  // "If beta == 0, C does not have to be a valid input"
    run_gemm(g);
    note_written(g.d.ptr, static_cast<size_t>(extent(g.d)) * element_size(g.d.type));  // for the kernels' initcheck
  };
  return enqueue(h->stream, "cublasGemmStridedBatchedEx", work) == cudaSuccess ? CUBLAS_STATUS_SUCCESS
                                                                               : CUBLAS_STATUS_EXECUTION_FAILED;
}

}  // namespace
}  // namespace mixt::cuda::emulated

namespace emu = mixt::cuda::emulated;

cublasStatus_t cublasCreate_v2(cublasHandle_t* handle) {
  if (!handle) return CUBLAS_STATUS_INVALID_VALUE;
  *handle = new cublasContext();
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy_v2(cublasHandle_t handle) {
  if (!emu::live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->magic = 0;
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetVersion_v2(cublasHandle_t handle, int* version) {
  if (!emu::live(handle) || !version) return CUBLAS_STATUS_NOT_INITIALIZED;
  *version = CUBLAS_VERSION;
  return CUBLAS_STATUS_SUCCESS;
}

// "This function unconditionally resets the cuBLAS library workspace back to the default workspace pool".
cublasStatus_t cublasSetStream_v2(cublasHandle_t handle, cudaStream_t streamId) {
  if (!emu::live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  handle->stream = streamId;
  handle->workspace = nullptr;
  handle->workspace_bytes = 0;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetStream_v2(cublasHandle_t handle, cudaStream_t* streamId) {
  if (!emu::live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!streamId) return CUBLAS_STATUS_INVALID_VALUE;
  *streamId = handle->stream;
  return CUBLAS_STATUS_SUCCESS;
}

// "The workspace pointer has to be aligned to at least 256 bytes, otherwise
// CUBLAS_STATUS_INVALID_VALUE error is returned" (cublasSetWorkspace()). The emulator's GEMMs need none.
cublasStatus_t cublasSetWorkspace_v2(cublasHandle_t handle, void* workspace, size_t workspaceSizeInBytes) {
  if (!emu::live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (reinterpret_cast<uintptr_t>(workspace) % 256 != 0) return CUBLAS_STATUS_INVALID_VALUE;
  handle->workspace = workspace;
  handle->workspace_bytes = workspaceSizeInBytes;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t handle, cublasMath_t mode) {
  if (!emu::live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  const int base = mode & ~CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION;
  if (base != CUBLAS_DEFAULT_MATH && base != CUBLAS_TENSOR_OP_MATH && base != CUBLAS_PEDANTIC_MATH &&
      base != CUBLAS_TF32_TENSOR_OP_MATH && base != CUBLAS_FP32_EMULATED_BF16X9_MATH &&
      base != CUBLAS_FP64_EMULATED_FIXEDPOINT_MATH)
    return CUBLAS_STATUS_INVALID_VALUE;
  handle->math = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetMathMode(cublasHandle_t handle, cublasMath_t* mode) {
  if (!emu::live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->math;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t mode) {
  if (!emu::live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (mode != CUBLAS_POINTER_MODE_HOST && mode != CUBLAS_POINTER_MODE_DEVICE) return CUBLAS_STATUS_INVALID_VALUE;
  handle->pointer_mode = mode;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGetPointerMode_v2(cublasHandle_t handle, cublasPointerMode_t* mode) {
  if (!emu::live(handle)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (!mode) return CUBLAS_STATUS_INVALID_VALUE;
  *mode = handle->pointer_mode;
  return CUBLAS_STATUS_SUCCESS;
}

const char* cublasGetStatusName(cublasStatus_t status) { return emu::status_name(status); }

const char* cublasGetStatusString(cublasStatus_t status) { return emu::status_string(status); }

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                          int m, int n, int k, const void* alpha, const void* A, cudaDataType Atype,
                                          int lda, long long int strideA, const void* B, cudaDataType Btype, int ldb,
                                          long long int strideB, const void* beta, void* C, cudaDataType Ctype, int ldc,
                                          long long int strideC, int batchCount, cublasComputeType_t computeType,
                                          cublasGemmAlgo_t algo) {
  (void)algo;  // every cublasGemmAlgo_t value is a hint; the emulator has one kernel
  return emu::gemm_strided_batched(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb,
                                   strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType);
}

cublasStatus_t cublasGemmStridedBatchedEx_64(cublasHandle_t handle, cublasOperation_t transa, cublasOperation_t transb,
                                             int64_t m, int64_t n, int64_t k, const void* alpha, const void* A,
                                             cudaDataType Atype, int64_t lda, long long int strideA, const void* B,
                                             cudaDataType Btype, int64_t ldb, long long int strideB, const void* beta,
                                             void* C, cudaDataType Ctype, int64_t ldc, long long int strideC,
                                             int64_t batchCount, cublasComputeType_t computeType,
                                             cublasGemmAlgo_t algo) {
  (void)algo;
  return emu::gemm_strided_batched(handle, transa, transb, m, n, k, alpha, A, Atype, lda, strideA, B, Btype, ldb,
                                   strideB, beta, C, Ctype, ldc, strideC, batchCount, computeType);
}
