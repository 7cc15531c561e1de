// Process-wide settings of the GEMM engine (mm, bmm, addmm, baddbmm, linear, scaled_mm):
// float32 matmul precision, how cuBLASLt algorithms are chosen, and the tuning file that
// lets a later run start tuned. Usable in every build; without CUDA the settings are kept
// and the plan cache stays empty.
// The CPU always computes float32 in float32 and has no plans; the CUDA engine
// (kernels/cuda/gemm, docs/gemm.md) reads every knob here.
#pragma once

#include <cstdint>
#include <string>

namespace mixt {

// PyTorch's knob: "highest" keeps float32 GEMMs in float32; "high" allows TF32 on CUDA.
// ("medium" is accepted and behaves as "high".) The CPU always computes in float32.
enum class Float32MatmulPrecision : uint8_t { Highest, High, Medium };
void set_float32_matmul_precision(Float32MatmulPrecision p);
Float32MatmulPrecision float32_matmul_precision();

namespace gemm {

// Heuristic: cuBLASLt's first choice. Autotune: on a plan's first call, time the
// heuristic's top candidates on the real operands and keep the fastest.
// algo_selection() reports Heuristic while set_deterministic(true) is on.
enum class AlgoSelection : uint8_t { Heuristic, Autotune };
void set_algo_selection(AlgoSelection s);
AlgoSelection algo_selection();

struct PlanCacheStats {
  int64_t plans = 0;      // plans in the cache
  int64_t hits = 0;       // calls that found their plan
  int64_t misses = 0;     // calls that built one
  int64_t autotuned = 0;  // plans whose algorithm was chosen by timing
};
PlanCacheStats plan_cache_stats();
// Drops every cached plan and tuned algorithm and zeroes the counters (the next call of
// each key builds, and maybe tunes, again).
void clear_plan_cache();

// Writes the autotuned (and loaded) choices, key -> algorithm, to `path` atomically, in the
// versioned text format of docs/gemm.md (an empty table writes a file with no entries).
void save_tuning(const std::string& path);
// Reads a file written by save_tuning: validated whole before anything is applied (a corrupt
// or foreign file raises mixt::Error naming the file and line, and changes nothing; a file
// tuned with another cuBLASLt version is refused). Entries seed the plan cache: a key's
// plan uses its loaded algorithm (when cuBLASLt accepts it) instead of the heuristic's,
// except under set_deterministic(true).
void load_tuning(const std::string& path);

// The CPU's float32 copies of float16/bfloat16 GEMM operands that are parameters (docs/gemm.md,
// Note [GEMM widening cache]): a copy is served while its source keeps its storage, version,
// offset, sizes, strides and dtype; at most widening_cache_limit bytes are kept (least recently
// used dropped first), with a reference to each source.
struct WideningCacheStats {
  int64_t hits = 0;
  int64_t misses = 0;   // cacheable operands widened (and stored)
  int64_t entries = 0;  // copies held now
  int64_t bytes = 0;    // their float32 bytes
};
inline constexpr int64_t kDefaultWideningCacheBytes = int64_t{256} << 20;
WideningCacheStats widening_cache_stats();
void reset_widening_cache_stats();
// Drops every cached copy (and the references to their sources); the counters stay.
void clear_widening_cache();
// At most `bytes` of copies are kept; 0 turns the cache off and empties it.
void set_widening_cache_limit(int64_t bytes);

}  // namespace gemm
}  // namespace mixt
