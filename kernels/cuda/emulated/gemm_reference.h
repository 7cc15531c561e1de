// The arithmetic of the emulated cuBLASLt and cuBLAS (-Dcuda=emulated): one column-major
// reference GEMM with the epilogues, scales and reduction orders those libraries document,
// plus the element conversions and status names both stand-ins share. It runs inside
// stream-ordered work (emulator.h's enqueue), on pointers already checked. Emulated
// builds only; see Note [Emulated cuBLASLt] in kernels/cuda/emulated/cublaslt.cpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cublas_api.h>
#include <library_types.h>

namespace mixt::cuda::emulated {

// How products are formed and summed (from the compute type and the data types).
enum class Accumulate {
  F32,          // float products and sums (16F/16BF/fp8/32F inputs under COMPUTE_32F)
  F32FromTF32,  // inputs rounded to TF32 (10 mantissa bits, nearest even) first
  F32From16F,   // inputs rounded to float16 first (COMPUTE_32F_FAST_16F)
  F32From16BF,  // inputs rounded to bfloat16 first (COMPUTE_32F_FAST_16BF)
  F16,          // the running sum rounded to float16 after every step (COMPUTE_16F)
  F64,          // double products and sums (COMPUTE_64F)
};

// One stored matrix: column-major, `rows` x `cols` as stored (before op()), element (r, c)
// of batch b at ptr + b * stride + c * ld + r elements.
struct MatrixView {
  void* ptr = nullptr;
  cudaDataType type = CUDA_R_32F;
  int64_t rows = 0, cols = 0, ld = 0, stride = 0;
};

// Which of the documented epilogue steps run (cublasLtEpilogue_t, decomposed).
struct EpilogueSteps {
  enum class Act { None, Relu, Gelu, DGelu } act = Act::None;
  enum class BiasGrad { None, FromA, FromB, FromOutput } bgrad = BiasGrad::None;
  bool add_bias = false;   // + bias[i] before the activation
  bool store_aux = false;  // the activation's input into aux (GELU_AUX*)
};

// One fully resolved GEMM: D = epilogue(alpha * scales * op(A) op(B) + beta * scale_c * C
// [+ bias]) * scale_d, batch by batch. Scales are values, read from device memory by the
// caller inside the work.
struct GemmProblem {
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  MatrixView a, b, c, d;  // c.ptr may be null when beta == 0
  Accumulate acc = Accumulate::F32;
  double alpha = 1, beta = 0;
  float scale_a = 1, scale_b = 1, scale_c = 1, scale_d = 1;
  const float* row_scale_a = nullptr;  // outer-vector scales: m values (rows of op(A))
  const float* col_scale_b = nullptr;  // n values (columns of op(B))
  float* amax_d = nullptr;             // max |D| before scale_d (written once, all batches)
  EpilogueSteps epi;
  void* bias = nullptr;  // input (add_bias) or output (bgrad)
  cudaDataType bias_type = CUDA_R_32F;
  int64_t bias_stride = 0;
  void* aux = nullptr;  // output (store_aux) or input (DGelu)
  cudaDataType aux_type = CUDA_R_32F;
  int64_t aux_ld = 0, aux_stride = 0;
  // Split-K with INPLACE reduction: the first half of k is summed, scaled and rounded to D's
  // type before the second half is added (cublasLtReductionScheme_t INPLACE).
  bool split_k_in_output_type = false;
};

// Runs `p` on the host (device memory is host memory in the emulator).
void run_gemm(const GemmProblem& p);

// The size of one element of `t` (0 for a type the emulator does not compute with).
size_t element_size(cudaDataType t);
// True for CUDA_R_8F_E4M3 and CUDA_R_8F_E5M2.
bool is_fp8(cudaDataType t);
// Element `i` of an array of `t`, widened exactly.
double load_element(cudaDataType t, const void* base, int64_t i);
// Stores `v` into element `i` of an array of `t`, rounding to nearest even (fp8: saturating).
void store_element(cudaDataType t, void* base, int64_t i, double v);
// Elements spanned by a batch of column-major matrices (0 when empty).
int64_t extent_elements(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride);
// The tanh approximation of GELU that cuBLASLt documents, and its derivative.
float gelu(float x);
float gelu_grad(float x);
// `x` rounded to TF32 (10 explicit mantissa bits, nearest even).
float round_tf32(float x);
// cublasGetStatusName / cublasGetStatusString texts.
const char* status_name(cublasStatus_t s);
const char* status_string(cublasStatus_t s);

}  // namespace mixt::cuda::emulated
