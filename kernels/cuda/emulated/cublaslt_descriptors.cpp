// The emulated cuBLASLt's handle and descriptor calls (-Dcuda=emulated): cublasLtCreate,
// the version and status queries, and create/init/destroy/set/get of matmul descriptors,
// matrix layouts and preferences. Attributes are checked for their documented size (a
// wrong size or a null buffer is CUBLAS_STATUS_INVALID_VALUE, cublasLt.h); their values
// are judged later, by the heuristic and cublasLtMatmul (cublaslt.cpp).
#include <cstring>
#include <new>

#include <mixt/kernels/cuda/emulated/cublaslt_state.h>
#include <mixt/kernels/cuda/emulated/gemm_reference.h>

// The handle the header forward-declares.
struct cublasLtContext {
  uint32_t magic = 0x4d4c5448;  // "MLTH"
};

namespace mixt::cuda::emulated::lt {
namespace {

// Where an attribute lives in a state struct, and its documented size.
struct Field {
  void* at = nullptr;
  size_t size = 0;
};

template <class T>
Field field(T& member) {
  return Field{&member, sizeof(T)};
}

Field desc_field(DescState& s, cublasLtMatmulDescAttributes_t a) {
  switch (a) {
    case CUBLASLT_MATMUL_DESC_COMPUTE_TYPE:
      return field(s.compute_type);
    case CUBLASLT_MATMUL_DESC_SCALE_TYPE:
      return field(s.scale_type);
    case CUBLASLT_MATMUL_DESC_POINTER_MODE:
      return field(s.pointer_mode);
    case CUBLASLT_MATMUL_DESC_TRANSA:
      return field(s.trans_a);
    case CUBLASLT_MATMUL_DESC_TRANSB:
      return field(s.trans_b);
    case CUBLASLT_MATMUL_DESC_TRANSC:
      return field(s.trans_c);
    case CUBLASLT_MATMUL_DESC_FILL_MODE:
      return field(s.fill_mode);
    case CUBLASLT_MATMUL_DESC_EPILOGUE:
      return field(s.epilogue);
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER:
      return field(s.bias);
    case CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE:
      return field(s.bias_batch_stride);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER:
      return field(s.aux);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD:
      return field(s.aux_ld);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE:
      return field(s.aux_batch_stride);
    case CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE:
      return field(s.alpha_vector_batch_stride);
    case CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET:
      return field(s.sm_count_target);
    case CUBLASLT_MATMUL_DESC_A_SCALE_POINTER:
      return field(s.a_scale);
    case CUBLASLT_MATMUL_DESC_B_SCALE_POINTER:
      return field(s.b_scale);
    case CUBLASLT_MATMUL_DESC_C_SCALE_POINTER:
      return field(s.c_scale);
    case CUBLASLT_MATMUL_DESC_D_SCALE_POINTER:
      return field(s.d_scale);
    case CUBLASLT_MATMUL_DESC_AMAX_D_POINTER:
      return field(s.amax_d);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE:
      return field(s.aux_type);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER:
      return field(s.aux_scale);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER:
      return field(s.aux_amax);
    case CUBLASLT_MATMUL_DESC_FAST_ACCUM:
      return field(s.fast_accum);
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE:
      return field(s.bias_type);
    case CUBLASLT_MATMUL_DESC_A_SCALE_MODE:
      return field(s.a_scale_mode);
    case CUBLASLT_MATMUL_DESC_B_SCALE_MODE:
      return field(s.b_scale_mode);
    case CUBLASLT_MATMUL_DESC_C_SCALE_MODE:
      return field(s.c_scale_mode);
    case CUBLASLT_MATMUL_DESC_D_SCALE_MODE:
      return field(s.d_scale_mode);
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE:
      return field(s.aux_scale_mode);
    case CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER:
      return field(s.d_out_scale);
    case CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE:
      return field(s.d_out_scale_mode);
    case CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR:
      return field(s.emulation_desc);
  }
  return {};
}

Field layout_field(LayoutState& s, cublasLtMatrixLayoutAttribute_t a) {
  switch (a) {
    case CUBLASLT_MATRIX_LAYOUT_TYPE:
      return field(s.type);
    case CUBLASLT_MATRIX_LAYOUT_ORDER:
      return field(s.order);
    case CUBLASLT_MATRIX_LAYOUT_ROWS:
      return field(s.rows);
    case CUBLASLT_MATRIX_LAYOUT_COLS:
      return field(s.cols);
    case CUBLASLT_MATRIX_LAYOUT_LD:
      return field(s.ld);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT:
      return field(s.batch_count);
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET:
      return field(s.batch_stride);
    case CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET:
      return field(s.plane_offset);
    case CUBLASLT_MATRIX_LAYOUT_BATCH_MODE:
      return field(s.batch_mode);
  }
  return {};
}

Field pref_field(PrefState& s, cublasLtMatmulPreferenceAttributes_t a) {
  switch (a) {
    case CUBLASLT_MATMUL_PREF_SEARCH_MODE:
      return field(s.search_mode);
    case CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES:
      return field(s.max_workspace);
    case CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK:
      return field(s.reduction_mask);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES:
      return field(s.align_a);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES:
      return field(s.align_b);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES:
      return field(s.align_c);
    case CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES:
      return field(s.align_d);
    case CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT:
      return field(s.max_waves);
    case CUBLASLT_MATMUL_PREF_IMPL_MASK:
      return field(s.impl_mask);
  }
  return {};
}

// The documented set-attribute contract: a known attribute, a buffer, the exact size.
cublasStatus_t set_field(Field f, const void* buf, size_t size) {
  if (!f.at || !buf || size != f.size) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(f.at, buf, size);
  return CUBLAS_STATUS_SUCCESS;
}

// The documented get-attribute contract: size 0 asks for the size; otherwise it must match.
cublasStatus_t get_field(Field f, void* buf, size_t size, size_t* written) {
  if (!f.at) return CUBLAS_STATUS_INVALID_VALUE;
  if (size == 0) {
    if (!written) return CUBLAS_STATUS_INVALID_VALUE;
    *written = f.size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (!buf || size != f.size) return CUBLAS_STATUS_INVALID_VALUE;
  std::memcpy(buf, f.at, size);
  if (written) *written = size;
  return CUBLAS_STATUS_SUCCESS;
}

// Constructs State inside an opaque struct the caller owns (the *Init_internal forms).
template <class State, class Opaque>
cublasStatus_t init_in_place(Opaque* o, size_t size, const State& s) {
  if (!o) return CUBLAS_STATUS_INVALID_VALUE;
  if (size < sizeof(Opaque)) return CUBLAS_STATUS_ALLOC_FAILED;
  std::memset(static_cast<void*>(o), 0, sizeof(Opaque));
  new (static_cast<void*>(o)) State(s);
  return CUBLAS_STATUS_SUCCESS;
}

// Allocates an opaque struct holding `s` into *out.
template <class State, class Opaque>
cublasStatus_t create(Opaque** out, const State& s) {
  if (!out) return CUBLAS_STATUS_INVALID_VALUE;
  Opaque* o = new (std::nothrow) Opaque();
  if (!o) return CUBLAS_STATUS_ALLOC_FAILED;
  init_in_place(o, sizeof(Opaque), s);
  *out = o;
  return CUBLAS_STATUS_SUCCESS;
}

DescState make_desc(cublasComputeType_t compute, cudaDataType_t scale) {
  DescState s;
  s.compute_type = compute;
  s.scale_type = scale;
  return s;
}

LayoutState make_layout(cudaDataType type, uint64_t rows, uint64_t cols, int64_t ld) {
  LayoutState s;
  s.type = static_cast<uint32_t>(type);
  s.rows = rows;
  s.cols = cols;
  s.ld = ld;
  return s;
}

}  // namespace

DescState* desc_state(cublasLtMatmulDesc_t d) {
  auto* s = reinterpret_cast<DescState*>(d);
  return s && s->magic == kDescMagic ? s : nullptr;
}

LayoutState* layout_state(cublasLtMatrixLayout_t l) {
  auto* s = reinterpret_cast<LayoutState*>(l);
  return s && s->magic == kLayoutMagic ? s : nullptr;
}

PrefState* pref_state(cublasLtMatmulPreference_t p) {
  auto* s = reinterpret_cast<PrefState*>(p);
  return s && s->magic == kPrefMagic ? s : nullptr;
}

cublasLtMatmulAlgo_t encode_algo(const AlgoInfo& info) {
  cublasLtMatmulAlgo_t a{};
  a.data[0] = kAlgoMagic;
  a.data[1] = info.id;
  a.data[2] = info.align;
  a.data[3] = info.split_k;
  a.data[4] = info.reduction;
  a.data[5] = info.workspace;
  return a;
}

bool decode_algo(const cublasLtMatmulAlgo_t& a, AlgoInfo* info) {
  if (a.data[0] != kAlgoMagic || a.data[1] < kVectorized || a.data[1] > kSplitKInplace) return false;
  info->id = a.data[1];
  info->align = static_cast<uint32_t>(a.data[2]);
  info->split_k = static_cast<uint32_t>(a.data[3]);
  info->reduction = static_cast<uint32_t>(a.data[4]);
  info->workspace = a.data[5];
  return true;
}

}  // namespace mixt::cuda::emulated::lt

namespace lt = mixt::cuda::emulated::lt;
namespace emu = mixt::cuda::emulated;

// ---- handle, version, status ----

cublasStatus_t cublasLtCreate(cublasLtHandle_t* lightHandle) {
  if (!lightHandle) return CUBLAS_STATUS_INVALID_VALUE;
  *lightHandle = new (std::nothrow) cublasLtContext();
  return *lightHandle ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_ALLOC_FAILED;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t lightHandle) {
  if (!lightHandle) return CUBLAS_STATUS_NOT_INITIALIZED;
  delete lightHandle;
  return CUBLAS_STATUS_SUCCESS;
}

size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }

size_t cublasLtGetCudartVersion(void) { return CUDART_VERSION; }

const char* cublasLtGetStatusName(cublasStatus_t status) { return emu::status_name(status); }

const char* cublasLtGetStatusString(cublasStatus_t status) { return emu::status_string(status); }

// ---- matmul descriptors ----

cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t matmulDesc, size_t size,
                                               cublasComputeType_t computeType, cudaDataType_t scaleType) {
  return lt::init_in_place(matmulDesc, size, lt::make_desc(computeType, scaleType));
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmulDesc, cublasComputeType_t computeType,
                                        cudaDataType_t scaleType) {
  return lt::create(matmulDesc, lt::make_desc(computeType, scaleType));
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmulDesc) {
  if (lt::DescState* s = lt::desc_state(matmulDesc)) s->magic = 0;
  delete matmulDesc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t sizeInBytes) {
  lt::DescState* s = lt::desc_state(matmulDesc);
  if (!s) return CUBLAS_STATUS_INVALID_VALUE;
  return lt::set_field(lt::desc_field(*s, attr), buf, sizeInBytes);
}

cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmulDesc, cublasLtMatmulDescAttributes_t attr,
                                              void* buf, size_t sizeInBytes, size_t* sizeWritten) {
  lt::DescState* s = lt::desc_state(matmulDesc);
  if (!s) return CUBLAS_STATUS_INVALID_VALUE;
  return lt::get_field(lt::desc_field(*s, attr), buf, sizeInBytes, sizeWritten);
}

// ---- matrix layouts ----

cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t matLayout, size_t size, cudaDataType type,
                                                 uint64_t rows, uint64_t cols, int64_t ld) {
  return lt::init_in_place(matLayout, size, lt::make_layout(type, rows, cols, ld));
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* matLayout, cudaDataType type, uint64_t rows,
                                          uint64_t cols, int64_t ld) {
  return lt::create(matLayout, lt::make_layout(type, rows, cols, ld));
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t matLayout) {
  if (lt::LayoutState* s = lt::layout_state(matLayout)) s->magic = 0;
  delete matLayout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr,
                                                const void* buf, size_t sizeInBytes) {
  lt::LayoutState* s = lt::layout_state(matLayout);
  if (!s) return CUBLAS_STATUS_INVALID_VALUE;
  return lt::set_field(lt::layout_field(*s, attr), buf, sizeInBytes);
}

cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t matLayout, cublasLtMatrixLayoutAttribute_t attr,
                                                void* buf, size_t sizeInBytes, size_t* sizeWritten) {
  lt::LayoutState* s = lt::layout_state(matLayout);
  if (!s) return CUBLAS_STATUS_INVALID_VALUE;
  return lt::get_field(lt::layout_field(*s, attr), buf, sizeInBytes, sizeWritten);
}

// ---- preferences ----

cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref, size_t size) {
  return lt::init_in_place(pref, size, lt::PrefState{});
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  return lt::create(pref, lt::PrefState{});
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  if (lt::PrefState* s = lt::pref_state(pref)) s->magic = 0;
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
                                                    size_t sizeInBytes) {
  lt::PrefState* s = lt::pref_state(pref);
  if (!s) return CUBLAS_STATUS_INVALID_VALUE;
  return lt::set_field(lt::pref_field(*s, attr), buf, sizeInBytes);
}

cublasStatus_t cublasLtMatmulPreferenceGetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr, void* buf,
                                                    size_t sizeInBytes, size_t* sizeWritten) {
  lt::PrefState* s = lt::pref_state(pref);
  if (!s) return CUBLAS_STATUS_INVALID_VALUE;
  return lt::get_field(lt::pref_field(*s, attr), buf, sizeInBytes, sizeWritten);
}

// ---- algorithm configurations ----
// "cublasLtMatmulAlgoConfigGetAttribute()": the split-K count (int32_t) and reduction
// scheme (uint32_t) of an algorithm this stand-in made; other attributes and foreign
// algorithms are INVALID_VALUE.
cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t* algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr, void* buf,
                                                    size_t sizeInBytes, size_t* sizeWritten) {
  lt::AlgoInfo info;
  if (!algo || !lt::decode_algo(*algo, &info)) return CUBLAS_STATUS_INVALID_VALUE;
  int32_t splits = static_cast<int32_t>(info.split_k);
  uint32_t scheme = info.reduction;
  switch (attr) {
    case CUBLASLT_ALGO_CONFIG_SPLITK_NUM: return lt::get_field(lt::field(splits), buf, sizeInBytes, sizeWritten);
    case CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME: return lt::get_field(lt::field(scheme), buf, sizeInBytes, sizeWritten);
    default: return CUBLAS_STATUS_INVALID_VALUE;
  }
}
