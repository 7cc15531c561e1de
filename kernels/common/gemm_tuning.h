// The host side of the GEMM plan cache, shared by every build: the table of tuned
// algorithms (autotuned here, or loaded with gemm::load_tuning) and the counters behind
// gemm::plan_cache_stats(). The CUDA engine (kernels/cuda/gemm/engine.cpp) registers its
// plan cache here, so save/load/clear/stats work the same with or without CUDA (without
// it the cache is always empty). Thread-safe.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <mixt/kernels/common/gemm_key.h>

namespace mixt::gemm {

// What the CUDA engine lends the host side: its plan count, how to drop all its plans or
// those of some keys (load_tuning: the next call rebuilds them with the loaded algorithm),
// and the device name and cuBLASLt version written into tuning files.
struct EngineHooks {
  std::function<int64_t()> plan_count;
  std::function<void()> clear_plans;
  std::function<void(const std::vector<GemmKey>&)> drop_plans;
  std::function<std::string()> device_name;
  int64_t cublaslt_version = 0;
};
// Registers the engine (once, at kernel registration; never unregistered).
void set_engine_hooks(EngineHooks hooks);

// The tuned algorithm of `key`, if one was timed or loaded.
std::optional<TunedAlgo> find_tuned(const GemmKey& key);
// Records the winner of an autotune (replacing an earlier one of the key).
void record_tuned(const GemmKey& key, const TunedAlgo& tuned);
// Every tuned entry (in no particular order).
std::vector<TuningEntry> tuned_entries();

// The counters of plan_cache_stats().
void count_hit();
void count_miss();
void count_autotuned();

}  // namespace mixt::gemm
