// The GEMM engine's plan-cache key and the tuning file (Note [GEMM plan cache] in
// docs/gemm.md). A key describes one cuBLASLt problem completely, in cuBLAS's
// column-major terms: D[m, n] = epilogue(alpha * op(A)[m, k] @ op(B)[k, n] + beta * C),
// `batch` times with the given batch strides. Everything a matmul descriptor, a
// matrix layout or an algorithm choice depends on is in the key, so a cached plan
// (descriptors, preference, algorithm) is valid for every call with an equal key.
// Host code with no CUDA dependency: the key, its hash, its validation and the
// tuning file's text format are tested on the host (tests/cpu/test_gemm_plan.cpp).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <mixt/runtime/dtype.h>

namespace mixt::gemm {

// cuBLAS compute types the engine uses: F32 (float32 accumulation; also f16/bf16/fp8
// operands), F32FastTF32 (float32 operands on TF32 tensor cores, under
// set_float32_matmul_precision(High)), F64 (double), F16 (float16 accumulation).
enum class ComputeType : uint8_t { F32, F32FastTF32, F64, F16 };
inline constexpr int kNumComputeTypes = 4;

// cuBLASLt epilogues: what runs on D before the store. *Bias adds a vector of length m
// (one value per row of the column-major D, i.e. per output feature); *Aux also stores
// the pre-activation (GELU) for the backward; DGelu/DGeluBGrad multiply by gelu'(aux)
// (and reduce the bias gradient); BGradA/BGradB reduce the bias gradient of A or B.
enum class Epilogue : uint8_t {
  None, Bias, Relu, ReluBias, Gelu, GeluBias, GeluAux, GeluAuxBias, DGelu, DGeluBGrad, BGradA, BGradB
};
inline constexpr int kNumEpilogues = 12;
// True when the epilogue reads a bias vector (BIAS_POINTER is an input).
constexpr bool epilogue_reads_bias(Epilogue e) {
  return e == Epilogue::Bias || e == Epilogue::ReluBias || e == Epilogue::GeluBias || e == Epilogue::GeluAuxBias;
}
// True when the epilogue writes a bias gradient (BIAS_POINTER is an output).
constexpr bool epilogue_writes_bias(Epilogue e) {
  return e == Epilogue::DGeluBGrad || e == Epilogue::BGradA || e == Epilogue::BGradB;
}
// True when the epilogue reads or writes the aux matrix (EPILOGUE_AUX_POINTER).
constexpr bool epilogue_uses_aux(Epilogue e) {
  return e == Epilogue::GeluAux || e == Epilogue::GeluAuxBias || e == Epilogue::DGelu || e == Epilogue::DGeluBGrad;
}

// How A and B are scaled (float8 operands only): one float32 each (Tensorwise), or a
// vector along m for A and along n for B (Rowwise: cuBLASLt's OUTER_VEC_32F, which has no D
// scale and writes only bfloat16, float16 or float32 D).
enum class ScaleMode : uint8_t { None, Tensorwise, Rowwise };
inline constexpr int kNumScaleModes = 3;

// The largest alignment in bytes the engine distinguishes (cuBLASLt's default assumption).
inline constexpr int kMaxAlignment = 256;
// The largest dimension, batch and leading dimension a key may hold.
inline constexpr int64_t kMaxDim = (int64_t{1} << 31) - 1;
inline constexpr int64_t kMaxLd = int64_t{1} << 40;
// The workspace every stream gets, and so the most an algorithm may ask for.
inline constexpr uint64_t kWorkspaceBytes = uint64_t{32} << 20;

struct GemmKey {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  ScalarType a = ScalarType::Float32, b = ScalarType::Float32, c = ScalarType::Float32, d = ScalarType::Float32;
  ScalarType bias = ScalarType::Undefined;  // the bias vector's dtype (Undefined without one)
  ComputeType compute = ComputeType::F32;
  bool trans_a = false, trans_b = false;    // op(A) = A^T, op(B) = B^T
  int64_t lda = 0, ldb = 0, ldc = 0, ldd = 0;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0, stride_d = 0;  // elements between matrices of the batch
  uint16_t align_a = kMaxAlignment, align_b = kMaxAlignment, align_c = kMaxAlignment, align_d = kMaxAlignment;
  Epilogue epilogue = Epilogue::None;
  ScaleMode scale_mode = ScaleMode::None;
  bool fast_accum = false;  // float8 only: no periodic promotion of partial sums to float32

  bool operator==(const GemmKey&) const = default;
};

struct GemmKeyHash {
  size_t operator()(const GemmKey& k) const noexcept;
};

// "" when `k` describes a problem the engine can plan (dimensions, leading dimensions
// and batch strides consistent and in range, a supported combination of dtypes, compute
// type, epilogue and scale mode, alignments powers of two up to 256); else why not.
std::string validate(const GemmKey& k);

// The largest power of two up to kMaxAlignment that divides the address `p` (256 for null).
uint16_t pointer_alignment(const void* p);
// The largest power of two up to kMaxAlignment dividing every byte offset `ld * element_size`
// a pointer moves by (combined with pointer_alignment for the operand's real alignment).
uint16_t offset_alignment(int64_t bytes);

// How a row-major matrix t [rows, cols] with strides (row_stride, col_stride) in elements is
// passed to cuBLAS (column-major) without a copy: its memory holds t^T column-major
// (trans = false, op N gives t^T) or t column-major (trans = true), `ld` apart. `fits` is
// false when neither stride is 1 (the caller copies the matrix contiguous: trans = false,
// ld = cols).
struct OperandLayout {
  bool fits = true;
  bool trans = false;
  int64_t ld = 1;
};
OperandLayout operand_layout(int64_t rows, int64_t cols, int64_t row_stride, int64_t col_stride);

// One line describing the key (for errors and the benchmark), e.g.
// "m=4096 n=4096 k=4096 batch=1 a=bfloat16 ... fast_accum=0".
std::string describe(const GemmKey& k);

// A chosen cuBLASLt algorithm: the opaque cublasLtMatmulAlgo_t (64 bytes), the workspace it
// needs, and the time it took when tuned (informational, microseconds; 0 when not timed).
struct TunedAlgo {
  std::array<uint64_t, 8> algo{};
  uint64_t workspace = 0;
  double time_us = 0;
  bool operator==(const TunedAlgo&) const = default;
};

struct TuningEntry {
  GemmKey key;
  TunedAlgo tuned;
};

// The tuning file (save_tuning / load_tuning): the device and cuBLASLt version it was tuned
// on and one entry per key.
struct TuningFile {
  std::string device = "none";  // the GPU's name (printable ASCII, no line breaks)
  int64_t cublaslt_version = 0;
  std::vector<TuningEntry> entries;
};

// Bounds the parser enforces on a file.
inline constexpr size_t kMaxTuningFileBytes = size_t{64} << 20;
inline constexpr size_t kMaxTuningLineBytes = 4096;
inline constexpr int64_t kMaxTuningEntries = 100000;

// The text of `f` (Note [Tuning file format]). Raises mixt::Error when an entry's key is
// invalid or two entries have one key (a file save_tuning writes always parses back).
std::string format_tuning(const TuningFile& f);
// Parses a tuning file's text, treating it as hostile: every field is checked and every
// entry validated; any problem raises mixt::Error("gemm::load_tuning", "<file>:<line>: ...").
// `file` names the source in errors.
TuningFile parse_tuning(std::string_view text, const std::string& file);

}  // namespace mixt::gemm
