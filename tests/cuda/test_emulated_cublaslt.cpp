// The emulated cuBLASLt and cuBLAS (-Dcuda=emulated; kernels/cuda/emulated/cublaslt*.cpp,
// cublas.cpp) against a naive double reference written here: every layout (NN, NT, TN, TT)
// with odd sizes and ld > rows, batches, alpha/beta with C aliasing D, the compute types,
// each epilogue with its bias/aux/bias-gradient values, fp8 scales and amax, row-wise
// (outer-vector) scales, split-K INPLACE reductions, the documented refusals (no algorithm),
// cublasGemmStridedBatchedEx, and device-side faults for bad pointers. Own main (no
// Catch2); gpu_checks.h's counters; exits 1 on a failure.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime_api.h>

#include <mixt/kernels/cuda/emulated/emulator.h>

#include "emulated_gemm_harness.h"
#include "gpu_checks.h"

using namespace mixt::testing;
using namespace mixt::testing::emulated_gemm;
namespace emu = mixt::cuda::emulated;

namespace {

void check_descriptors() {
  expect(cublasLtGetVersion() == CUBLAS_VERSION, "cublasLtGetVersion is the header's CUBLAS_VERSION");
  expect(std::string(cublasGetStatusName(CUBLAS_STATUS_NOT_SUPPORTED)) == "CUBLAS_STATUS_NOT_SUPPORTED", "status name");
  cublasLtMatmulDesc_t d;
  expect(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F) == CUBLAS_STATUS_SUCCESS, "DescCreate");
  const int32_t t = CUBLAS_OP_T;
  int32_t back = -1;
  size_t written = 0;
  expect(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &t, 8) == CUBLAS_STATUS_INVALID_VALUE,
         "a wrong attribute size is INVALID_VALUE");
  expect(cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &t, 4) == CUBLAS_STATUS_SUCCESS, "set TRANSA");
  expect(
      cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, nullptr, 0, &written) == CUBLAS_STATUS_SUCCESS &&
          written == 4,
      "size query of TRANSA");
  expect(cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &back, 4, &written) == CUBLAS_STATUS_SUCCESS &&
             back == CUBLAS_OP_T,
         "TRANSA reads back");
  int32_t compute = 0;
  cublasLtMatmulDescGetAttribute(d, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, &compute, 4, &written);
  expect(compute == CUBLAS_COMPUTE_32F, "COMPUTE_TYPE reads back");
  cublasLtMatmulDescDestroy(d);
  cublasLtMatrixLayout_t l;
  cublasLtMatrixLayoutCreate(&l, CUDA_R_16BF, 7, 5, 9);
  uint64_t rows = 0;
  expect(
      cublasLtMatrixLayoutGetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ROWS, &rows, 8, &written) == CUBLAS_STATUS_SUCCESS &&
          rows == 7,
      "layout ROWS reads back");
  cublasLtMatrixLayoutDestroy(l);
  cublasLtMatmulPreference_t p;
  cublasLtMatmulPreferenceCreate(&p);
  uint32_t align = 0;
  cublasLtMatmulPreferenceGetAttribute(p, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align, 4, &written);
  expect(align == 256, "MIN_ALIGNMENT_A_BYTES defaults to 256");
  cublasLtMatmulPreferenceDestroy(p);
}

// Every layout, odd sizes, ld > rows, for the compute/data type pairs of the datatype table.
void check_layouts() {
  struct Types {
    cublasComputeType_t compute;
    cudaDataType scale, ab, cd;
  };
  const Types types[] = {{CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F},
                         {CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16F, CUDA_R_16F},
                         {CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_32F},
                         {CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF},
                         {CUBLAS_COMPUTE_16F, CUDA_R_16F, CUDA_R_16F, CUDA_R_16F},
                         {CUBLAS_COMPUTE_64F, CUDA_R_64F, CUDA_R_64F, CUDA_R_64F}};
  const int64_t m = 7, n = 5, k = 9;
  for (const Types& ty : types)
    for (int lay = 0; lay < 4; ++lay) {
      const bool ta = lay & 2, tb = lay & 1;
      Mat A(ty.ab, ta ? k : m, ta ? m : k, (ta ? k : m) + 2), B(ty.ab, tb ? n : k, tb ? k : n, (tb ? n : k) + 3);
      Mat C(ty.cd, m, n, m + 4), D(ty.cd, m, n, m + 1);
      LtCase c;
      c.compute = ty.compute, c.scale = ty.scale, c.ta = ta, c.tb = tb, c.A = &A, c.B = &B, c.C = &C, c.D = &D;
      c.alpha = 1.5, c.beta = -0.5;
      const LtResult r = run_lt(c);
      const std::string what = "layout " + std::string(ta ? "T" : "N") + (tb ? "T" : "N") + " compute " +
                               std::to_string(ty.compute) + " types " + std::to_string(ty.ab) + "->" +
                               std::to_string(ty.cd);
      expect(r.count > 0 && r.matmul == CUBLAS_STATUS_SUCCESS && r.sync == cudaSuccess, what + ": runs");
      expect_d(D, what.c_str(), [&](int64_t b, int64_t i, int64_t j) {
        return 1.5 * dot(A, ta, B, tb, b, i, j, 0, k) - 0.5 * C.at(b, i, j);
      });
    }
}

// Batches, C aliasing D, and TF32 rounding.
void check_batches_and_compute() {
  const int64_t m = 6, n = 3, k = 5, batch = 3;
  Mat A(CUDA_R_16BF, m, k, m + 1, batch), B(CUDA_R_16BF, n, k, n + 2, batch), D(CUDA_R_32F, m, n, m + 3, batch);
  const std::vector<double> before = D.buf.v;
  LtCase c;
  c.tb = true, c.A = &A, c.B = &B, c.D = &D, c.alpha = 0.5, c.beta = -0.75;  // C == D
  const LtResult r = run_lt(c);
  expect(r.count > 0 && r.matmul == CUBLAS_STATUS_SUCCESS, "batched, in place: runs");
  expect_d(D, "batched, C aliasing D", [&](int64_t b, int64_t i, int64_t j) {
    return 0.5 * dot(A, false, B, true, b, i, j, 0, k) -
           0.75 * before[static_cast<size_t>(b * D.stride + j * D.ld + i)];
  });
  // TF32: inputs with 14 significant bits lose the low ones before the products.
  Mat X(CUDA_R_32F, 4, 8, 4), Y(CUDA_R_32F, 8, 3, 8), Z(CUDA_R_32F, 4, 3, 4);
  auto fine = [] {
    quarter();
    return 1 + static_cast<double>((g_seed >> 20) % 16384) / 16384;
  };
  for (double& v : X.buf.v) v = fine();
  for (double& v : Y.buf.v) v = fine();
  X.buf.upload(), Y.buf.upload();
  LtCase t;
  t.compute = CUBLAS_COMPUTE_32F_FAST_TF32, t.A = &X, t.B = &Y, t.D = &Z;
  run_lt(t);
  auto tf32 = [](double v) { return std::ldexp(std::nearbyint(std::ldexp(v, 10)), -10); };  // values in [1, 2)
  bool differs = false;
  expect_d(
      Z, "TF32 inputs",
      [&](int64_t, int64_t i, int64_t j) {
        double s = 0, full = 0;
        for (int64_t l = 0; l < 8; ++l)
          s += tf32(X.at(0, i, l)) * tf32(Y.at(0, l, j)), full += X.at(0, i, l) * Y.at(0, l, j);
        differs |= std::abs(s - full) > 1e-5 * std::abs(full);
        return s;
      },
      1e-6);
  expect(differs, "TF32 rounding changes the result");
}

// Each epilogue mixt uses, and the forward ones beside them, with bias/aux values (batch 2).
void check_epilogues() {
  const int64_t m = 6, n = 4, k = 5, batch = 2, aux_ld = 8;
  struct Epi {
    uint32_t e;
    const char* name;
  };
  const Epi epis[] = {{CUBLASLT_EPILOGUE_RELU, "RELU"},
                      {CUBLASLT_EPILOGUE_BIAS, "BIAS"},
                      {CUBLASLT_EPILOGUE_RELU_BIAS, "RELU_BIAS"},
                      {CUBLASLT_EPILOGUE_GELU, "GELU"},
                      {CUBLASLT_EPILOGUE_GELU_BIAS, "GELU_BIAS"},
                      {CUBLASLT_EPILOGUE_GELU_AUX, "GELU_AUX"},
                      {CUBLASLT_EPILOGUE_GELU_AUX_BIAS, "GELU_AUX_BIAS"},
                      {CUBLASLT_EPILOGUE_DGELU, "DGELU"},
                      {CUBLASLT_EPILOGUE_DGELU_BGRAD, "DGELU_BGRAD"},
                      {CUBLASLT_EPILOGUE_BGRADA, "BGRADA"},
                      {CUBLASLT_EPILOGUE_BGRADB, "BGRADB"}};
  for (const Epi& ep : epis) {
    const uint32_t e = ep.e;
    const bool ta = e == CUBLASLT_EPILOGUE_BGRADB, tb = e == CUBLASLT_EPILOGUE_BGRADA;  // exercise op() too
    Mat A(CUDA_R_32F, ta ? k : m, ta ? m : k, (ta ? k : m) + 1, batch), B(CUDA_R_32F, tb ? n : k, tb ? k : n, 7, batch);
    Mat D(CUDA_R_32F, m, n, m, batch);
    const int64_t bias_len = e == CUBLASLT_EPILOGUE_BGRADB ? n : m;
    Buf bias(CUDA_R_32F, static_cast<size_t>(bias_len * batch)),
        aux(CUDA_R_32F, static_cast<size_t>(aux_ld * n * batch));
    const bool has_bias = e & CUBLASLT_EPILOGUE_BIAS, bgrad = e == CUBLASLT_EPILOGUE_DGELU_BGRAD ||
                                                              e == CUBLASLT_EPILOGUE_BGRADA ||
                                                              e == CUBLASLT_EPILOGUE_BGRADB;
    const bool gelu_aux = e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    const bool dgelu = e == CUBLASLT_EPILOGUE_DGELU || e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
    LtCase c;
    c.ta = ta, c.tb = tb, c.A = &A, c.B = &B, c.D = &D, c.alpha = 2, c.epilogue = e;
    if (has_bias || bgrad) c.bias = bias.p, c.bias_stride = bias_len;
    if (gelu_aux || dgelu) c.aux = aux.p, c.aux_ld = aux_ld, c.aux_stride = aux_ld * n;
    const LtResult r = run_lt(c);
    const std::string what = std::string("epilogue ") + ep.name;
    expect(r.count > 0 && r.matmul == CUBLAS_STATUS_SUCCESS && r.sync == cudaSuccess, what + ": runs");
    auto pre = [&](int64_t b, int64_t i, int64_t j) {
      return 2 * dot(A, ta, B, tb, b, i, j, 0, k) + (has_bias ? bias.v[static_cast<size_t>(b * m + i)] : 0.0);
    };
    auto aux_at = [&](int64_t b, int64_t i, int64_t j) { return static_cast<size_t>(b * aux_ld * n + j * aux_ld + i); };
    auto post = [&](int64_t b, int64_t i, int64_t j) {
      const double x = pre(b, i, j);
      if (e & CUBLASLT_EPILOGUE_RELU) return std::max(x, 0.0);
      if (e & CUBLASLT_EPILOGUE_GELU) return gelu(x);
      if (dgelu) return x * gelu_grad(aux.v[aux_at(b, i, j)]);
      return x;
    };
    expect_d(D, what.c_str(), post, 2e-5);
    if (gelu_aux) {
      const std::vector<double> got = aux.download();
      bool ok = true;
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t j = 0; j < n; ++j)
          for (int64_t i = 0; i < m; ++i) ok &= close(got[aux_at(b, i, j)], pre(b, i, j), 1e-5);
      expect(ok, what + ": aux holds the GELU input");
    }
    if (bgrad) {
      // BGRADA: sum of op(A) over k per row of D; BGRADB: sum of op(B) over k per column of D;
      // DGELU_BGRAD: sum of the DGELU output over the columns of D, per row.
      const std::vector<double> got = bias.download();
      bool ok = true;
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t x = 0; x < bias_len; ++x) {
          double want = 0;
          for (int64_t l = 0; l < (e == CUBLASLT_EPILOGUE_DGELU_BGRAD ? n : k); ++l)
            want += e == CUBLASLT_EPILOGUE_BGRADA   ? (ta ? A.at(b, l, x) : A.at(b, x, l))
                    : e == CUBLASLT_EPILOGUE_BGRADB ? (tb ? B.at(b, x, l) : B.at(b, l, x))
                                                    : post(b, x, l);
          ok &= close(got[static_cast<size_t>(b * bias_len + x)], want, 2e-5);
        }
      expect(ok, what + ": the bias gradient");
    }
  }
}

// fp8: tensor-wide scales, a scaled fp8 D with AMAX_D, mixed e4m3/e5m2, a bias; row-wise scales.
void check_fp8() {
  const int64_t m = 16, n = 8, k = 32;
  Mat A(CUDA_R_8F_E4M3, k, m, k), B(CUDA_R_8F_E4M3, k, n, k), B5(CUDA_R_8F_E5M2, k, n, k);
  Mat Dbf(CUDA_R_16BF, m, n, m), C16(CUDA_R_16F, m, n, m), D8(CUDA_R_8F_E4M3, m, n, 16);
  Mat D5(CUDA_R_8F_E5M2, m, n, 16), Cbf(CUDA_R_16BF, m, n, m);
  DevFloat sa(0.5f), sb(2.0f), sd(0.25f), amax(-1.0f);
  LtCase c;
  c.ta = true, c.A = &A, c.B = &B, c.D = &Dbf, c.sa = sa.p, c.sb = sb.p, c.alpha = 1.5;
  LtResult r = run_lt(c);
  expect(r.count > 0 && r.matmul == CUBLAS_STATUS_SUCCESS, "fp8 TN, bf16 D: runs");
  expect_d(Dbf, "fp8 tensor-wide scales",
           [&](int64_t, int64_t i, int64_t j) { return 1.5 * dot(A, true, B, false, 0, i, j, 0, k); });
  c.D = &D8, c.C = &Cbf, c.beta = 0.5, c.sd = sd.p, c.amax = amax.p;
  r = run_lt(c);
  double want_amax = 0;
  auto temp = [&](int64_t i, int64_t j) { return 1.5 * dot(A, true, B, false, 0, i, j, 0, k) + 0.5 * Cbf.at(0, i, j); };
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) want_amax = std::max(want_amax, std::abs(temp(i, j)));
  expect(r.matmul == CUBLAS_STATUS_SUCCESS, "fp8 D with D scale and amax: runs");
  expect_d(D8, "fp8 D = e4m3(scale_d * D_temp)", [&](int64_t, int64_t i, int64_t j) { return 0.25 * temp(i, j); });
  expect(close(amax.get(), want_amax, 1e-6),
         "AMAX_D is max |D| before the D scale: " + std::to_string(amax.get()) + " vs " + std::to_string(want_amax));
  LtCase mix = c;
  mix.B = &B5, mix.D = &D5, mix.C = &C16, mix.amax = nullptr;
  r = run_lt(mix);
  expect(r.matmul == CUBLAS_STATUS_SUCCESS, "e4m3 x e5m2 -> e5m2: runs");
  expect_d(
      D5, "e4m3 x e5m2 -> e5m2",
      [&](int64_t, int64_t i, int64_t j) {
        return 0.25 * (1.5 * dot(A, true, B5, false, 0, i, j, 0, k) + 0.5 * C16.at(0, i, j));
      },
      0.13);
  Buf bias(CUDA_R_16BF, m);
  LtCase b = c;
  b.D = &Dbf, b.C = nullptr, b.beta = 0, b.sd = nullptr, b.amax = nullptr, b.epilogue = CUBLASLT_EPILOGUE_BIAS,
  b.bias = bias.p;
  r = run_lt(b);
  expect(r.matmul == CUBLAS_STATUS_SUCCESS, "fp8 with a bf16 bias: runs");
  expect_d(Dbf, "fp8 bias epilogue", [&](int64_t, int64_t i, int64_t j) {
    return 1.5 * dot(A, true, B, false, 0, i, j, 0, k) + bias.v[static_cast<size_t>(i)];
  });
  // Row-wise: one scale per row of op(A) (m) and per column of op(B) (n).
  Buf row(CUDA_R_32F, m), col(CUDA_R_32F, n);
  for (double& v : row.v) v = 0.25 + std::abs(quarter());
  for (double& v : col.v) v = 0.5 + std::abs(quarter());
  row.upload(), col.upload();
  for (cudaDataType dt : {CUDA_R_16BF, CUDA_R_32F}) {
    Mat D(dt, m, n, m);
    LtCase o;
    o.ta = true, o.A = &A, o.B = &B, o.D = &D, o.sa = row.p, o.sb = col.p, o.outer = true, o.alpha = 0.5;
    r = run_lt(o);
    expect(r.count > 0 && r.matmul == CUBLAS_STATUS_SUCCESS, "outer-vector scales: runs");
    expect_d(D, "outer-vector scales", [&](int64_t, int64_t i, int64_t j) {
      return 0.5 * row.v[static_cast<size_t>(i)] * col.v[static_cast<size_t>(j)] *
             dot(A, true, B, false, 0, i, j, 0, k);
    });
  }
}

// The documented refusals: no algorithm (count 0, a failure status) for each.
void check_refusals() {
  const int64_t m = 16, n = 8, k = 32;
  Mat A(CUDA_R_8F_E4M3, k, m, k), An(CUDA_R_8F_E4M3, m, k, m), A40(CUDA_R_8F_E4M3, k, m, 40);
  Mat A5(CUDA_R_8F_E5M2, k, m, k), B(CUDA_R_8F_E4M3, k, n, k), B5(CUDA_R_8F_E5M2, k, n, k);
  Mat Dbf(CUDA_R_16BF, m, n, m), D8(CUDA_R_8F_E4M3, m, n, m), Cbf(CUDA_R_16BF, m, n, m);
  Mat H(CUDA_R_16F, m, k, m), HB(CUDA_R_16F, k, n, k), HD(CUDA_R_16F, m, n, m), BB(CUDA_R_16BF, k, n, k);
  DevFloat s(1.0f), row(1.0f, m), col(1.0f, n), amax(0.0f);
  Buf bias(CUDA_R_16BF, m + 8);
  auto refused = [](const LtCase& c, const char* what, cublasStatus_t want = CUBLAS_STATUS_NOT_SUPPORTED) {
    const LtResult r = run_lt(c, false);
    expect(r.count == 0 && r.heuristic == want, std::string("refused: ") + what + " (status " +
                                                    cublasGetStatusName(r.heuristic) + ", " + std::to_string(r.count) +
                                                    " algos)");
  };
  LtCase fp8;
  fp8.ta = true, fp8.A = &A, fp8.B = &B, fp8.D = &Dbf, fp8.sa = s.p, fp8.sb = s.p;
  expect(run_lt(fp8, false).count > 0, "the fp8 TN baseline has an algorithm");
  LtCase c = fp8;
  c.ta = false, c.A = &An;
  refused(c, "fp8 in the NN layout");
  c = fp8, c.A = &A40;
  refused(c, "fp8 with lda = 40 (not a multiple of 16)");
  c = fp8, c.A = &A5, c.B = &B5;
  refused(c, "e5m2 x e5m2");
  c = fp8, c.outer = true, c.sa = row.p, c.sb = col.p, c.D = &D8, c.C = &Cbf;
  refused(c, "outer-vector scales with an fp8 D");
  c = fp8, c.outer = true, c.sa = row.p, c.sb = col.p, c.sd = s.p;
  refused(c, "outer-vector scales with a D scale pointer");
  c = fp8, c.compute = CUBLAS_COMPUTE_16F, c.scale = CUDA_R_16F;
  refused(c, "fp8 under COMPUTE_16F");
  c = fp8, c.align[0] = 8;
  refused(c, "fp8 A declared only 8-byte aligned");
  c = fp8, c.epilogue = CUBLASLT_EPILOGUE_BIAS, c.bias = static_cast<char*>(bias.p) + 2;
  refused(c, "fp8 with a bias pointer 2 bytes off 16-byte alignment");
  c = fp8, c.amax = amax.p;
  refused(c, "AMAX_D with a bf16 D", CUBLAS_STATUS_INVALID_VALUE);
  LtCase h;
  h.A = &H, h.B = &HB, h.D = &HD;
  expect(run_lt(h, false).count > 0, "the float16 baseline has an algorithm");
  c = h, c.align[0] = 1;
  refused(c, "float16 A declared 1-byte aligned");
  c = h, c.epilogue = CUBLASLT_EPILOGUE_BIAS, c.bias = static_cast<char*>(bias.p) + 1;
  refused(c, "a float16 bias pointer off its element alignment");
  c = h, c.B = &BB;
  refused(c, "float16 A with bfloat16 B");
  c = h, c.sa = s.p;
  refused(c, "an A scale on a float16 matmul", CUBLAS_STATUS_INVALID_VALUE);
  c = h, c.epilogue = CUBLASLT_EPILOGUE_GELU_AUX, c.aux = HD.buf.p, c.aux_ld = 20;
  refused(c, "a GELU aux ld not divisible by 8", CUBLAS_STATUS_INVALID_VALUE);
}

// Split-K INPLACE: chosen first when the mask and workspace allow it; its partial sums are rounded to D's type.
void check_split_k() {
  const int64_t m = 5, n = 3, k = 512;
  // Leading dimensions of 8 elements keep the 16-byte alignment the split-K kernel needs.
  Mat A(CUDA_R_16BF, m, k, 8), B(CUDA_R_16BF, k, n, k), D1(CUDA_R_16BF, m, n, 8), D2(CUDA_R_16BF, m, n, 8);
  LtCase c;
  c.A = &A, c.B = &B, c.D = &D1;
  LtResult r = run_lt(c);
  expect(r.count > 0 && r.first.workspaceSize > 0, "a mask admitting INPLACE gets the split-K algorithm first");
  expect_d(
      D1, "split-K INPLACE: bf16(bf16(p1) + p2)",
      [&](int64_t b, int64_t i, int64_t j) {
        return round_to(CUDA_R_16BF, dot(A, false, B, false, b, i, j, 0, k / 2)) +
               dot(A, false, B, false, b, i, j, k / 2, k);
      },
      1e-12 + 4e-3);
  c.D = &D2, c.mask = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE | CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE;
  r = run_lt(c);
  expect(r.count > 0 && r.first.workspaceSize == 0, "a mask without INPLACE gets no split-K INPLACE algorithm");
  const std::vector<double> d1 = D1.buf.download(), d2 = D2.buf.download();
  int differ = 0, exact = 0;
  for (int64_t j = 0; j < n; ++j)
    for (int64_t i = 0; i < m; ++i) {
      const size_t at = static_cast<size_t>(j * D1.ld + i);
      const double split = round_to(CUDA_R_16BF, round_to(CUDA_R_16BF, dot(A, false, B, false, 0, i, j, 0, k / 2)) +
                                                     dot(A, false, B, false, 0, i, j, k / 2, k));
      exact += d1[at] == split && d2[at] == round_to(CUDA_R_16BF, dot(A, false, B, false, 0, i, j, 0, k));
      differ += d1[at] != d2[at];
    }
  expect(exact == m * n, "split-K and plain results match their models exactly");
  expect(differ > 0, "the reduction scheme mask changes results (" + std::to_string(differ) + " elements)");
  c.mask = CUBLASLT_REDUCTION_SCHEME_MASK, c.max_ws = 0;
  expect(run_lt(c, false).first.workspaceSize == 0, "no workspace: no split-K algorithm");
}

// cublasLtMatmulAlgoCheck on the heuristic's algorithm, a foreign one, and a split-K one that does not apply.
void check_algo_check() {
  Mat A(CUDA_R_16BF, 5, 512, 8), B(CUDA_R_16BF, 512, 3, 512), D(CUDA_R_16BF, 5, 3, 8);
  LtCase c;
  c.A = &A, c.B = &B, c.D = &D;
  const LtResult r = run_lt(c, false);
  cublasLtMatmulDesc_t desc;
  cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F);
  cublasLtMatrixLayout_t la, lb, ld, lb16, la16;
  cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, 5, 512, 8);
  cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, 512, 3, 512);
  cublasLtMatrixLayoutCreate(&ld, CUDA_R_16BF, 5, 3, 8);
  cublasLtMatrixLayoutCreate(&la16, CUDA_R_16BF, 5, 16, 8);
  cublasLtMatrixLayoutCreate(&lb16, CUDA_R_16BF, 16, 3, 16);
  cublasLtMatmulHeuristicResult_t out{};
  expect(cublasLtMatmulAlgoCheck(g_lt, desc, la, lb, ld, ld, &r.first.algo, &out) == CUBLAS_STATUS_SUCCESS &&
             out.workspaceSize == r.first.workspaceSize,
         "AlgoCheck accepts the heuristic's algorithm");
  cublasLtMatmulAlgo_t foreign{};
  expect(cublasLtMatmulAlgoCheck(g_lt, desc, la, lb, ld, ld, &foreign, &out) == CUBLAS_STATUS_INVALID_VALUE,
         "AlgoCheck refuses a foreign algorithm");
  expect(cublasLtMatmulAlgoCheck(g_lt, desc, la16, lb16, ld, ld, &r.first.algo, &out) == CUBLAS_STATUS_NOT_SUPPORTED,
         "AlgoCheck refuses split-K for k = 16");
  for (auto l : {la, lb, ld, la16, lb16}) cublasLtMatrixLayoutDestroy(l);
  cublasLtMatmulDescDestroy(desc);
}

// cublasGemmStridedBatchedEx(_64): layouts, batches, beta with C, type pairs, the reduced-precision flag, refusals.
void check_cublas() {
  cublasHandle_t h;
  expect(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS, "cublasCreate");
  expect(cublasSetStream(h, nullptr) == CUBLAS_STATUS_SUCCESS, "cublasSetStream");
  expect(cublasSetWorkspace(h, g_workspace, kWorkspace) == CUBLAS_STATUS_SUCCESS, "cublasSetWorkspace");
  expect(cublasSetWorkspace(h, static_cast<char*>(g_workspace) + 64, 1024) == CUBLAS_STATUS_INVALID_VALUE,
         "cublasSetWorkspace refuses a workspace off 256-byte alignment");
  expect(cublasSetMathMode(
             h, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)) ==
             CUBLAS_STATUS_SUCCESS,
         "cublasSetMathMode");
  const int64_t m = 7, n = 5, k = 9, batch = 2;
  for (int lay = 0; lay < 4; ++lay)
    for (cudaDataType ab : {CUDA_R_32F, CUDA_R_16BF, CUDA_R_64F}) {
      const bool ta = lay & 2, tb = lay & 1;
      const cudaDataType cd = ab == CUDA_R_16BF ? CUDA_R_32F : ab;
      Mat A(ab, ta ? k : m, ta ? m : k, (ta ? k : m) + 2, batch),
          B(ab, tb ? n : k, tb ? k : n, (tb ? n : k) + 1, batch);
      Mat C(cd, m, n, m + 3, batch);
      const std::vector<double> before = C.buf.v;
      unsigned char alpha[8], beta[8];
      const cudaDataType st = ab == CUDA_R_64F ? CUDA_R_64F : CUDA_R_32F;
      put(st, alpha, 1.5), put(st, beta, 0.5);
      const cublasComputeType_t ct = ab == CUDA_R_64F ? CUBLAS_COMPUTE_64F : CUBLAS_COMPUTE_32F;
      const cublasOperation_t oa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, ob = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
      const cublasStatus_t s =
          lay % 2
              ? cublasGemmStridedBatchedEx(h, oa, ob, m, n, k, alpha, A.buf.p, ab, A.ld, A.stride, B.buf.p, ab, B.ld,
                                           B.stride, beta, C.buf.p, cd, C.ld, C.stride, batch, ct, CUBLAS_GEMM_DEFAULT)
              : cublasGemmStridedBatchedEx_64(h, oa, ob, m, n, k, alpha, A.buf.p, ab, A.ld, A.stride, B.buf.p, ab, B.ld,
                                              B.stride, beta, C.buf.p, cd, C.ld, C.stride, batch, ct,
                                              CUBLAS_GEMM_DEFAULT);
      cudaDeviceSynchronize();
      const std::string what = std::string("cublasGemmStridedBatchedEx ") + (ta ? "T" : "N") + (tb ? "T" : "N") +
                               " type " + std::to_string(ab);
      expect(s == CUBLAS_STATUS_SUCCESS, what + ": runs");
      expect_d(C, what.c_str(), [&](int64_t b, int64_t i, int64_t j) {
        return 1.5 * dot(A, ta, B, tb, b, i, j, 0, k) + 0.5 * before[static_cast<size_t>(b * C.stride + j * C.ld + i)];
      });
    }
  // Without CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION a bf16 result may be reduced in bf16.
  Mat A(CUDA_R_16BF, 5, 512, 5), B(CUDA_R_16BF, 512, 3, 512), C(CUDA_R_16BF, 5, 3, 5);
  const float one = 1, zero = 0;
  auto run = [&] {
    return cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 5, 3, 512, &one, A.buf.p, CUDA_R_16BF, 5, 0, B.buf.p,
                                      CUDA_R_16BF, 512, 0, &zero, C.buf.p, CUDA_R_16BF, 5, 0, 1, CUBLAS_COMPUTE_32F,
                                      CUBLAS_GEMM_DEFAULT);
  };
  run();
  expect_d(C, "DISALLOW_REDUCED_PRECISION_REDUCTION: one rounding",
           [&](int64_t, int64_t i, int64_t j) { return dot(A, false, B, false, 0, i, j, 0, 512); });
  const std::vector<double> strict = C.buf.download();
  cublasSetMathMode(h, CUBLAS_DEFAULT_MATH);
  run();
  expect_d(C, "reduced-precision reduction: bf16(bf16(p1) + p2)", [&](int64_t, int64_t i, int64_t j) {
    return round_to(CUDA_R_16BF, dot(A, false, B, false, 0, i, j, 0, 256)) + dot(A, false, B, false, 0, i, j, 256, 512);
  });
  expect(C.buf.download() != strict, "the math mode's reduction flag changes bf16 results");
  expect(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 5, 3, 512, &one, A.buf.p, CUDA_R_16BF, 4, 0, B.buf.p,
                                    CUDA_R_16BF, 512, 0, &zero, C.buf.p, CUDA_R_16BF, 5, 0, 1, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_INVALID_VALUE,
         "lda < m is INVALID_VALUE");
  expect(cublasGemmStridedBatchedEx(h, CUBLAS_OP_T, CUBLAS_OP_N, 16, 3, 32, &one, A.buf.p, CUDA_R_8F_E4M3, 32, 0,
                                    B.buf.p, CUDA_R_8F_E4M3, 32, 0, &zero, C.buf.p, CUDA_R_16BF, 16, 0, 1,
                                    CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_NOT_SUPPORTED,
         "fp8 is NOT_SUPPORTED by cublasGemmStridedBatchedEx");
  expect(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS, "cublasDestroy");
}

// Bad pointers fault inside the stream-ordered work, as a kernel would (last: faults are sticky).
void check_faults() {
  Mat A(CUDA_R_32F, 8, 4, 8), B(CUDA_R_32F, 4, 4, 4), D(CUDA_R_32F, 8, 4, 8);
  LtCase c;
  c.A = &A, c.B = &B, c.D = &D;
  std::vector<float> host(64, 1.0f);
  c.a_ptr = host.data();
  LtResult r = run_lt(c);
  expect(r.matmul == CUBLAS_STATUS_SUCCESS && r.sync == cudaErrorIllegalAddress,
         "a host pointer as A: cudaErrorIllegalAddress at the next synchronisation");
  expect(emu::last_fault().find("cublasLtMatmul") != std::string::npos &&
             emu::last_fault().find("A [") != std::string::npos,
         "the fault names cublasLtMatmul and A: " + emu::last_fault());
  emu::reset_faults();
  c.a_ptr = static_cast<char*>(A.buf.p) + 256;  // runs past the end of A's allocation
  r = run_lt(c);
  expect(r.sync == cudaErrorIllegalAddress, "A running past its allocation faults");
  emu::reset_faults();
  c.a_ptr = static_cast<char*>(A.buf.p) + 4;  // the vectorised algorithm needs 16 bytes
  r = run_lt(c);
  expect(r.sync == cudaErrorMisalignedAddress, "an A pointer breaking the chosen algorithm's alignment faults");
  emu::reset_faults();
  cublasHandle_t h;
  cublasCreate(&h);
  const float one = 1, zero = 0;
  expect(cublasGemmStridedBatchedEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 8, 4, 4, &one, host.data(), CUDA_R_32F, 8, 0, B.buf.p,
                                    CUDA_R_32F, 4, 0, &zero, D.buf.p, CUDA_R_32F, 8, 0, 1, CUBLAS_COMPUTE_32F,
                                    CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS &&
             cudaDeviceSynchronize() == cudaErrorIllegalAddress,
         "cuBLAS: a host pointer as A faults");
  expect(emu::last_fault().find("cublasGemmStridedBatchedEx") != std::string::npos, "the fault names the call");
  emu::reset_faults();
  cublasDestroy(h);
}

}  // namespace

int main() {
  cudaMalloc(&g_workspace, kWorkspace);
  cublasLtCreate(&g_lt);
  group("descriptors and attributes", check_descriptors);
  group("layouts NN/NT/TN/TT x datatype table", check_layouts);
  group("batches, C aliasing D, TF32", check_batches_and_compute);
  group("epilogues, bias and aux values, bias gradients", check_epilogues);
  group("fp8 scales, amax, outer-vector scales", check_fp8);
  group("documented refusals", check_refusals);
  group("split-K INPLACE reduction", check_split_k);
  group("cublasLtMatmulAlgoCheck", check_algo_check);
  group("cublasGemmStridedBatchedEx", check_cublas);
  group("device faults for bad pointers", check_faults);
  cublasLtDestroy(g_lt);
  cudaFree(g_workspace);
  std::printf("test_emulated_cublaslt: %d checks, %d failures\n", g_checks, g_failures);
  return g_failures ? 1 : 0;
}
