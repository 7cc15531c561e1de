// The GEMM engine: one call runs one cuBLASLt problem (gemm_key.h's GemmKey plus the
// pointers) through a cached plan. Used by the CUDA kernels of mm, bmm, addmm, baddbmm,
// linear, linear_backward and scaled_mm (matmul.cpp, scaled_mm.cpp), and by the benchmark and the GPU test.
// Host code. See docs/gemm.md.
#pragma once

#include <mixt/kernels/common/gemm_key.h>

namespace mixt::cuda::gemm {

using mixt::gemm::GemmKey;

// One GEMM: D = epilogue(alpha * op(A) @ op(B) + beta * C) (cuBLAS column-major terms; the key
// says the shapes, layouts and dtypes). Pointers are device memory of the key's dtypes.
struct GemmCall {
  GemmKey key;
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;  // may equal d (in place) except for float8 results
  void* d = nullptr;
  double alpha = 1, beta = 0;
  void* bias = nullptr;   // read by the bias epilogues, written by the bias-gradient ones
  void* aux = nullptr;    // the aux epilogues' matrix (m x n, ld_aux apart, D's dtype)
  int64_t ld_aux = 0;
  const float* scale_a = nullptr;  // float8: dequantisation scales of A and B (device float32)
  const float* scale_b = nullptr;
  const float* scale_d = nullptr;  // float8 results: the quantisation scale applied before the store
  float* amax_d = nullptr;         // float8 results: receives max |D| (before scale_d)
};

// Where a plan's algorithm came from.
enum class PlanSource { Heuristic, Autotuned, Loaded, CublasFallback };

// Runs `call` on the current stream of CUDA device `device` (queued, no host sync, except
// the timing of an autotune on a key's first call). Raises mixt::Error(op, ...) naming the
// key when the key is invalid or neither cuBLASLt nor cuBLAS has an algorithm for it.
void run(const GemmCall& call, int device, const char* op);

// True when `key` is valid and cuBLASLt (or the cuBLAS fallback) can run it on `device`;
// builds and caches the key's plan (so the following run() finds it). Lets a caller fall
// back to an unfused path where an epilogue has no algorithm.
bool has_algorithm(const GemmKey& key, int device, const char* op);

// The source of the cached plan of `key` on `device` under the current settings, and (when
// `algo` is given) its algorithm and workspace (zeros for the cuBLAS fallback), or false when
// there is none.
bool plan_source(const GemmKey& key, int device, PlanSource* source, mixt::gemm::TunedAlgo* algo = nullptr);

// Registers the engine's plan cache with kernels/common/gemm_tuning.h (stats, clear, files).
void register_engine();

}  // namespace mixt::cuda::gemm
