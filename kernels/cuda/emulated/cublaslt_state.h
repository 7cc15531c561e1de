// The emulated cuBLASLt's descriptors (-Dcuda=emulated): what a matmul descriptor, a
// matrix layout and a preference hold, stored inside the toolkit's own semi-opaque structs
// (cublasLtMatmulDescOpaque_t and friends) so the *Init_internal forms work in place too,
// and the 64-byte algorithm encoding. Shared by cublaslt_descriptors.cpp (create, set, get)
// and cublaslt.cpp (heuristic, check, matmul).
#pragma once

#include <cstdint>
#include <string>

#include <cublasLt.h>

#include <mixt/kernels/cuda/emulated/gemm_reference.h>

namespace mixt::cuda::emulated::lt {

constexpr uint32_t kDescMagic = 0x4d445343;    // "MDSC"
constexpr uint32_t kLayoutMagic = 0x4d4c4159;  // "MLAY"
constexpr uint32_t kPrefMagic = 0x4d505246;    // "MPRF"

// A matmul descriptor's attributes, defaults as cublasLt.h documents them.
struct DescState {
  uint32_t magic = kDescMagic;
  int32_t compute_type = CUBLAS_COMPUTE_32F;
  int32_t scale_type = CUDA_R_32F;
  int32_t pointer_mode = CUBLASLT_POINTER_MODE_HOST;
  int32_t trans_a = CUBLAS_OP_N, trans_b = CUBLAS_OP_N, trans_c = CUBLAS_OP_N;
  int32_t fill_mode = CUBLAS_FILL_MODE_FULL;
  uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
  int32_t sm_count_target = 0;
  int32_t aux_type = -1;
  int32_t bias_type = -1;
  int32_t a_scale_mode = 0, b_scale_mode = 0, c_scale_mode = 0, d_scale_mode = 0, aux_scale_mode = 0;
  int32_t d_out_scale_mode = 0;
  int8_t fast_accum = 0;
  const void* bias = nullptr;
  int64_t bias_batch_stride = 0;
  const void* aux = nullptr;
  int64_t aux_ld = 0, aux_batch_stride = 0;
  int64_t alpha_vector_batch_stride = 0;
  const void* a_scale = nullptr;
  const void* b_scale = nullptr;
  const void* c_scale = nullptr;
  const void* d_scale = nullptr;
  void* amax_d = nullptr;
  void* aux_scale = nullptr;
  void* aux_amax = nullptr;
  void* d_out_scale = nullptr;
  void* emulation_desc = nullptr;
};
static_assert(sizeof(DescState) <= sizeof(cublasLtMatmulDescOpaque_t), "DescState must fit the opaque descriptor");

// A matrix layout's attributes.
struct LayoutState {
  uint32_t magic = kLayoutMagic;
  uint32_t type = CUDA_R_32F;
  int32_t order = CUBLASLT_ORDER_COL;
  int32_t batch_count = 1;
  uint64_t rows = 0, cols = 0;
  int64_t ld = 0;
  int64_t batch_stride = 0;
  int64_t plane_offset = 0;
  uint32_t batch_mode = CUBLASLT_BATCH_MODE_STRIDED;
};
static_assert(sizeof(LayoutState) <= sizeof(cublasLtMatrixLayoutOpaque_t), "LayoutState must fit the opaque layout");

// A matmul preference's attributes.
struct PrefState {
  uint32_t magic = kPrefMagic;
  uint32_t search_mode = CUBLASLT_SEARCH_BEST_FIT;
  uint64_t max_workspace = 0;
  uint32_t reduction_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
  uint32_t align_a = 256, align_b = 256, align_c = 256, align_d = 256;
  float max_waves = 0;
  uint64_t impl_mask = ~uint64_t{0};
};
static_assert(sizeof(PrefState) <= sizeof(cublasLtMatmulPreferenceOpaque_t), "PrefState must fit the opaque pref");

// The state inside an opaque descriptor (nullptr for a null or foreign pointer).
DescState* desc_state(cublasLtMatmulDesc_t d);
LayoutState* layout_state(cublasLtMatrixLayout_t l);
PrefState* pref_state(cublasLtMatmulPreference_t p);

// The emulator's algorithms, as cublasLtMatmulAlgo_t's data words carry them:
// data[0] kAlgoMagic, data[1] id, data[2] the alignment (bytes) the algorithm needs of A,
// B, C, D and of the bias/aux pointers, data[3] split-K count, data[4] reduction scheme,
// data[5] workspace bytes.
constexpr uint64_t kAlgoMagic = 0x4d49585445'4c5431ull;  // "MIXTELT1"
enum AlgoId : uint64_t { kVectorized = 1, kScalar = 2, kSplitKInplace = 3 };
struct AlgoInfo {
  uint64_t id = 0;
  uint32_t align = 0;
  uint32_t split_k = 1;
  uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_NONE;
  uint64_t workspace = 0;
};
// Encodes/decodes an algorithm (decode: false for an algo this emulator did not make).
cublasLtMatmulAlgo_t encode_algo(const AlgoInfo& info);
bool decode_algo(const cublasLtMatmulAlgo_t& algo, AlgoInfo* info);

constexpr uint64_t kSplitKWorkspace = 64 << 10;  // the INPLACE scheme's counters
constexpr int64_t kSplitKMinK = 256;
// The algorithms, fastest first (Note [Emulated cuBLASLt]).
constexpr AlgoInfo kAlgos[] = {
    {kSplitKInplace, 16, 2, CUBLASLT_REDUCTION_SCHEME_INPLACE, kSplitKWorkspace},
    {kVectorized, 16, 1, CUBLASLT_REDUCTION_SCHEME_NONE, 0},
    {kScalar, 1, 1, CUBLASLT_REDUCTION_SCHEME_NONE, 0},
};

// A snapshot of the descriptors of one matmul (C defaults to D's layout), with the shape
// and the effective bias/aux types.
struct Problem {
  DescState desc;
  LayoutState a, b, c, d;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  cudaDataType ta{}, tb{}, tc{}, td{}, bias_type{}, aux_type{};
};

// A rule's answer: success, or the status and the reason.
struct Verdict {
  cublasStatus_t status = CUBLAS_STATUS_SUCCESS;
  std::string why;
  explicit operator bool() const { return status == CUBLAS_STATUS_SUCCESS; }
};

// Snapshots the descriptors (false when one is not a live descriptor of this emulator).
bool snapshot(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a, cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c,
              cublasLtMatrixLayout_t d, Problem* p);
// Everything a descriptor set must satisfy; `run`: the pointers of cublasLtMatmul are final.
Verdict validate(const Problem& p, bool run);
// Whether `algo` can serve `p` given the alignments (bytes) of A, B, C, D (from the
// preference, or the real pointers), the leading dimensions, strides and bias/aux pointers.
Verdict algo_fits(const Problem& p, const AlgoInfo& algo, const uint64_t align[4]);
// The Accumulate mode and scale type of a compute type (false: not emulated).
bool compute_mode(int32_t compute, Accumulate* acc, cudaDataType* scale);
// Largest power of two dividing `v` (huge for 0): the alignment an offset keeps.
uint64_t low_bit(uint64_t v);
// Epilogue classes: reads a bias, writes a bias gradient, reads or writes the GELU aux.
bool uses_bias_input(uint32_t e);
bool writes_bias(uint32_t e);
bool uses_aux(uint32_t e);
// The bias vector's length: rows of D, but columns of D for BGRADB (cublasLtEpilogue_t).
int64_t bias_length(const Problem& p);
// cuBLASLt's logging switch: a refusal is printed when CUBLASLT_LOG_LEVEL >= 1.
void log_refusal(const char* call, const Verdict& v);

}  // namespace mixt::cuda::emulated::lt
