// float32 copies of the float16 / bfloat16 operands of the CPU GEMMs (kernels/cpu/matmul.cpp),
// and the cache that keeps the copies of parameters between calls. See Note [GEMM widening cache]
// in gemm_widening.cpp and docs/gemm.md.
#pragma once

#include <cstdint>

#include <mixt/dispatcher/op.h>
#include <mixt/runtime/tensor.h>

namespace mixt::cpu {

// `t` (float16 or bfloat16) as a contiguous float32 tensor of its shape. With `cacheable`
// (the operand is a parameter: a leaf that requires grad, or a view of one), a copy made
// earlier from the same storage, version, offset, sizes, strides and dtype is returned
// instead of widening again, and a new copy is kept for the next call.
Tensor widened_operand(const Tensor& t, bool cacheable, const OpCall& c);

struct GemmWideningCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;   // cacheable operands widened (and stored)
  int64_t entries = 0;  // copies held now
  int64_t bytes = 0;    // their float32 bytes
};

// Drops every cached copy (and the references to their sources); the counters stay.
void clear_gemm_widening_cache();
// At most `bytes` of float32 copies are kept (least recently used dropped first); 0 turns
// the cache off and empties it. Default: kDefaultGemmWideningCacheBytes.
void set_gemm_widening_cache_limit(int64_t bytes);
inline constexpr int64_t kDefaultGemmWideningCacheBytes = int64_t{256} << 20;
GemmWideningCacheStats gemm_widening_cache_stats();
void reset_gemm_widening_cache_stats();

}  // namespace mixt::cpu
