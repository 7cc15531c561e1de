// The GEMM settings (gemm_settings.h) and the determinism switch (determinism.h). The plan
// cache and the tuning files live in kernels/common/gemm_tuning.cpp (every build) and the
// CUDA GEMM engine (kernels/cuda/gemm); this file keeps the knobs.
#include <atomic>

#include <mixt/runtime/determinism.h>
#include <mixt/runtime/gemm_settings.h>

namespace mixt {
namespace {
std::atomic<Float32MatmulPrecision> g_precision{Float32MatmulPrecision::Highest};
std::atomic<gemm::AlgoSelection> g_selection{gemm::AlgoSelection::Heuristic};
std::atomic<bool> g_deterministic{false};
}  // namespace

void set_deterministic(bool on) { g_deterministic.store(on); }
bool is_deterministic() { return g_deterministic.load(); }

void set_float32_matmul_precision(Float32MatmulPrecision p) { g_precision.store(p); }
Float32MatmulPrecision float32_matmul_precision() { return g_precision.load(); }

namespace gemm {
void set_algo_selection(AlgoSelection s) { g_selection.store(s); }
// Timed autotuning can pick another winner from run to run: set_deterministic(true) keeps the heuristic's choice.
AlgoSelection algo_selection() { return is_deterministic() ? AlgoSelection::Heuristic : g_selection.load(); }
// plan_cache_stats, clear_plan_cache, save_tuning and load_tuning: kernels/common/gemm_tuning.cpp.
}  // namespace gemm
}  // namespace mixt
