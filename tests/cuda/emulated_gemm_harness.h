// The harness of tests/cuda/test_emulated_cublaslt.cpp: host copies of device matrices in
// every emulated type, the naive double reference GEMM, and one cuBLASLt call driven from a
// small settings struct (descriptors, preference, heuristic, matmul). Test code only.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include <mixt/runtime/float_types.h>

#include "gpu_checks.h"

namespace mixt::testing::emulated_gemm {

// ---- host values of every emulated type ----
inline size_t size_of(cudaDataType t) {
  return t == CUDA_R_64F ? 8 : t == CUDA_R_32F ? 4 : (t == CUDA_R_16F || t == CUDA_R_16BF) ? 2 : 1;
}
inline void put(cudaDataType t, unsigned char* p, double v) {
  const float f = static_cast<float>(v);
  uint16_t h = 0;
  switch (t) {
    case CUDA_R_64F:
      std::memcpy(p, &v, 8);
      return;
    case CUDA_R_32F:
      std::memcpy(p, &f, 4);
      return;
    case CUDA_R_16F:
      h = mixt::Half(f).x;
      std::memcpy(p, &h, 2);
      return;
    case CUDA_R_16BF:
      h = mixt::BFloat16(f).x;
      std::memcpy(p, &h, 2);
      return;
    case CUDA_R_8F_E4M3:
      *p = mixt::Float8_e4m3fn(f).x;
      return;
    default:
      *p = mixt::Float8_e5m2(f).x;
      return;
  }
}
inline double get(cudaDataType t, const unsigned char* p) {
  float f;
  uint16_t h;
  switch (t) {
    case CUDA_R_64F: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    case CUDA_R_32F:
      std::memcpy(&f, p, 4);
      return f;
    case CUDA_R_16F:
      std::memcpy(&h, p, 2);
      return static_cast<float>(mixt::Half::from_bits(h));
    case CUDA_R_16BF:
      std::memcpy(&h, p, 2);
      return static_cast<float>(mixt::BFloat16::from_bits(h));
    case CUDA_R_8F_E4M3:
      return static_cast<float>(mixt::Float8_e4m3fn::from_bits(*p));
    default:
      return static_cast<float>(mixt::Float8_e5m2::from_bits(*p));
  }
}
inline double round_to(cudaDataType t, double v) {
  unsigned char b[8];
  put(t, b, v);
  return get(t, b);
}

inline uint64_t g_seed = 12345;
// A multiple of 1/4 in [-2, 2]: exact in every type here, so sums are exact in float.
inline double quarter() {
  g_seed = g_seed * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<double>(static_cast<int>((g_seed >> 33) % 17) - 8) / 4.0;
}

// Device memory holding `count` elements of `type`, with a host copy of the values.
struct Buf {
  cudaDataType type = CUDA_R_32F;
  std::vector<double> v;
  void* p = nullptr;
  Buf() = default;
  Buf(cudaDataType t, size_t count, bool random = true) : type(t), v(count, 0.0) {
    if (random)
      for (double& x : v) x = round_to(t, quarter());
    cudaMalloc(&p, count * size_of(t) + 64);
    upload();
  }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  ~Buf() {
    if (p) cudaFree(p);
  }
  void upload() {
    std::vector<unsigned char> b(v.size() * size_of(type));
    for (size_t i = 0; i < v.size(); ++i) put(type, b.data() + i * size_of(type), v[i]);
    cudaMemcpy(p, b.data(), b.size(), cudaMemcpyHostToDevice);
  }
  std::vector<double> download() const {
    std::vector<unsigned char> b(v.size() * size_of(type));
    cudaMemcpy(b.data(), p, b.size(), cudaMemcpyDeviceToHost);
    std::vector<double> out(v.size());
    for (size_t i = 0; i < v.size(); ++i) out[i] = get(type, b.data() + i * size_of(type));
    return out;
  }
};

// A column-major batch of matrices in a Buf.
struct Mat {
  int64_t rows = 0, cols = 0, ld = 0, batch = 1, stride = 0;
  Buf buf;
  Mat(cudaDataType t, int64_t r, int64_t c, int64_t ld_, int64_t b = 1, int64_t pad = 3)
      : rows(r), cols(c), ld(ld_), batch(b), stride(ld_ * c + pad), buf(t, static_cast<size_t>(stride * b)) {}
  double at(int64_t b, int64_t r, int64_t c) const { return buf.v[static_cast<size_t>(b * stride + c * ld + r)]; }
};

// The naive reference: sum over l of op(A)(i, l) * op(B)(l, j) in double, over [from, to).
inline double dot(const Mat& a, bool ta, const Mat& b, bool tb, int64_t bi, int64_t i, int64_t j, int64_t from,
                  int64_t to) {
  double s = 0;
  for (int64_t l = from; l < to; ++l)
    s += (ta ? a.at(bi, l, i) : a.at(bi, i, l)) * (tb ? b.at(bi, j, l) : b.at(bi, l, j));
  return s;
}
inline double gelu(double x) { return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x))); }
inline double gelu_grad(double x) {
  const double s = std::sqrt(2 / M_PI), t = std::tanh(s * (x + 0.044715 * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * s * (1 + 3 * 0.044715 * x * x);
}
inline bool close(double got, double ref, double rel) {
  return std::abs(got - ref) <= rel * std::max(1.0, std::abs(ref));
}
inline double tolerance(cudaDataType t) {
  switch (t) {
    case CUDA_R_64F:
      return 1e-12;
    case CUDA_R_32F:
      return 1e-5;
    case CUDA_R_16F:
      return 1e-3;
    case CUDA_R_16BF:
      return 8e-3;
    default:
      return 0.07;
  }
}

inline void* g_workspace = nullptr;
inline constexpr size_t kWorkspace = 32 << 20;

// One cuBLASLt call's settings.
struct LtCase {
  cublasComputeType_t compute = CUBLAS_COMPUTE_32F;
  cudaDataType scale = CUDA_R_32F;
  bool ta = false, tb = false;
  Mat *A = nullptr, *B = nullptr, *C = nullptr, *D = nullptr;
  const void* a_ptr = nullptr;  // overrides A's device pointer
  double alpha = 1, beta = 0;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  const void* bias = nullptr;
  int32_t bias_type = -1;
  int64_t bias_stride = 0;
  const void* aux = nullptr;
  int64_t aux_ld = 0, aux_stride = 0;
  const void *sa = nullptr, *sb = nullptr, *sc = nullptr, *sd = nullptr;
  void* amax = nullptr;
  bool outer = false;
  uint64_t max_ws = kWorkspace;
  uint32_t mask = CUBLASLT_REDUCTION_SCHEME_MASK;
  uint32_t align[4] = {256, 256, 256, 256};
};
struct LtResult {
  cublasStatus_t heuristic = CUBLAS_STATUS_SUCCESS, matmul = CUBLAS_STATUS_NOT_SUPPORTED;
  int count = 0;
  cublasLtMatmulHeuristicResult_t first{};
  cudaError_t sync = cudaSuccess;
};

inline cublasLtHandle_t g_lt = nullptr;

// Builds the descriptors of `c`, asks the heuristic and (if `run` and it found one) runs the first algorithm.
inline LtResult run_lt(const LtCase& c, bool run = true) {
  LtResult r;
  cublasLtMatmulDesc_t desc;
  cublasLtMatmulDescCreate(&desc, c.compute, c.scale);
  const int32_t ta = c.ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb = c.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
  auto set = [&](cublasLtMatmulDescAttributes_t a, const auto& v) {
    cublasLtMatmulDescSetAttribute(desc, a, &v, sizeof v);
  };
  set(CUBLASLT_MATMUL_DESC_TRANSA, ta);
  set(CUBLASLT_MATMUL_DESC_TRANSB, tb);
  set(CUBLASLT_MATMUL_DESC_EPILOGUE, c.epilogue);
  if (c.bias) set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, c.bias);
  if (c.bias_type >= 0) set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, c.bias_type);
  if (c.bias_stride) set(CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, c.bias_stride);
  if (c.aux) set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, c.aux);
  if (c.aux_ld) set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, c.aux_ld);
  if (c.aux_stride) set(CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, c.aux_stride);
  if (c.sa) set(CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, c.sa);
  if (c.sb) set(CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, c.sb);
  if (c.sc) set(CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, c.sc);
  if (c.sd) set(CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, c.sd);
  if (c.amax) set(CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, c.amax);
  if (c.outer) {
    const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    set(CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode);
    set(CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode);
  }
  cublasLtMatrixLayout_t l[4];
  const Mat* m[4] = {c.A, c.B, c.C ? c.C : c.D, c.D};
  for (int i = 0; i < 4; ++i) {
    cublasLtMatrixLayoutCreate(&l[i], m[i]->buf.type, m[i]->rows, m[i]->cols, m[i]->ld);
    const int32_t count = static_cast<int32_t>(m[i]->batch);
    if (count > 1) {
      cublasLtMatrixLayoutSetAttribute(l[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count);
      cublasLtMatrixLayoutSetAttribute(l[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &m[i]->stride, 8);
    }
  }
  cublasLtMatmulPreference_t pref;
  cublasLtMatmulPreferenceCreate(&pref);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &c.max_ws, 8);
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &c.mask, 4);
  const cublasLtMatmulPreferenceAttributes_t al[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i) cublasLtMatmulPreferenceSetAttribute(pref, al[i], &c.align[i], 4);
  cublasLtMatmulHeuristicResult_t res[4];
  r.heuristic = cublasLtMatmulAlgoGetHeuristic(g_lt, desc, l[0], l[1], l[2], l[3], pref, 4, res, &r.count);
  if (r.count > 0) r.first = res[0];
  if (run && r.count > 0) {
    unsigned char alpha[8], beta[8];
    put(c.scale, alpha, c.alpha);
    put(c.scale, beta, c.beta);
    r.matmul = cublasLtMatmul(g_lt, desc, alpha, c.a_ptr ? c.a_ptr : c.A->buf.p, l[0], c.B->buf.p, l[1], beta,
                              (c.C ? c.C : c.D)->buf.p, l[2], c.D->buf.p, l[3], &res[0].algo, g_workspace, kWorkspace,
                              nullptr);
  }
  // Destroyed before the work must have run: the call snapshots what it needs
  // (MIXT_EMULATED_ASYNC=deferred runs the work only at the synchronisation below).
  cublasLtMatmulPreferenceDestroy(pref);
  for (auto x : l) cublasLtMatrixLayoutDestroy(x);
  cublasLtMatmulDescDestroy(desc);
  if (run && r.count > 0) r.sync = cudaDeviceSynchronize();
  return r;
}

// Compares D (all batches) with `ref(b, i, j)` (the value before conversion to D's type).
template <class F>
inline void expect_d(const Mat& d, const char* what, F ref, double rel = -1) {
  const std::vector<double> got = d.buf.download();
  if (rel < 0) rel = tolerance(d.buf.type);
  int bad = 0;
  for (int64_t b = 0; b < d.batch; ++b)
    for (int64_t j = 0; j < d.cols; ++j)
      for (int64_t i = 0; i < d.rows; ++i) {
        const double g = got[static_cast<size_t>(b * d.stride + j * d.ld + i)], r = ref(b, i, j);
        if (!close(g, r, rel) && bad++ < 3)
          expect(false, std::string(what) + ": D(" + std::to_string(b) + "," + std::to_string(i) + "," +
                            std::to_string(j) + ") = " + std::to_string(g) + ", expected " + std::to_string(r));
      }
  expect(bad == 0, std::string(what) + ": every element of D");
}

// A device float (scales, amax).
struct DevFloat {
  void* p = nullptr;
  explicit DevFloat(float v, int count = 1) {
    cudaMalloc(&p, 4 * count);
    std::vector<float> h(static_cast<size_t>(count), v);
    cudaMemcpy(p, h.data(), 4 * count, cudaMemcpyHostToDevice);
  }
  ~DevFloat() { cudaFree(p); }
  float get(int i = 0) const {
    std::vector<float> h(static_cast<size_t>(i + 1));
    cudaMemcpy(h.data(), p, 4 * (i + 1), cudaMemcpyDeviceToHost);
    return h[static_cast<size_t>(i)];
  }
};

}  // namespace mixt::testing::emulated_gemm
