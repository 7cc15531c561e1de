// The GEMM engine (Note [GEMM plan cache] in docs/gemm.md): a thread-safe cache from
// (device, selection mode, GemmKey) to a plan (cuBLASLt matmul descriptor, four matrix
// layouts, the preference, the chosen algorithm). A call looks its plan up under a shared
// lock; only a key's first call builds one (descriptors, heuristic query, maybe a timed
// autotune), so the hot path creates no descriptors. The per-call pointers (bias, aux,
// scales, amax) are descriptor attributes: they are set and the matmul queued under the
// plan's own mutex, so threads sharing a plan never see each other's pointers.
#include <mixt/kernels/cuda/gemm/engine.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include <mixt/kernels/common/gemm_tuning.h>
#include <mixt/kernels/cuda/gemm/handles.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/determinism.h>
#include <mixt/runtime/float_types.h>
#include <mixt/runtime/gemm_settings.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cuda::gemm {
namespace {

using mixt::gemm::ComputeType;
using mixt::gemm::Epilogue;
using mixt::gemm::GemmKeyHash;
using mixt::gemm::ScaleMode;
using mixt::gemm::TunedAlgo;

// Candidates an autotune times, and how often each runs (after one warm-up call).
constexpr int kTuneCandidates = 8;
constexpr int kTuneRuns = 5;

static_assert(sizeof(cublasLtMatmulAlgo_t) == sizeof(TunedAlgo::algo), "the tuning file stores the 64-byte algo");

cudaDataType_t cuda_type(ScalarType t) {
  switch (t) {
    case ScalarType::Float32: return CUDA_R_32F;
    case ScalarType::Float64: return CUDA_R_64F;
    case ScalarType::Float16: return CUDA_R_16F;
    case ScalarType::BFloat16: return CUDA_R_16BF;
    case ScalarType::Float8_e4m3fn: return CUDA_R_8F_E4M3;
    case ScalarType::Float8_e5m2: return CUDA_R_8F_E5M2;
    default: MIXT_FAIL("gemm", "dtype {} has no cuBLAS type", t);
  }
}

cublasComputeType_t compute_type(ComputeType c) {
  switch (c) {
    case ComputeType::F32: return CUBLAS_COMPUTE_32F;
    case ComputeType::F32FastTF32: return CUBLAS_COMPUTE_32F_FAST_TF32;
    case ComputeType::F64: return CUBLAS_COMPUTE_64F;
    case ComputeType::F16: return CUBLAS_COMPUTE_16F;
  }
  return CUBLAS_COMPUTE_32F;
}

cudaDataType_t scale_type(ComputeType c) {
  return c == ComputeType::F64 ? CUDA_R_64F : c == ComputeType::F16 ? CUDA_R_16F : CUDA_R_32F;
}

cublasLtEpilogue_t lt_epilogue(Epilogue e) {
  switch (e) {
    case Epilogue::None: return CUBLASLT_EPILOGUE_DEFAULT;
    case Epilogue::Bias: return CUBLASLT_EPILOGUE_BIAS;
    case Epilogue::Relu: return CUBLASLT_EPILOGUE_RELU;
    case Epilogue::ReluBias: return CUBLASLT_EPILOGUE_RELU_BIAS;
    case Epilogue::Gelu: return CUBLASLT_EPILOGUE_GELU;
    case Epilogue::GeluBias: return CUBLASLT_EPILOGUE_GELU_BIAS;
    case Epilogue::GeluAux: return CUBLASLT_EPILOGUE_GELU_AUX;
    case Epilogue::GeluAuxBias: return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    case Epilogue::DGelu: return CUBLASLT_EPILOGUE_DGELU;
    case Epilogue::DGeluBGrad: return CUBLASLT_EPILOGUE_DGELU_BGRAD;
    case Epilogue::BGradA: return CUBLASLT_EPILOGUE_BGRADA;
    case Epilogue::BGradB: return CUBLASLT_EPILOGUE_BGRADB;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

// Alpha and beta in the scale type.
struct Scalars {
  float f[2];
  double d[2];
  Half h[2];
  const void* alpha = nullptr;
  const void* beta = nullptr;
  Scalars(ComputeType c, double alpha_v, double beta_v) {
    f[0] = static_cast<float>(alpha_v);
    f[1] = static_cast<float>(beta_v);
    d[0] = alpha_v;
    d[1] = beta_v;
    h[0] = Half(static_cast<float>(alpha_v));
    h[1] = Half(static_cast<float>(beta_v));
    const cudaDataType_t t = scale_type(c);
    alpha = t == CUDA_R_64F ? static_cast<const void*>(&d[0]) : t == CUDA_R_16F ? &h[0] : static_cast<const void*>(&f[0]);
    beta = t == CUDA_R_64F ? static_cast<const void*>(&d[1]) : t == CUDA_R_16F ? &h[1] : static_cast<const void*>(&f[1]);
  }
};

template <class T>
void set_desc(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr, const T& v, const char* what) {
  check_blas(cublasLtMatmulDescSetAttribute(desc, attr, &v, sizeof v), "gemm", what);
}

struct Plan {
  GemmKey key;
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layout[4] = {};  // A, B, C, D
  cublasLtMatmulPreference_t pref = nullptr;
  cublasLtMatmulAlgo_t algo{};
  size_t workspace = 0;
  PlanSource source = PlanSource::Heuristic;
  std::vector<cublasLtMatmulHeuristicResult_t> candidates;  // kept until the autotune has run
  bool needs_tuning = false;
  bool unsupported = false;  // neither cuBLASLt nor cuBLAS has an algorithm (cached, so asked once)
  cublasStatus_t heuristic_status = CUBLAS_STATUS_SUCCESS;
  std::mutex mu;  // per-call descriptor attributes + the launch; the autotune

  Plan() = default;
  Plan(const Plan&) = delete;
  Plan& operator=(const Plan&) = delete;
  ~Plan() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    for (cublasLtMatrixLayout_t l : layout)
      if (l) cublasLtMatrixLayoutDestroy(l);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

// Selection modes kept apart in the cache: a plan made while deterministic never autotunes
// or takes a loaded algorithm; one made under Heuristic never autotunes.
enum class Mode : uint8_t { Deterministic, Heuristic, Autotune };

struct PlanKey {
  GemmKey key;
  int device = 0;
  Mode mode = Mode::Heuristic;
  bool operator==(const PlanKey&) const = default;
};
struct PlanKeyHash {
  size_t operator()(const PlanKey& k) const noexcept {
    return GemmKeyHash{}(k.key) * 31 + static_cast<size_t>(k.device) * 7 + static_cast<size_t>(k.mode);
  }
};

struct Cache {
  std::shared_mutex mu;
  std::unordered_map<PlanKey, std::shared_ptr<Plan>, PlanKeyHash> plans;
  // Counts the drops (clear_plan_cache, load_tuning): a plan whose build spans one may hold an
  // algorithm chosen before it, so it serves its call but is not cached.
  uint64_t epoch = 0;
};
Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: GEMMs may run during static destruction
  return *c;
}

Mode current_mode() {
  if (is_deterministic()) return Mode::Deterministic;
  return mixt::gemm::algo_selection() == mixt::gemm::AlgoSelection::Autotune ? Mode::Autotune : Mode::Heuristic;
}

cublasLtMatrixLayout_t make_layout(ScalarType dt, int64_t rows, int64_t cols, int64_t ld, int64_t batch,
                                   int64_t stride) {
  cublasLtMatrixLayout_t l = nullptr;
  check_blas(cublasLtMatrixLayoutCreate(&l, cuda_type(dt), static_cast<uint64_t>(rows), static_cast<uint64_t>(cols), ld),
             "gemm", "cublasLtMatrixLayoutCreate");
  if (batch > 1) {
    const int32_t count = static_cast<int32_t>(batch);
    check_blas(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count), "gemm",
               "CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT");
    check_blas(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, sizeof stride),
               "gemm", "CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET");
  }
  return l;
}

bool cublas_can_run(const GemmKey& k) {
  return k.epilogue == Epilogue::None && k.scale_mode == ScaleMode::None && k.a != kFloat8_e4m3fn &&
         k.a != kFloat8_e5m2 && k.c == k.d && k.ldc == k.ldd && k.stride_c == k.stride_d;
}

void set_pointers(Plan& p, const GemmCall& c, const char* op);

// Builds the plan of `pk` (descriptors, preference, algorithm choice) on the current device.
// `call` (when given) provides the epilogue's pointers before the heuristic runs: cuBLASLt
// reads their alignment from them.
// True when `algo` splits k and adds the partial sums up other than in the compute type
// (INPLACE in D, OUTPUT_TYPE): what the reduction-scheme mask keeps from narrow results.
// An algorithm whose configuration cannot be read counts as such (it is not taken).
bool reduces_outside_compute_type(const cublasLtMatmulAlgo_t& algo) {
  int32_t splits = 1;
  uint32_t scheme = CUBLASLT_REDUCTION_SCHEME_NONE;
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits, sizeof splits, &written) !=
          CUBLAS_STATUS_SUCCESS ||
      cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &scheme, sizeof scheme,
                                           &written) != CUBLAS_STATUS_SUCCESS)
    return true;
  return splits > 1 && (scheme & ~static_cast<uint32_t>(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE)) != 0;
}

std::shared_ptr<Plan> build_plan(const PlanKey& pk, const GemmCall* call, const char* op) {
  const GemmKey& k = pk.key;
  auto p = std::make_shared<Plan>();
  p->key = k;
  check_blas(cublasLtMatmulDescCreate(&p->desc, compute_type(k.compute), scale_type(k.compute)), op,
             "cublasLtMatmulDescCreate");
  const int32_t ta = k.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, tb = k.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
  set_desc(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, ta, "CUBLASLT_MATMUL_DESC_TRANSA");
  set_desc(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, tb, "CUBLASLT_MATMUL_DESC_TRANSB");
  const uint32_t epi = lt_epilogue(k.epilogue);
  set_desc(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, epi, "CUBLASLT_MATMUL_DESC_EPILOGUE");
  if (k.bias != ScalarType::Undefined) {
    const int32_t bt = cuda_type(k.bias);
    set_desc(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, bt, "CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE");
  }
  if (k.scale_mode == ScaleMode::Rowwise) {
    const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
    set_desc(p->desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, mode, "CUBLASLT_MATMUL_DESC_A_SCALE_MODE");
    set_desc(p->desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, mode, "CUBLASLT_MATMUL_DESC_B_SCALE_MODE");
  }
  if (k.scale_mode != ScaleMode::None) {
    const int8_t fast = k.fast_accum ? 1 : 0;
    set_desc(p->desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, fast, "CUBLASLT_MATMUL_DESC_FAST_ACCUM");
  }
  p->layout[0] = make_layout(k.a, k.trans_a ? k.k : k.m, k.trans_a ? k.m : k.k, k.lda, k.batch, k.stride_a);
  p->layout[1] = make_layout(k.b, k.trans_b ? k.n : k.k, k.trans_b ? k.k : k.n, k.ldb, k.batch, k.stride_b);
  p->layout[2] = make_layout(k.c, k.m, k.n, k.ldc, k.batch, k.stride_c);
  p->layout[3] = make_layout(k.d, k.m, k.n, k.ldd, k.batch, k.stride_d);
  check_blas(cublasLtMatmulPreferenceCreate(&p->pref), op, "cublasLtMatmulPreferenceCreate");
  const uint64_t ws = mixt::gemm::kWorkspaceBytes;
  check_blas(cublasLtMatmulPreferenceSetAttribute(p->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws),
             op, "CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES");
  // The operands' real alignment: the default (256) would admit algorithms that fault on offset views.
  const cublasLtMatmulPreferenceAttributes_t align_attr[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  const uint32_t aligns[4] = {k.align_a, k.align_b, k.align_c, k.align_d};
  for (int i = 0; i < 4; ++i)
    check_blas(cublasLtMatmulPreferenceSetAttribute(p->pref, align_attr[i], &aligns[i], sizeof aligns[i]), op,
               "CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT");
  // Results narrower than float32: split-K partial sums stay in the compute type, float32 (the CPU
  // reference's arithmetic). INPLACE adds them up in D itself and OUTPUT_TYPE in D's type, so both are
  // left out; algorithms without a split-K reduction (NONE) are always allowed.
  const bool narrow_d = k.d == kFloat16 || k.d == kBFloat16 || k.d == kFloat8_e4m3fn || k.d == kFloat8_e5m2;
  if (narrow_d) {
    const uint32_t mask = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    check_blas(cublasLtMatmulPreferenceSetAttribute(p->pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &mask,
                                                    sizeof mask),
               op, "CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK");
  }
  if (call) set_pointers(*p, *call, op);
  cublasLtHandle_t lt = lt_handle(pk.device);
  // A tuned (autotuned earlier or loaded) algorithm, when cuBLASLt still accepts it.
  if (pk.mode != Mode::Deterministic) {
    if (const auto tuned = mixt::gemm::find_tuned(k)) {
      cublasLtMatmulAlgo_t algo;
      std::memcpy(&algo, tuned->algo.data(), sizeof algo);
      cublasLtMatmulHeuristicResult_t check{};
      // cublasLtMatmulAlgoCheck ignores the preference, so the reduction mask above is
      // applied to a loaded algorithm here: a tuning file cannot bring a split-K
      // reduction outside the compute type to a narrow result.
      if (cublasLtMatmulAlgoCheck(lt, p->desc, p->layout[0], p->layout[1], p->layout[2], p->layout[3], &algo,
                                  &check) == CUBLAS_STATUS_SUCCESS &&
          check.workspaceSize <= mixt::gemm::kWorkspaceBytes && !(narrow_d && reduces_outside_compute_type(algo))) {
        p->algo = algo;
        p->workspace = check.workspaceSize;
        p->source = PlanSource::Loaded;
        return p;
      }
    }
  }
  const int want = pk.mode == Mode::Autotune ? kTuneCandidates : 1;
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(want));
  int returned = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(lt, p->desc, p->layout[0], p->layout[1], p->layout[2],
                                                           p->layout[3], p->pref, want, results.data(), &returned);
  // Any failure (NOT_SUPPORTED, or INVALID_VALUE for a combination this cuBLASLt refuses) means no algorithm.
  p->heuristic_status = st;
  for (int i = 0; st == CUBLAS_STATUS_SUCCESS && i < returned; ++i)
    if (results[static_cast<size_t>(i)].state == CUBLAS_STATUS_SUCCESS &&
        results[static_cast<size_t>(i)].workspaceSize <= mixt::gemm::kWorkspaceBytes)
      p->candidates.push_back(results[static_cast<size_t>(i)]);
  if (p->candidates.empty()) {
    p->unsupported = !cublas_can_run(k);
    p->source = PlanSource::CublasFallback;
    return p;
  }
  p->algo = p->candidates[0].algo;
  p->workspace = p->candidates[0].workspaceSize;
  p->needs_tuning = pk.mode == Mode::Autotune && p->candidates.size() > 1;
  if (!p->needs_tuning) p->candidates.clear();
  return p;
}

// Queues the plan's matmul with `algo` (the plan's mutex held).
cublasStatus_t launch(Plan& p, const GemmCall& c, const cublasLtMatmulAlgo_t& algo, size_t ws_bytes, void* d,
                      int device, cudaStream_t stream) {
  const Scalars s(p.key.compute, c.alpha, c.beta);
  return cublasLtMatmul(lt_handle(device), p.desc, s.alpha, c.a, p.layout[0], c.b, p.layout[1], s.beta, c.c,
                        p.layout[2], d, p.layout[3], &algo, ws_bytes ? workspace(device, stream) : nullptr, ws_bytes,
                        stream);
}

// Sets the call's pointers on the plan's descriptor (the plan's mutex held).
void set_pointers(Plan& p, const GemmCall& c, const char* op) {
  const GemmKey& k = p.key;
  if (mixt::gemm::epilogue_reads_bias(k.epilogue) || mixt::gemm::epilogue_writes_bias(k.epilogue)) {
    MIXT_CHECK(c.bias, op, "the {} epilogue needs a bias pointer", mixt::gemm::describe(k));
    set_desc(p.desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, c.bias, "CUBLASLT_MATMUL_DESC_BIAS_POINTER");
  }
  if (mixt::gemm::epilogue_uses_aux(k.epilogue)) {
    MIXT_CHECK(c.aux && c.ld_aux >= k.m, op, "the aux epilogue needs an aux matrix with ld >= {}", k.m);
    set_desc(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, c.aux, "CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER");
    set_desc(p.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, c.ld_aux, "CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD");
  }
  if (k.scale_mode != ScaleMode::None) {
    MIXT_CHECK(c.scale_a && c.scale_b, op, "float8 GEMMs need both scale pointers");
    set_desc(p.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, c.scale_a, "CUBLASLT_MATMUL_DESC_A_SCALE_POINTER");
    set_desc(p.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, c.scale_b, "CUBLASLT_MATMUL_DESC_B_SCALE_POINTER");
    if (k.d == kFloat8_e4m3fn || k.d == kFloat8_e5m2) {
      // Null means 1; cuBLASLt supports amax only for float8 results.
      set_desc(p.desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, c.scale_d, "CUBLASLT_MATMUL_DESC_D_SCALE_POINTER");
      set_desc(p.desc, CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, c.amax_d, "CUBLASLT_MATMUL_DESC_AMAX_D_POINTER");
    }
  }
}

// Times the plan's candidates on the call's operands and keeps the fastest (the plan's mutex held).
void autotune(Plan& p, const GemmCall& c, int device, cudaStream_t stream, const char* op) {
  // An in-place C = D with beta != 0 would accumulate into D on every timed run: time into a scratch D.
  const GemmKey& k = p.key;
  Tensor scratch;
  void* d = c.d;
  if (c.beta != 0 && c.c == c.d) {
    const int64_t elems = (k.batch - 1) * k.stride_d + k.ldd * (k.n - 1) + k.m;
    scratch = make_empty({elems * element_size(k.d)}, kUInt8, Device::cuda(device));
    d = scratch.data_ptr();
  }
  cudaEvent_t start = nullptr, stop = nullptr;
  check(cudaEventCreate(&start), op);
  check(cudaEventCreate(&stop), op);
  float best = -1;
  size_t best_i = 0;
  for (size_t i = 0; i < p.candidates.size(); ++i) {
    const cublasLtMatmulHeuristicResult_t& r = p.candidates[i];
    if (launch(p, c, r.algo, r.workspaceSize, d, device, stream) != CUBLAS_STATUS_SUCCESS) continue;  // warm-up
    check(cudaEventRecord(start, stream), op);
    bool ok = true;
    for (int run = 0; run < kTuneRuns && ok; ++run)
      ok = launch(p, c, r.algo, r.workspaceSize, d, device, stream) == CUBLAS_STATUS_SUCCESS;
    check(cudaEventRecord(stop, stream), op);
    check(cudaEventSynchronize(stop), op);
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), op);
    if (ok && (best < 0 || ms < best)) {
      best = ms;
      best_i = i;
    }
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (best >= 0) {
    p.algo = p.candidates[best_i].algo;
    p.workspace = p.candidates[best_i].workspaceSize;
    p.source = PlanSource::Autotuned;
    TunedAlgo t;
    std::memcpy(t.algo.data(), &p.algo, sizeof p.algo);
    t.workspace = p.workspace;
    t.time_us = 1000.0 * best / kTuneRuns;
    mixt::gemm::record_tuned(k, t);
    mixt::gemm::count_autotuned();
  }
  if (scratch.defined()) record_stream(scratch, Stream::from_handle(Device::cuda(device), stream));
  p.candidates.clear();
  p.needs_tuning = false;
}

void run_cublas(const GemmCall& c, int device, cudaStream_t stream, const char* op) {
  const GemmKey& k = c.key;
  MIXT_CHECK(c.beta == 0 || c.c == c.d, op, "the cuBLAS fallback computes in place only (C = D): {}",
             mixt::gemm::describe(k));
  const Scalars s(k.compute, c.alpha, c.beta);
  cublasHandle_t h = blas_handle(device, stream);
  check_blas(cublasGemmStridedBatchedEx_64(h, k.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, k.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N,
                                           k.m, k.n, k.k, s.alpha, c.a, cuda_type(k.a), k.lda, k.stride_a, c.b,
                                           cuda_type(k.b), k.ldb, k.stride_b, s.beta, c.d, cuda_type(k.d), k.ldd,
                                           k.stride_d, k.batch, compute_type(k.compute), CUBLAS_GEMM_DEFAULT),
             op, "cublasGemmStridedBatchedEx");
}

std::shared_ptr<Plan> find_or_build(const PlanKey& pk, const GemmCall* call, const char* op) {
  Cache& cc = cache();
  uint64_t epoch = 0;
  {
    std::shared_lock<std::shared_mutex> lock(cc.mu);
    const auto it = cc.plans.find(pk);
    if (it != cc.plans.end()) {
      mixt::gemm::count_hit();
      return it->second;
    }
    epoch = cc.epoch;
  }
  std::shared_ptr<Plan> p = build_plan(pk, call, op);  // outside the lock: other keys proceed meanwhile
  std::unique_lock<std::shared_mutex> lock(cc.mu);
  if (cc.epoch != epoch) {  // plans were dropped meanwhile: p may predate that, so it serves this call only
    mixt::gemm::count_miss();
    return p;
  }
  const auto [it, inserted] = cc.plans.emplace(pk, p);
  if (inserted) mixt::gemm::count_miss();
  else mixt::gemm::count_hit();  // another thread built it first: use that one
  return it->second;
}

}  // namespace

void run(const GemmCall& call, int device, const char* op) {
  const std::string why = mixt::gemm::validate(call.key);
  MIXT_CHECK(why.empty(), op, "invalid GEMM ({}): {}", why, mixt::gemm::describe(call.key));
  DeviceGuard guard(device, op);
  const cudaStream_t stream = current_native_stream(device);
  const PlanKey pk{call.key, device, current_mode()};
  const std::shared_ptr<Plan> plan = find_or_build(pk, &call, op);
  MIXT_CHECK(!plan->unsupported, op,
             "cuBLASLt has no algorithm for this GEMM on {} (heuristic: {}; and cuBLAS cannot run it): {}",
             device_name(device), cublasGetStatusName(plan->heuristic_status), mixt::gemm::describe(call.key));
  if (plan->source == PlanSource::CublasFallback) {
    run_cublas(call, device, stream, op);
    return;
  }
  std::lock_guard<std::mutex> lock(plan->mu);
  set_pointers(*plan, call, op);
  if (plan->needs_tuning) {
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    check(cudaStreamIsCapturing(stream, &capture), op);
    if (capture == cudaStreamCaptureStatusNone) autotune(*plan, call, device, stream, op);  // never while capturing
  }
  check_blas(launch(*plan, call, plan->algo, plan->workspace, call.d, device, stream), op, "cublasLtMatmul");
}

bool has_algorithm(const GemmKey& key, int device, const char* op) {
  const std::string why = mixt::gemm::validate(key);
  if (!why.empty()) return false;
  DeviceGuard guard(device, op);
  return !find_or_build(PlanKey{key, device, current_mode()}, nullptr, op)->unsupported;
}

bool plan_source(const GemmKey& key, int device, PlanSource* source, TunedAlgo* algo) {
  Cache& cc = cache();
  std::shared_lock<std::shared_mutex> lock(cc.mu);
  const auto it = cc.plans.find(PlanKey{key, device, current_mode()});
  if (it == cc.plans.end()) return false;
  Plan& p = *it->second;
  std::lock_guard<std::mutex> plan_lock(p.mu);
  *source = p.source;
  if (algo) {
    *algo = TunedAlgo{};
    std::memcpy(algo->algo.data(), &p.algo, sizeof p.algo);
    algo->workspace = p.workspace;
  }
  return true;
}

void register_engine() {
  mixt::gemm::EngineHooks hooks;
  hooks.plan_count = [] {
    Cache& cc = cache();
    std::shared_lock<std::shared_mutex> lock(cc.mu);
    return static_cast<int64_t>(cc.plans.size());
  };
  hooks.clear_plans = [] {
    Cache& cc = cache();
    std::unique_lock<std::shared_mutex> lock(cc.mu);
    cc.plans.clear();  // plans in use elsewhere live on through their shared_ptr
    ++cc.epoch;
  };
  // load_tuning: the keys' plans (but deterministic ones, which never take a loaded algorithm) are
  // rebuilt on their next call, from the loaded algorithm.
  hooks.drop_plans = [](const std::vector<GemmKey>& keys) {
    const std::unordered_set<GemmKey, GemmKeyHash> loaded(keys.begin(), keys.end());
    Cache& cc = cache();
    std::unique_lock<std::shared_mutex> lock(cc.mu);
    std::erase_if(cc.plans, [&](const auto& entry) {
      return entry.first.mode != Mode::Deterministic && loaded.count(entry.first.key) > 0;
    });
    ++cc.epoch;
  };
  hooks.device_name = [] { return std::string(device_name(0)); };
  hooks.cublaslt_version = static_cast<int64_t>(cublasLtGetVersion());
  mixt::gemm::set_engine_hooks(std::move(hooks));
}

}  // namespace mixt::cuda::gemm
