// The emulated cuBLASLt/cuBLAS arithmetic (gemm_reference.h). Operands are first widened
// into dense row buffers (op(A) by rows, op(B) by columns) in the accumulation type; the
// products of those buffers go through the CPU's BLAS (sgemm/dgemm) so that emulated
// training runs at a usable speed; scales, epilogues and stores follow in this file.
#include <mixt/kernels/cuda/emulated/gemm_reference.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

#include <cblas.h>

#include <mixt/runtime/float_types.h>

namespace mixt::cuda::emulated {
namespace {

// `x` rounded to what an Accumulate mode feeds its multiplier.
float round_input(Accumulate acc, float x) {
  switch (acc) {
    case Accumulate::F32FromTF32:
      return round_tf32(x);
    case Accumulate::F32From16F:
      return static_cast<float>(Half(x));
    case Accumulate::F32From16BF:
      return static_cast<float>(BFloat16(x));
    default:
      return x;
  }
}

// Widens op(A) of batch `bi` into rows[i * k + l] and op(B) into cols[j * k + l].
template <class T>
void widen(const GemmProblem& p, int64_t bi, std::vector<T>& rows, std::vector<T>& cols, std::vector<double>* raw_a,
           std::vector<double>* raw_b) {
  rows.assign(static_cast<size_t>(p.m * p.k), T(0));
  cols.assign(static_cast<size_t>(p.n * p.k), T(0));
  if (raw_a) raw_a->assign(static_cast<size_t>(p.m), 0.0);
  if (raw_b) raw_b->assign(static_cast<size_t>(p.n), 0.0);
  const int64_t base_a = bi * p.a.stride, base_b = bi * p.b.stride;
  for (int64_t i = 0; i < p.m; ++i)
    for (int64_t l = 0; l < p.k; ++l) {
      const int64_t at = base_a + (p.trans_a ? i * p.a.ld + l : l * p.a.ld + i);
      const double v = load_element(p.a.type, p.a.ptr, at);
      if (raw_a) (*raw_a)[static_cast<size_t>(i)] += v;
      rows[static_cast<size_t>(i * p.k + l)] =
          p.acc == Accumulate::F64 ? static_cast<T>(v) : static_cast<T>(round_input(p.acc, static_cast<float>(v)));
    }
  for (int64_t j = 0; j < p.n; ++j)
    for (int64_t l = 0; l < p.k; ++l) {
      const int64_t at = base_b + (p.trans_b ? l * p.b.ld + j : j * p.b.ld + l);
      const double v = load_element(p.b.type, p.b.ptr, at);
      if (raw_b) (*raw_b)[static_cast<size_t>(j)] += v;
      cols[static_cast<size_t>(j * p.k + l)] =
          p.acc == Accumulate::F64 ? static_cast<T>(v) : static_cast<T>(round_input(p.acc, static_cast<float>(v)));
    }
}

// The sum of x[l] * y[l] for l in [from, to) in the accumulation type of `acc`.
template <class T>
T dot(Accumulate acc, const T* x, const T* y, int64_t from, int64_t to) {
  T s = 0;
  for (int64_t l = from; l < to; ++l) {
    s += x[l] * y[l];
    if (acc == Accumulate::F16) s = static_cast<T>(static_cast<float>(Half(static_cast<float>(s))));
  }
  return s;
}

// prod[i * n + j] = the sum over l in [from, to) of rows[i * k + l] * cols[j * k + l], in T:
// through the CPU's BLAS (the products and sums in T, as the accumulation type says),
// except for COMPUTE_16F's per-step rounding, which only the plain loop models.
template <class T>
void products(const GemmProblem& p, const std::vector<T>& rows, const std::vector<T>& cols, int64_t from, int64_t to,
              std::vector<T>& prod) {
  prod.assign(static_cast<size_t>(p.m * p.n), T(0));
  const int64_t kk = to - from;
  if (p.m == 0 || p.n == 0 || kk <= 0) return;
  if (p.acc == Accumulate::F16) {
    for (int64_t i = 0; i < p.m; ++i)
      for (int64_t j = 0; j < p.n; ++j)
        prod[static_cast<size_t>(i * p.n + j)] = dot(p.acc, rows.data() + i * p.k, cols.data() + j * p.k, from, to);
    return;
  }
  const auto m = static_cast<blasint>(p.m), n = static_cast<blasint>(p.n), k = static_cast<blasint>(kk),
             ld = static_cast<blasint>(p.k);
  if constexpr (std::is_same_v<T, float>)
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0f, rows.data() + from, ld, cols.data() + from, ld,
                0.0f, prod.data(), n);
  else
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, n, k, 1.0, rows.data() + from, ld, cols.data() + from, ld,
                0.0, prod.data(), n);
}

// The value D's type stores for `v`, read back.
double through(cudaDataType t, double v) {
  unsigned char buf[8];
  store_element(t, buf, 0, v);
  return load_element(t, buf, 0);
}

// run_gemm in the accumulation type T (float or double).
template <class T>
void run_typed(const GemmProblem& p) {
  std::vector<T> rows, cols, first_part, second_part;
  std::vector<double> raw_a, raw_b, bgrad;
  float amax = 0;
  const bool bgrad_a = p.epi.bgrad == EpilogueSteps::BiasGrad::FromA;
  const bool bgrad_b = p.epi.bgrad == EpilogueSteps::BiasGrad::FromB;
  const bool bgrad_out = p.epi.bgrad == EpilogueSteps::BiasGrad::FromOutput;
  for (int64_t bi = 0; bi < p.batch; ++bi) {
    widen(p, bi, rows, cols, bgrad_a ? &raw_a : nullptr, bgrad_b ? &raw_b : nullptr);
    if (bgrad_out) bgrad.assign(static_cast<size_t>(p.m), 0.0);
    const int64_t half = p.split_k_in_output_type ? p.k / 2 : p.k;
    products(p, rows, cols, 0, half, first_part);
    if (p.split_k_in_output_type) products(p, rows, cols, half, p.k, second_part);
    for (int64_t j = 0; j < p.n; ++j)
      for (int64_t i = 0; i < p.m; ++i) {
        const size_t at = static_cast<size_t>(i * p.n + j);
        T scale = static_cast<T>(p.alpha) * static_cast<T>(p.scale_a) * static_cast<T>(p.scale_b);
        if (p.row_scale_a) scale = static_cast<T>(p.alpha) * static_cast<T>(p.row_scale_a[i]);
        if (p.col_scale_b) scale *= static_cast<T>(p.col_scale_b[j]);
        T c = 0;
        if (p.beta != 0 && p.c.ptr)
          c = static_cast<T>(p.beta) * static_cast<T>(p.scale_c) *
              static_cast<T>(load_element(p.c.type, p.c.ptr, bi * p.c.stride + j * p.c.ld + i));
        T v;
        if (p.split_k_in_output_type) {
          // The first partial sum lands in D (its type) and the second is added to it there.
          const double first = through(p.d.type, static_cast<double>(scale * first_part[at] + c));
          v = static_cast<T>(first) + scale * second_part[at];
        } else {
          v = scale * first_part[at] + c;
        }
        if (p.epi.add_bias) v += static_cast<T>(load_element(p.bias_type, p.bias, bi * p.bias_stride + i));
        const int64_t aux_at = bi * p.aux_stride + j * p.aux_ld + i;
        if (p.epi.store_aux) store_element(p.aux_type, p.aux, aux_at, static_cast<double>(v));
        switch (p.epi.act) {
          case EpilogueSteps::Act::Relu:
            v = v > 0 ? v : T(0);
            break;
          case EpilogueSteps::Act::Gelu:
            v = static_cast<T>(gelu(static_cast<float>(v)));
            break;
          case EpilogueSteps::Act::DGelu:
            v *= static_cast<T>(gelu_grad(static_cast<float>(load_element(p.aux_type, p.aux, aux_at))));
            break;
          case EpilogueSteps::Act::None:
            break;
        }
        if (bgrad_out) bgrad[static_cast<size_t>(i)] += static_cast<double>(v);
        amax = std::max(amax, std::abs(static_cast<float>(v)));
        store_element(p.d.type, p.d.ptr, bi * p.d.stride + j * p.d.ld + i,
                      static_cast<double>(v) * static_cast<double>(p.scale_d));
      }
    const std::vector<double>& grad = bgrad_a ? raw_a : bgrad_b ? raw_b : bgrad;
    if (p.epi.bgrad != EpilogueSteps::BiasGrad::None)
      for (size_t i = 0; i < grad.size(); ++i)
        store_element(p.bias_type, p.bias, bi * p.bias_stride + static_cast<int64_t>(i),
                      static_cast<double>(static_cast<T>(grad[i])));
  }
  if (p.amax_d) *p.amax_d = amax;
}

}  // namespace

void run_gemm(const GemmProblem& p) {
  if (p.acc == Accumulate::F64)
    run_typed<double>(p);
  else
    run_typed<float>(p);
}

size_t element_size(cudaDataType t) {
  switch (t) {
    case CUDA_R_8F_E4M3:
    case CUDA_R_8F_E5M2:
      return 1;
    case CUDA_R_16F:
    case CUDA_R_16BF:
      return 2;
    case CUDA_R_32F:
      return 4;
    case CUDA_R_64F:
      return 8;
    default:
      return 0;
  }
}

bool is_fp8(cudaDataType t) { return t == CUDA_R_8F_E4M3 || t == CUDA_R_8F_E5M2; }

double load_element(cudaDataType t, const void* base, int64_t i) {
  const unsigned char* p = static_cast<const unsigned char*>(base) + static_cast<size_t>(i) * element_size(t);
  switch (t) {
    case CUDA_R_8F_E4M3:
      return static_cast<float>(Float8_e4m3fn::from_bits(*p));
    case CUDA_R_8F_E5M2:
      return static_cast<float>(Float8_e5m2::from_bits(*p));
    case CUDA_R_16F: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return static_cast<float>(Half::from_bits(b));
    }
    case CUDA_R_16BF: {
      uint16_t b;
      std::memcpy(&b, p, 2);
      return static_cast<float>(BFloat16::from_bits(b));
    }
    case CUDA_R_32F: {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    }
    case CUDA_R_64F: {
      double d;
      std::memcpy(&d, p, 8);
      return d;
    }
    default:
      return 0;
  }
}

void store_element(cudaDataType t, void* base, int64_t i, double v) {
  unsigned char* p = static_cast<unsigned char*>(base) + static_cast<size_t>(i) * element_size(t);
  const float f = static_cast<float>(v);
  switch (t) {
    // An fp8 D is written with the saturating conversion (PTX cvt.rn.satfinite): values
    // past the largest finite one, infinities included, become it; NaN stays NaN.
    case CUDA_R_8F_E4M3:
      *p = Float8_e4m3fn(f != f ? f : std::clamp(f, -448.0f, 448.0f)).x;
      break;
    case CUDA_R_8F_E5M2:
      *p = Float8_e5m2(f != f ? f : std::clamp(f, -57344.0f, 57344.0f)).x;
      break;
    case CUDA_R_16F: {
      const uint16_t b = Half(f).x;
      std::memcpy(p, &b, 2);
      break;
    }
    case CUDA_R_16BF: {
      const uint16_t b = BFloat16(f).x;
      std::memcpy(p, &b, 2);
      break;
    }
    case CUDA_R_32F:
      std::memcpy(p, &f, 4);
      break;
    case CUDA_R_64F:
      std::memcpy(p, &v, 8);
      break;
    default:
      break;
  }
}

int64_t extent_elements(int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride) {
  if (rows <= 0 || cols <= 0 || batch <= 0) return 0;
  return (batch - 1) * stride + (cols - 1) * ld + rows;
}

float gelu(float x) {
  const float s = 0.7978845608028654f;  // sqrt(2 / pi)
  return 0.5f * x * (1.0f + std::tanh(s * (x + 0.044715f * x * x * x)));
}

float gelu_grad(float x) {
  const float s = 0.7978845608028654f;
  const float t = std::tanh(s * (x + 0.044715f * x * x * x));
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * s * (1.0f + 3.0f * 0.044715f * x * x);
}

float round_tf32(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) == 0x7f800000u) return x;  // Inf and NaN pass through
  u = (u + 0xfffu + ((u >> 13) & 1u)) & ~0x1fffu;
  std::memcpy(&x, &u, 4);
  return x;
}

const char* status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return "CUBLAS_STATUS_UNKNOWN";
}

const char* status_string(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS:
      return "success";
    case CUBLAS_STATUS_NOT_INITIALIZED:
      return "the library was not initialized";
    case CUBLAS_STATUS_ALLOC_FAILED:
      return "the resource allocation failed";
    case CUBLAS_STATUS_INVALID_VALUE:
      return "an invalid numeric value was used as an argument";
    case CUBLAS_STATUS_ARCH_MISMATCH:
      return "an absent device architectural feature is required";
    case CUBLAS_STATUS_MAPPING_ERROR:
      return "an access to GPU memory space failed";
    case CUBLAS_STATUS_EXECUTION_FAILED:
      return "the GPU program failed to execute";
    case CUBLAS_STATUS_INTERNAL_ERROR:
      return "an internal operation failed";
    case CUBLAS_STATUS_NOT_SUPPORTED:
      return "the functionality requested is not supported";
    case CUBLAS_STATUS_LICENSE_ERROR:
      return "error detected trying to check the license";
  }
  return "unknown cuBLAS status";
}

}  // namespace mixt::cuda::emulated
