// The tuned-algorithm table, the plan-cache counters, and the public functions of
// runtime/gemm_settings.h that use them (save_tuning, load_tuning, plan_cache_stats,
// clear_plan_cache).
#include <mixt/kernels/common/gemm_tuning.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <mutex>
#include <unordered_map>

#include <mixt/runtime/check.h>
#include <mixt/runtime/gemm_settings.h>
#include <mixt/runtime/io/atomic_file.h>

namespace mixt::gemm {
namespace {

struct Registry {
  std::mutex mu;
  std::unordered_map<GemmKey, TunedAlgo, GemmKeyHash> tuned;
  EngineHooks hooks;
  bool has_engine = false;
};
Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: kernels may run during static destruction
  return *r;
}
std::atomic<int64_t> g_hits{0}, g_misses{0}, g_autotuned{0};

// The whole file at `path`, refusing one larger than a tuning file may be.
std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  MIXT_CHECK(in.good(), "gemm::load_tuning", "cannot open '{}': {}", path, std::strerror(errno));
  std::string text;
  char buf[65536];
  while (in) {
    in.read(buf, sizeof buf);
    text.append(buf, static_cast<size_t>(in.gcount()));
    MIXT_CHECK(text.size() <= kMaxTuningFileBytes, "gemm::load_tuning",
               "'{}' is larger than the {} bytes a tuning file may have", path, kMaxTuningFileBytes);
  }
  MIXT_CHECK(in.eof(), "gemm::load_tuning", "cannot read '{}'", path);
  return text;
}

}  // namespace

void set_engine_hooks(EngineHooks hooks) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.hooks = std::move(hooks);
  r.has_engine = true;
}

std::optional<TunedAlgo> find_tuned(const GemmKey& key) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  const auto it = r.tuned.find(key);
  if (it == r.tuned.end()) return std::nullopt;
  return it->second;
}

void record_tuned(const GemmKey& key, const TunedAlgo& tuned) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.tuned[key] = tuned;
}

std::vector<TuningEntry> tuned_entries() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::vector<TuningEntry> out;
  out.reserve(r.tuned.size());
  for (const auto& [k, t] : r.tuned) out.push_back({k, t});
  return out;
}

void count_hit() { g_hits.fetch_add(1, std::memory_order_relaxed); }
void count_miss() { g_misses.fetch_add(1, std::memory_order_relaxed); }
void count_autotuned() { g_autotuned.fetch_add(1, std::memory_order_relaxed); }

PlanCacheStats plan_cache_stats() {
  PlanCacheStats s;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.has_engine && r.hooks.plan_count) s.plans = r.hooks.plan_count();
  }
  s.hits = g_hits.load();
  s.misses = g_misses.load();
  s.autotuned = g_autotuned.load();
  return s;
}

void clear_plan_cache() {
  Registry& r = registry();
  std::function<void()> clear;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    r.tuned.clear();
    if (r.has_engine) clear = r.hooks.clear_plans;
  }
  if (clear) clear();
  g_hits = 0;
  g_misses = 0;
  g_autotuned = 0;
}

void save_tuning(const std::string& path) {
  TuningFile f;
  {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.has_engine) {
      if (r.hooks.device_name) f.device = r.hooks.device_name();
      f.cublaslt_version = r.hooks.cublaslt_version;
    }
  }
  f.entries = tuned_entries();
  // A stable order, so equal tables give equal files.
  std::sort(f.entries.begin(), f.entries.end(), [](const TuningEntry& x, const TuningEntry& y) {
    return describe(x.key) < describe(y.key);
  });
  io::write_file_atomic(path, format_tuning(f));
}

void load_tuning(const std::string& path) {
  const TuningFile f = parse_tuning(read_file(path), path);  // validated whole before anything changes
  Registry& r = registry();
  std::function<void(const std::vector<GemmKey>&)> drop;
  {
    std::lock_guard<std::mutex> lock(r.mu);
    if (r.has_engine && f.cublaslt_version != 0 && r.hooks.cublaslt_version != 0)
      MIXT_CHECK(f.cublaslt_version == r.hooks.cublaslt_version, "gemm::load_tuning",
                 "{}: tuned with cuBLASLt {}, but this process uses {} (algorithms are not portable across versions)",
                 path, f.cublaslt_version, r.hooks.cublaslt_version);
    for (const TuningEntry& e : f.entries) r.tuned[e.key] = e.tuned;
    if (r.has_engine) drop = r.hooks.drop_plans;
  }
  // Plans already built for these keys hold the algorithm chosen before: drop them (after the table
  // changed, so a rebuilt plan finds the loaded algorithm).
  if (drop) {
    std::vector<GemmKey> keys;
    keys.reserve(f.entries.size());
    for (const TuningEntry& e : f.entries) keys.push_back(e.key);
    drop(keys);
  }
}

}  // namespace mixt::gemm
