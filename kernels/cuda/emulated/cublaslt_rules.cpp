// The emulated cuBLASLt's rules (-Dcuda=emulated): which descriptor sets the documentation
// admits (validate), which of the emulator's algorithms fits a problem (algo_fits), and the
// snapshot of the descriptors a matmul runs with. Every rule cites its source in
// docs.nvidia.com/cuda/cublas; see Note [Emulated cuBLASLt] in cublaslt.cpp.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include <mixt/kernels/cuda/emulated/cublaslt_state.h>
#include <mixt/kernels/cuda/emulated/emulator.h>
#include <mixt/kernels/cuda/emulated/gemm_reference.h>

namespace mixt::cuda::emulated::lt {
namespace {

Verdict refuse(cublasStatus_t s, std::string why) { return Verdict{s, std::move(why)}; }
#define MIXT_LT_REQUIRE(cond, status, ...) \
  if (!(cond)) return refuse(status, fmt::format(__VA_ARGS__))

}  // namespace

uint64_t low_bit(uint64_t v) { return v ? (v & (~v + 1)) : (uint64_t{1} << 62); }

bool uses_bias_input(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU_BIAS || e == CUBLASLT_EPILOGUE_GELU_BIAS ||
         e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
}

bool writes_bias(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_DGELU_BGRAD || e == CUBLASLT_EPILOGUE_BGRADA || e == CUBLASLT_EPILOGUE_BGRADB;
}

bool uses_aux(uint32_t e) {
  return e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS || e == CUBLASLT_EPILOGUE_DGELU ||
         e == CUBLASLT_EPILOGUE_DGELU_BGRAD;
}

int64_t bias_length(const Problem& p) { return p.desc.epilogue == CUBLASLT_EPILOGUE_BGRADB ? p.n : p.m; }

bool compute_mode(int32_t compute, Accumulate* acc, cudaDataType* scale) {
  switch (compute) {
    case CUBLAS_COMPUTE_16F:
    case CUBLAS_COMPUTE_16F_PEDANTIC:
      *acc = Accumulate::F16;
      *scale = CUDA_R_16F;
      return true;
    case CUBLAS_COMPUTE_32F:
    case CUBLAS_COMPUTE_32F_PEDANTIC:
    case CUBLAS_COMPUTE_32F_EMULATED_16BFX9:
      *acc = Accumulate::F32;
      *scale = CUDA_R_32F;
      return true;
    case CUBLAS_COMPUTE_32F_FAST_TF32:
      *acc = Accumulate::F32FromTF32;
      *scale = CUDA_R_32F;
      return true;
    case CUBLAS_COMPUTE_32F_FAST_16F:
      *acc = Accumulate::F32From16F;
      *scale = CUDA_R_32F;
      return true;
    case CUBLAS_COMPUTE_32F_FAST_16BF:
      *acc = Accumulate::F32From16BF;
      *scale = CUDA_R_32F;
      return true;
    case CUBLAS_COMPUTE_64F:
    case CUBLAS_COMPUTE_64F_PEDANTIC:
    case CUBLAS_COMPUTE_64F_EMULATED_FIXEDPOINT:
      *acc = Accumulate::F64;
      *scale = CUDA_R_64F;
      return true;
    default:
      return false;
  }
}

namespace {

// The "Datatypes Supported" table of cublasLtMatmul() for non-fp8 A/B (C type == D type).
bool plain_types_supported(Accumulate acc, cudaDataType ab, cudaDataType cd) {
  switch (acc) {
    case Accumulate::F16:
      return ab == CUDA_R_16F && cd == CUDA_R_16F;
    case Accumulate::F64:
      return ab == CUDA_R_64F && cd == CUDA_R_64F;
    case Accumulate::F32:
      return (ab == CUDA_R_16BF && (cd == CUDA_R_16BF || cd == CUDA_R_32F)) ||
             (ab == CUDA_R_16F && (cd == CUDA_R_16F || cd == CUDA_R_32F)) || (ab == CUDA_R_32F && cd == CUDA_R_32F);
    default:
      return ab == CUDA_R_32F && cd == CUDA_R_32F;  // the FAST_* compute types
  }
}

// The fp8 rules of cublasLtMatmul() ("To use tensor- or block-scaled FP8 kernels ...", its table).
Verdict check_fp8(const Problem& p) {
  const DescState& s = p.desc;
  MIXT_LT_REQUIRE(is_fp8(p.ta) && is_fp8(p.tb), CUBLAS_STATUS_NOT_SUPPORTED, "fp8 A needs fp8 B and vice versa");
  MIXT_LT_REQUIRE(!(p.ta == CUDA_R_8F_E5M2 && p.tb == CUDA_R_8F_E5M2), CUBLAS_STATUS_NOT_SUPPORTED,
                  "E5M2 x E5M2 is not in the fp8 type table");
  MIXT_LT_REQUIRE(s.compute_type == CUBLAS_COMPUTE_32F && s.scale_type == CUDA_R_32F, CUBLAS_STATUS_NOT_SUPPORTED,
                  "fp8 needs CUBLAS_COMPUTE_32F with a CUDA_R_32F scale type");
  MIXT_LT_REQUIRE(s.trans_a != CUBLAS_OP_N && s.trans_b == CUBLAS_OP_N, CUBLAS_STATUS_NOT_SUPPORTED,
                  "fp8 on Hopper needs the TN format (A transposed, B not)");
  // "Tensor Core Usage": ((opA == N ? m : k) * size) % 16, ((opB == N ? k : n) * size) % 16,
  // (m * Csize) % 16 and every ld * size % 16 (plus the batch strides, which move pointers).
  const uint64_t sc = element_size(p.tc), sd = element_size(p.td);
  MIXT_LT_REQUIRE(p.k % 16 == 0, CUBLAS_STATUS_NOT_SUPPORTED, "fp8 needs k % 16 == 0 (k = {})", p.k);
  MIXT_LT_REQUIRE(p.a.ld % 16 == 0 && p.b.ld % 16 == 0, CUBLAS_STATUS_NOT_SUPPORTED,
                  "fp8 needs lda and ldb multiples of 16 (lda = {}, ldb = {})", p.a.ld, p.b.ld);
  MIXT_LT_REQUIRE((p.m * sd) % 16 == 0 && (p.m * sc) % 16 == 0 && (p.c.ld * sc) % 16 == 0 && (p.d.ld * sd) % 16 == 0,
                  CUBLAS_STATUS_NOT_SUPPORTED, "fp8 needs m, ldc and ldd to span multiples of 16 bytes");
  MIXT_LT_REQUIRE(p.batch == 1 || (p.a.batch_stride % 16 == 0 && p.b.batch_stride % 16 == 0 &&
                                   (p.c.batch_stride * sc) % 16 == 0 && (p.d.batch_stride * sd) % 16 == 0),
                  CUBLAS_STATUS_NOT_SUPPORTED, "fp8 batch strides must keep 16-byte alignment");
  const bool e5m2_in = p.ta == CUDA_R_8F_E5M2 || p.tb == CUDA_R_8F_E5M2;
  bool ok = false;
  cudaDataType bias = CUDA_R_16BF;
  if (p.td == CUDA_R_16BF || p.td == CUDA_R_16F)
    ok = p.tc == p.td, bias = p.td;
  else if (p.td == CUDA_R_32F)
    ok = p.tc == CUDA_R_32F, bias = CUDA_R_16BF;
  else if (p.td == CUDA_R_8F_E4M3 || (p.td == CUDA_R_8F_E5M2 && e5m2_in))
    ok = p.tc == CUDA_R_16BF || p.tc == CUDA_R_16F, bias = p.tc;
  MIXT_LT_REQUIRE(ok, CUBLAS_STATUS_NOT_SUPPORTED, "C type {} / D type {} is not in the fp8 table", int(p.tc),
                  int(p.td));
  MIXT_LT_REQUIRE(s.bias_type == -1 || s.bias_type == bias, CUBLAS_STATUS_NOT_SUPPORTED,
                  "the fp8 table's bias type here is {}, not {}", int(bias), s.bias_type);
  const uint32_t e = s.epilogue;
  MIXT_LT_REQUIRE(e == CUBLASLT_EPILOGUE_DEFAULT || e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_RELU ||
                      e == CUBLASLT_EPILOGUE_RELU_BIAS || e == CUBLASLT_EPILOGUE_GELU ||
                      e == CUBLASLT_EPILOGUE_GELU_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX ||
                      e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS,
                  CUBLAS_STATUS_NOT_SUPPORTED, "epilogue {} is not emulated for fp8", e);
  return {};
}

// The scaling rules ("Narrow Precision Data Types Usage", "Outer Vector Scaling").
Verdict check_scales(const Problem& p) {
  const DescState& s = p.desc;
  const bool fp8 = is_fp8(p.ta);
  const int32_t outer = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
  if (s.a_scale_mode != 0 || s.b_scale_mode != 0) {
    MIXT_LT_REQUIRE(s.a_scale_mode == outer && s.b_scale_mode == outer, CUBLAS_STATUS_NOT_SUPPORTED,
                    "scale modes {}/{}: only SCALAR_32F or OUTER_VEC_32F on both A and B are emulated", s.a_scale_mode,
                    s.b_scale_mode);
    MIXT_LT_REQUIRE(fp8, CUBLAS_STATUS_NOT_SUPPORTED, "outer-vector scaling is for fp8 A and B");
    MIXT_LT_REQUIRE(p.td == CUDA_R_16F || p.td == CUDA_R_16BF || p.td == CUDA_R_32F, CUBLAS_STATUS_NOT_SUPPORTED,
                    "outer-vector scaling supports only 16F, 16BF and 32F D");
    MIXT_LT_REQUIRE(!s.d_scale, CUBLAS_STATUS_NOT_SUPPORTED, "outer-vector scaling does not support a D scale");
  }
  MIXT_LT_REQUIRE(fp8 || (!s.a_scale && !s.b_scale), CUBLAS_STATUS_INVALID_VALUE,
                  "A/B scale pointers are only for narrow-precision matmuls");
  MIXT_LT_REQUIRE(is_fp8(p.td) || !s.d_scale, CUBLAS_STATUS_INVALID_VALUE, "a D scale needs a narrow-precision D");
  MIXT_LT_REQUIRE(is_fp8(p.td) || !s.amax_d, CUBLAS_STATUS_INVALID_VALUE, "AMAX_D is computed only for an fp8 D");
  MIXT_LT_REQUIRE(!s.aux_scale && !s.aux_amax && !s.d_out_scale && s.d_out_scale_mode == 0 && !s.emulation_desc,
                  CUBLAS_STATUS_NOT_SUPPORTED, "aux scale/amax, D_OUT scales and emulation are not emulated");
  MIXT_LT_REQUIRE(s.c_scale_mode == 0 && s.d_scale_mode == 0 && s.aux_scale_mode == 0, CUBLAS_STATUS_NOT_SUPPORTED,
                  "C, D and aux scale modes must stay SCALAR_32F");
  return {};
}

}  // namespace

Verdict validate(const Problem& p, bool run) {
  const DescState& s = p.desc;
  for (const LayoutState* l : {&p.a, &p.b, &p.c, &p.d}) {
    MIXT_LT_REQUIRE(
        l->order == CUBLASLT_ORDER_COL && l->batch_mode == CUBLASLT_BATCH_MODE_STRIDED && l->plane_offset == 0,
        CUBLAS_STATUS_NOT_SUPPORTED, "only strided column-major layouts are emulated");
    MIXT_LT_REQUIRE(element_size(static_cast<cudaDataType>(l->type)) != 0, CUBLAS_STATUS_NOT_SUPPORTED,
                    "data type {} is not emulated", l->type);
    MIXT_LT_REQUIRE(l->batch_count >= 1 && l->batch_stride >= 0, CUBLAS_STATUS_INVALID_VALUE,
                    "bad batch count or stride");
    MIXT_LT_REQUIRE(l->ld >= static_cast<int64_t>(l->rows) || (l == &p.c && l->ld == 0), CUBLAS_STATUS_INVALID_VALUE,
                    "ld {} < rows {}", l->ld, l->rows);
  }
  const bool ta = s.trans_a != CUBLAS_OP_N, tb = s.trans_b != CUBLAS_OP_N;
  MIXT_LT_REQUIRE(s.trans_a >= 0 && s.trans_a <= 2 && s.trans_b >= 0 && s.trans_b <= 2 && s.trans_c == CUBLAS_OP_N,
                  CUBLAS_STATUS_INVALID_VALUE, "bad transpose values");
  MIXT_LT_REQUIRE(s.fill_mode == CUBLAS_FILL_MODE_FULL, CUBLAS_STATUS_NOT_SUPPORTED,
                  "fill modes are unsupported on Hopper");
  MIXT_LT_REQUIRE(
      static_cast<int64_t>(ta ? p.a.cols : p.a.rows) == p.m && static_cast<int64_t>(tb ? p.b.rows : p.b.cols) == p.n &&
          static_cast<int64_t>(tb ? p.b.cols : p.b.rows) == p.k && p.c.rows == p.d.rows && p.c.cols == p.d.cols,
      CUBLAS_STATUS_INVALID_VALUE, "op(A) {}x{}, op(B), C and D {}x{} do not conform", p.m, p.k, p.m, p.n);
  MIXT_LT_REQUIRE(
      p.a.batch_count == p.d.batch_count && p.b.batch_count == p.d.batch_count && p.c.batch_count == p.d.batch_count,
      CUBLAS_STATUS_INVALID_VALUE, "batch counts differ");
  Accumulate acc;
  cudaDataType scale;
  MIXT_LT_REQUIRE(compute_mode(s.compute_type, &acc, &scale) && s.scale_type == scale, CUBLAS_STATUS_NOT_SUPPORTED,
                  "compute type {} with scale type {} is not emulated", s.compute_type, s.scale_type);
  MIXT_LT_REQUIRE(s.pointer_mode == CUBLASLT_POINTER_MODE_HOST || s.pointer_mode == CUBLASLT_POINTER_MODE_DEVICE,
                  CUBLAS_STATUS_NOT_SUPPORTED, "vector pointer modes are not emulated");
  if (is_fp8(p.ta) || is_fp8(p.tb)) {
    if (Verdict v = check_fp8(p); !v) return v;
  } else {
    MIXT_LT_REQUIRE(p.ta == p.tb && p.tc == p.td && plain_types_supported(acc, p.ta, p.td), CUBLAS_STATUS_NOT_SUPPORTED,
                    "A {} / B {} / C {} / D {} is not in the type table for compute type {}", int(p.ta), int(p.tb),
                    int(p.tc), int(p.td), s.compute_type);
    MIXT_LT_REQUIRE(s.bias_type == -1 || s.bias_type == p.td, CUBLAS_STATUS_NOT_SUPPORTED, "bias type must be D's");
  }
  if (Verdict v = check_scales(p); !v) return v;
  const uint32_t e = s.epilogue;
  MIXT_LT_REQUIRE(e == CUBLASLT_EPILOGUE_DEFAULT || e == CUBLASLT_EPILOGUE_RELU || e == CUBLASLT_EPILOGUE_GELU ||
                      e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_DGELU || uses_bias_input(e) ||
                      writes_bias(e),
                  e == CUBLASLT_EPILOGUE_RELU_AUX || e == CUBLASLT_EPILOGUE_RELU_AUX_BIAS ||
                          e == CUBLASLT_EPILOGUE_DRELU || e == CUBLASLT_EPILOGUE_DRELU_BGRAD
                      ? CUBLAS_STATUS_NOT_SUPPORTED
                      : CUBLAS_STATUS_INVALID_VALUE,
                  "epilogue {} is unknown or not emulated (ReLU bit-mask forms)", e);
  if (uses_aux(e)) {
    MIXT_LT_REQUIRE(s.aux_ld >= p.m && s.aux_ld % 8 == 0 && (p.batch == 1 || s.aux_batch_stride % 8 == 0),
                    CUBLAS_STATUS_INVALID_VALUE, "GELU aux ld {} must be >= rows of D ({}) and divisible by 8",
                    s.aux_ld, p.m);
    const bool fp8_aux = p.td == CUDA_R_8F_E4M3 && e == CUBLASLT_EPILOGUE_GELU_AUX &&
                         ((p.tc == CUDA_R_16F && (p.aux_type == CUDA_R_16F || p.aux_type == CUDA_R_8F_E4M3)) ||
                          (p.tc == CUDA_R_16BF && p.aux_type == CUDA_R_16BF));
    MIXT_LT_REQUIRE(p.aux_type == p.td || fp8_aux, CUBLAS_STATUS_INVALID_VALUE, "aux type {} is not allowed",
                    int(p.aux_type));
    MIXT_LT_REQUIRE(!run || s.aux, CUBLAS_STATUS_INVALID_VALUE, "epilogue {} needs EPILOGUE_AUX_POINTER", e);
  }
  if (uses_bias_input(e) || writes_bias(e))
    MIXT_LT_REQUIRE(!run || s.bias, CUBLAS_STATUS_INVALID_VALUE, "epilogue {} needs BIAS_POINTER", e);
  return {};
}

Verdict algo_fits(const Problem& p, const AlgoInfo& algo, const uint64_t align[4]) {
  const LayoutState* l[4] = {&p.a, &p.b, &p.c, &p.d};
  const char* names = "ABCD";
  for (int i = 0; i < 4; ++i) {
    const uint64_t es = element_size(static_cast<cudaDataType>(l[i]->type));
    uint64_t have = std::min(align[i] ? align[i] : 1, low_bit(static_cast<uint64_t>(l[i]->ld) * es));
    if (p.batch > 1) have = std::min(have, low_bit(static_cast<uint64_t>(l[i]->batch_stride) * es));
    const uint64_t need = std::max<uint64_t>(algo.align, es);
    MIXT_LT_REQUIRE(have >= need, CUBLAS_STATUS_NOT_SUPPORTED, "{} keeps {}-byte alignment, algo {} needs {}", names[i],
                    have, algo.id, need);
  }
  const uint32_t e = p.desc.epilogue;
  if (uses_bias_input(e) || writes_bias(e)) {
    const uint64_t need = std::max<uint64_t>(algo.align, element_size(p.bias_type));
    MIXT_LT_REQUIRE(low_bit(reinterpret_cast<uintptr_t>(p.desc.bias)) >= need, CUBLAS_STATUS_NOT_SUPPORTED,
                    "bias pointer alignment < {}", need);
  }
  if (uses_aux(e)) {
    const uint64_t es = element_size(p.aux_type), need = std::max<uint64_t>(algo.align, es);
    MIXT_LT_REQUIRE(low_bit(reinterpret_cast<uintptr_t>(p.desc.aux)) >= need &&
                        low_bit(static_cast<uint64_t>(p.desc.aux_ld) * es) >= need,
                    CUBLAS_STATUS_NOT_SUPPORTED, "aux pointer or ld alignment < {}", need);
  }
  if (algo.id == kScalar) MIXT_LT_REQUIRE(!is_fp8(p.ta), CUBLAS_STATUS_NOT_SUPPORTED, "fp8 has no scalar kernel");
  if (algo.id == kSplitKInplace) {
    const bool plain = p.desc.epilogue == CUBLASLT_EPILOGUE_DEFAULT && !is_fp8(p.ta) && !p.desc.c_scale;
    MIXT_LT_REQUIRE(plain && (p.td == CUDA_R_16F || p.td == CUDA_R_16BF) && p.desc.compute_type == CUBLAS_COMPUTE_32F &&
                        p.k >= kSplitKMinK,
                    CUBLAS_STATUS_NOT_SUPPORTED, "split-K INPLACE does not apply");
  }
  return {};
}

bool snapshot(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
              cublasLtMatrixLayout_t d, Problem* p) {
  const DescState* s = desc_state(desc);
  const LayoutState *la = layout_state(a), *lb = layout_state(b), *lc = c ? layout_state(c) : layout_state(d),
                    *ld = layout_state(d);
  if (!s || !la || !lb || !lc || !ld) return false;
  *p = Problem{*s, *la, *lb, *lc, *ld};
  p->m = static_cast<int64_t>(ld->rows);
  p->n = static_cast<int64_t>(ld->cols);
  p->k = static_cast<int64_t>(s->trans_a != CUBLAS_OP_N ? la->rows : la->cols);
  p->batch = ld->batch_count;
  p->ta = static_cast<cudaDataType>(la->type), p->tb = static_cast<cudaDataType>(lb->type);
  p->tc = static_cast<cudaDataType>(lc->type), p->td = static_cast<cudaDataType>(ld->type);
  p->bias_type = s->bias_type >= 0 ? static_cast<cudaDataType>(s->bias_type)
                 : is_fp8(p->ta)   ? (p->tc == CUDA_R_32F ? CUDA_R_16BF : p->tc)
                                   : p->td;
  p->aux_type = s->aux_type >= 0 ? static_cast<cudaDataType>(s->aux_type) : p->td;
  return true;
}

void log_refusal(const char* call, const Verdict& v) {
  static const int level = [] {
    const char* e = std::getenv("CUBLASLT_LOG_LEVEL");
    return e ? std::atoi(e) : 0;
  }();
  if (level >= 1 && !v)
    std::fprintf(stderr, "[emulated cuBLASLt] %s: %s: %s\n", call, status_name(v.status), v.why.c_str());
}

}  // namespace mixt::cuda::emulated::lt
