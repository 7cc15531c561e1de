// The emulated cuBLASLt's matmul calls (-Dcuda=emulated): cublasLtMatmulAlgoGetHeuristic,
// cublasLtMatmulAlgoCheck and cublasLtMatmul, on top of the rules in cublaslt_rules.cpp and
// the arithmetic in gemm_reference.cpp.
//
// Note [Emulated cuBLASLt]: every rule and every formula comes from NVIDIA's documentation
// (docs.nvidia.com/cuda/cublas: "cublasLtMatmul()", "Narrow Precision Data Types Usage",
// "cublasLtEpilogue_t", "cublasLtMatmulDescAttributes_t", "cublasLtMatmulPreferenceAttributes_t",
// "cublasLtReductionScheme_t"), never from mixt's GEMM engine, so a mapping error in the
// engine (a wrong op, ld, scale, alignment or reduction mask) shows up against the CPU
// reference. Where the documentation is silent the plainest reading is taken and said so
// next to the rule. The heuristic offers three algorithms, fastest first: split-K with an
// INPLACE reduction (partial sums added in D's own type; only when the preference's reduction
// mask admits INPLACE, its workspace holds the counters, D is 16F/16BF and k >= 256), a
// vectorised one needing 16-byte alignment, and a scalar one needing element alignment (not
// for fp8). The heuristic judges alignment from the preference's MIN_ALIGNMENT_* values and
// the leading dimensions and batch strides; the work checks the real pointers again and
// faults (cudaErrorMisalignedAddress) where a GPU kernel would. FAST_ACCUM changes nothing
// numerically: the emulator always accumulates fp8 products in float.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include <mixt/kernels/cuda/emulated/access_checks.h>
#include <mixt/kernels/cuda/emulated/cublaslt_state.h>
#include <mixt/kernels/cuda/emulated/emulator.h>
#include <mixt/kernels/cuda/emulated/gemm_reference.h>

#include <mixt/runtime/float_types.h>

namespace mixt::cuda::emulated::lt {
namespace {

constexpr uint64_t kAnyAlignment = uint64_t{1} << 62;

// A host-side scalar of the scale type.
double read_scalar(cudaDataType t, const void* p) {
  if (t == CUDA_R_16F) {
    uint16_t bits;
    std::memcpy(&bits, p, 2);
    return static_cast<float>(Half::from_bits(bits));
  }
  return load_element(t, p, 0);
}

// What cublasLtMatmul hands to the stream: the snapshot, the chosen algorithm and the pointers.
struct MatmulWork {
  Problem p;
  AlgoInfo algo;
  const void *a = nullptr, *b = nullptr, *c = nullptr;
  void* d = nullptr;
  void* workspace = nullptr;
  const void *alpha_ptr = nullptr, *beta_ptr = nullptr;  // device pointer mode
  double alpha = 0, beta = 0;                            // host pointer mode
  cudaDataType scale_type = CUDA_R_32F;
  Accumulate acc = Accumulate::F32;

  // False (after recording the fault) unless [ptr, ptr + bytes) is device memory.
  static bool reachable(const void* ptr, uint64_t bytes, const char* what) {
    if (bytes == 0 || device_accessible(ptr, bytes)) return true;
    record_fault(cudaErrorIllegalAddress,
                 fmt::format("cublasLtMatmul: {} [{}, +{} bytes) is not device memory", what, ptr, bytes));
    return false;
  }

  // False (after recording the fault) when `ptr` breaks the algorithm's alignment.
  bool aligned(const void* ptr, cudaDataType t, const char* what) const {
    const uint64_t need = std::max<uint64_t>(algo.align, element_size(t));
    if (reinterpret_cast<uintptr_t>(ptr) % need == 0) return true;
    record_fault(cudaErrorMisalignedAddress, fmt::format("cublasLtMatmul: {} pointer {} is not aligned to the {} bytes "
                                                         "the chosen algorithm needs",
                                                         what, ptr, need));
    return false;
  }

  // The stream-ordered part: checks every pointer the kernel would touch, then computes.
  void operator()() const {
    const DescState& s = p.desc;
    const bool outer = s.a_scale_mode == CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    const uint64_t ss = element_size(scale_type);
    if (alpha_ptr && !(reachable(alpha_ptr, ss, "alpha") && reachable(beta_ptr, ss, "beta"))) return;
    const double al = alpha_ptr ? read_scalar(scale_type, alpha_ptr) : alpha;
    const double be = beta_ptr ? read_scalar(scale_type, beta_ptr) : beta;
    auto bytes = [&](const LayoutState& l) {
      return static_cast<uint64_t>(extent_elements(static_cast<int64_t>(l.rows), static_cast<int64_t>(l.cols), l.ld,
                                                   p.batch, l.batch_stride)) *
             element_size(static_cast<cudaDataType>(l.type));
    };
    const bool reads_c = be != 0;
    const uint32_t e = s.epilogue;
    const uint64_t bias_bytes =
        (uses_bias_input(e) || writes_bias(e))
            ? static_cast<uint64_t>((p.batch - 1) * s.bias_batch_stride + bias_length(p)) * element_size(p.bias_type)
            : 0;
    const uint64_t aux_bytes =
        uses_aux(e) ? static_cast<uint64_t>(extent_elements(p.m, p.n, s.aux_ld, p.batch, s.aux_batch_stride)) *
                          element_size(p.aux_type)
                    : 0;
    const bool ok =
        reachable(a, bytes(p.a), "A") && reachable(b, bytes(p.b), "B") && (!reads_c || reachable(c, bytes(p.c), "C")) &&
        reachable(d, bytes(p.d), "D") && reachable(s.bias, bias_bytes, "the bias vector") &&
        reachable(s.aux, aux_bytes, "the GELU aux matrix") &&
        (!s.a_scale || reachable(s.a_scale, outer ? 4 * p.m : 4, "the A scale")) &&
        (!s.b_scale || reachable(s.b_scale, outer ? 4 * p.n : 4, "the B scale")) &&
        (!s.c_scale || reachable(s.c_scale, 4, "the C scale")) &&
        (!s.d_scale || reachable(s.d_scale, 4, "the D scale")) && (!s.amax_d || reachable(s.amax_d, 4, "AMAX_D")) &&
        reachable(workspace, algo.workspace, "the workspace") && aligned(a, p.ta, "A") && aligned(b, p.tb, "B") &&
        (!reads_c || aligned(c, p.tc, "C")) && aligned(d, p.td, "D");
    if (!ok) return;
    GemmProblem g;
    g.trans_a = s.trans_a != CUBLAS_OP_N, g.trans_b = s.trans_b != CUBLAS_OP_N;
    g.m = p.m, g.n = p.n, g.k = p.k, g.batch = p.batch;
    auto view = [](const LayoutState& l, const void* ptr) {
      return MatrixView{const_cast<void*>(ptr),
                        static_cast<cudaDataType>(l.type),
                        static_cast<int64_t>(l.rows),
                        static_cast<int64_t>(l.cols),
                        l.ld,
                        l.batch_stride};
    };
    g.a = view(p.a, a), g.b = view(p.b, b), g.c = view(p.c, reads_c ? c : nullptr), g.d = view(p.d, d);
    g.acc = acc, g.alpha = al, g.beta = be;
    auto scalar = [](const void* ptr) { return ptr ? *static_cast<const float*>(ptr) : 1.0f; };
    if (outer) {
      g.row_scale_a = static_cast<const float*>(s.a_scale), g.col_scale_b = static_cast<const float*>(s.b_scale);
    } else {
      g.scale_a = scalar(s.a_scale), g.scale_b = scalar(s.b_scale);
    }
    g.scale_c = scalar(s.c_scale), g.scale_d = scalar(s.d_scale);
    g.amax_d = static_cast<float*>(s.amax_d);
    using Act = EpilogueSteps::Act;
    using Grad = EpilogueSteps::BiasGrad;
    g.epi.add_bias = uses_bias_input(e);
    g.epi.store_aux = e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    g.epi.act = (e & CUBLASLT_EPILOGUE_RELU)                                           ? Act::Relu
                : (e & CUBLASLT_EPILOGUE_GELU)                                         ? Act::Gelu
                : (e == CUBLASLT_EPILOGUE_DGELU || e == CUBLASLT_EPILOGUE_DGELU_BGRAD) ? Act::DGelu
                                                                                       : Act::None;
    g.epi.bgrad = e == CUBLASLT_EPILOGUE_BGRADA        ? Grad::FromA
                  : e == CUBLASLT_EPILOGUE_BGRADB      ? Grad::FromB
                  : e == CUBLASLT_EPILOGUE_DGELU_BGRAD ? Grad::FromOutput
                                                       : Grad::None;
    g.bias = const_cast<void*>(s.bias), g.bias_type = p.bias_type, g.bias_stride = s.bias_batch_stride;
    g.aux = const_cast<void*>(s.aux), g.aux_type = p.aux_type, g.aux_ld = s.aux_ld, g.aux_stride = s.aux_batch_stride;
    g.split_k_in_output_type = algo.reduction == CUBLASLT_REDUCTION_SCHEME_INPLACE && algo.split_k > 1;
    run_gemm(g);
    // What the call wrote counts as initialised for the kernels' initcheck (the extents,
    // leading-dimension gaps included).
    note_written(d, bytes(p.d));
    if (g.epi.store_aux) note_written(s.aux, aux_bytes);
    if (writes_bias(e)) note_written(s.bias, bias_bytes);
    if (s.amax_d) note_written(s.amax_d, 4);
  }
};

}  // namespace
}  // namespace mixt::cuda::emulated::lt

namespace lt = mixt::cuda::emulated::lt;

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
                                              cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t preference, int requestedAlgoCount,
                                              cublasLtMatmulHeuristicResult_t heuristicResultsArray[],
                                              int* returnAlgoCount) {
  if (!lightHandle) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requestedAlgoCount <= 0 || !heuristicResultsArray || !returnAlgoCount) return CUBLAS_STATUS_INVALID_VALUE;
  *returnAlgoCount = 0;
  lt::Problem p;
  const lt::PrefState* pref = lt::pref_state(preference);
  if (!pref || !lt::snapshot(operationDesc, Adesc, Bdesc, Cdesc, Ddesc, &p)) return CUBLAS_STATUS_INVALID_VALUE;
  if (lt::Verdict v = lt::validate(p, false); !v) {
    lt::log_refusal("cublasLtMatmulAlgoGetHeuristic", v);
    return v.status;
  }
  const uint64_t align[4] = {pref->align_a, pref->align_b, pref->align_c, pref->align_d};
  lt::Verdict last{CUBLAS_STATUS_NOT_SUPPORTED, "no algorithm fits the preference's workspace and reduction mask"};
  int count = 0;
  for (const lt::AlgoInfo& algo : lt::kAlgos) {
    if (algo.workspace > pref->max_workspace) continue;  // "MAX_WORKSPACE_BYTES ... default 0"
    if (algo.reduction != CUBLASLT_REDUCTION_SCHEME_NONE && !(pref->reduction_mask & algo.reduction)) continue;
    if (lt::Verdict f = lt::algo_fits(p, algo, align); !f) {
      last = f;
      continue;
    }
    cublasLtMatmulHeuristicResult_t& r = heuristicResultsArray[count];
    r = cublasLtMatmulHeuristicResult_t{};
    r.algo = lt::encode_algo(algo);
    r.workspaceSize = algo.workspace;
    r.state = CUBLAS_STATUS_SUCCESS;
    r.wavesCount = 1.0f;
    if (++count == requestedAlgoCount) break;
  }
  *returnAlgoCount = count;
  if (count > 0) return CUBLAS_STATUS_SUCCESS;
  lt::log_refusal("cublasLtMatmulAlgoGetHeuristic", last);
  return CUBLAS_STATUS_NOT_SUPPORTED;
}

cublasStatus_t cublasLtMatmulAlgoCheck(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t operationDesc,
                                       cublasLtMatrixLayout_t Adesc, cublasLtMatrixLayout_t Bdesc,
                                       cublasLtMatrixLayout_t Cdesc, cublasLtMatrixLayout_t Ddesc,
                                       const cublasLtMatmulAlgo_t* algo, cublasLtMatmulHeuristicResult_t* result) {
  if (!lightHandle) return CUBLAS_STATUS_NOT_INITIALIZED;
  lt::Problem p;
  lt::AlgoInfo info;
  if (!algo || !result || !lt::snapshot(operationDesc, Adesc, Bdesc, Cdesc, Ddesc, &p))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (lt::Verdict v = lt::validate(p, false); !v) return v.status;
  if (!lt::decode_algo(*algo, &info)) return CUBLAS_STATUS_INVALID_VALUE;  // "don't match algo descriptor"
  const uint64_t any[4] = {lt::kAnyAlignment, lt::kAnyAlignment, lt::kAnyAlignment, lt::kAnyAlignment};
  if (lt::Verdict f = lt::algo_fits(p, info, any); !f) {
    lt::log_refusal("cublasLtMatmulAlgoCheck", f);
    return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  result->workspaceSize = info.workspace;  // "algo field is never updated"
  result->state = CUBLAS_STATUS_SUCCESS;
  result->wavesCount = 1.0f;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t Adesc, const void* B, cublasLtMatrixLayout_t Bdesc,
                              const void* beta, const void* C, cublasLtMatrixLayout_t Cdesc, void* D,
                              cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspaceSizeInBytes, cudaStream_t stream) {
  namespace emu = mixt::cuda::emulated;
  if (!lightHandle) return CUBLAS_STATUS_NOT_INITIALIZED;
  lt::MatmulWork w;
  if (!alpha || !beta || !lt::snapshot(computeDesc, Adesc, Bdesc, Cdesc, Ddesc, &w.p))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (lt::Verdict v = lt::validate(w.p, true); !v) {
    lt::log_refusal("cublasLtMatmul", v);
    return v.status;
  }
  // "If the parameters are unexpectedly NULL" (cublasLtMatmul(), Returns): INVALID_VALUE.
  const bool beta_used = w.p.desc.pointer_mode == CUBLASLT_POINTER_MODE_HOST &&
                         lt::read_scalar(static_cast<cudaDataType>(w.p.desc.scale_type), beta) != 0;
  if ((w.p.k > 0 && w.p.m * w.p.n > 0 && (!A || !B)) || (w.p.m * w.p.n > 0 && !D) || (beta_used && !C))
    return CUBLAS_STATUS_INVALID_VALUE;
  // In place means C == D with Cdesc == Ddesc ("cublasLtMatmul()", note on in-place operation).
  if (C && C == D && (w.p.c.ld != w.p.d.ld || w.p.c.batch_stride != w.p.d.batch_stride || w.p.tc != w.p.td))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (algo) {
    const uint64_t any[4] = {lt::kAnyAlignment, lt::kAnyAlignment, lt::kAnyAlignment, lt::kAnyAlignment};
    if (!lt::decode_algo(*algo, &w.algo) || !lt::algo_fits(w.p, w.algo, any)) return CUBLAS_STATUS_INVALID_VALUE;
  } else {
    // "When NULL, an implicit heuristics query with default search preferences": 256-byte
    // alignment assumed, no workspace.
    const uint64_t dflt[4] = {256, 256, 256, 256};
    bool found = false;
    for (const lt::AlgoInfo& a : lt::kAlgos)
      if (!found && a.workspace == 0 && lt::algo_fits(w.p, a, dflt)) w.algo = a, found = true;
    if (!found) return CUBLAS_STATUS_NOT_SUPPORTED;
  }
  // "workspaceSizeInBytes is less than workspace required by the configured algo"; "Must be 256B aligned".
  if (workspaceSizeInBytes < w.algo.workspace) return CUBLAS_STATUS_INVALID_VALUE;
  if (w.algo.workspace && reinterpret_cast<uintptr_t>(workspace) % 256 != 0) return CUBLAS_STATUS_INVALID_VALUE;
  cudaDataType scale_type;
  lt::compute_mode(w.p.desc.compute_type, &w.acc, &scale_type);
  w.scale_type = scale_type;
  if (w.p.desc.pointer_mode == CUBLASLT_POINTER_MODE_DEVICE) {
    w.alpha_ptr = alpha, w.beta_ptr = beta;
  } else {
    w.alpha = lt::read_scalar(scale_type, alpha), w.beta = lt::read_scalar(scale_type, beta);
  }
  w.a = A, w.b = B, w.c = C, w.d = D, w.workspace = workspace;
  return emu::enqueue(stream, "cublasLtMatmul", w) == cudaSuccess ? CUBLAS_STATUS_SUCCESS
                                                                  : CUBLAS_STATUS_EXECUTION_FAILED;
}
