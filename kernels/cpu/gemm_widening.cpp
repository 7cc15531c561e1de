#include <mixt/kernels/cpu/gemm_widening.h>

#include <list>
#include <mutex>

#include <mixt/kernels/common/host_copy.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/gemm_settings.h>

namespace mixt::cpu {
namespace {

// Note [GEMM widening cache]: a float16 / bfloat16 product on the CPU is sgemm on float32
// copies of both operands (Note [bfloat16 GEMM on the CPU] in matmul.cpp). A weight is
// multiplied many times between two changes (forward, then backward's grad_input; every
// step of inference), so the copies of parameters are kept, as autocast keeps its casts
// (Note [Cast cache]). An entry is served only while its source has the same storage,
// version counter, offset, sizes, strides and dtype: every in-place op bumps the version
// (dispatch.h, call_inplace), and the entry holds a view of the source, so the storage
// cannot be freed and its address reused by another tensor while cached. Writes through
// data_ptr() do not bump the version: that is why only parameters (whose in-place updates
// are optimizer steps and other ops) are cached, never activations. The cache is shared
// by all threads under one mutex; the widening itself runs outside it.
struct Entry {
  Tensor source;  // a view of the operand: keeps the storage and pins its geometry
  uint32_t version;
  Tensor wide;
};

struct Cache {
  std::mutex mutex;
  std::list<Entry> entries;  // most recently used first
  int64_t bytes = 0;
  int64_t limit = gemm::kDefaultWideningCacheBytes;
  int64_t hits = 0, misses = 0;

  void trim() {
    while (bytes > limit && !entries.empty()) {
      bytes -= entries.back().wide.nbytes();
      entries.pop_back();
    }
  }
};

Cache& cache() {
  static Cache* c = new Cache;  // never destroyed: no order problem at exit
  return *c;
}

bool same_operand(const Entry& e, const Tensor& t, uint32_t version) {
  return e.source.shares_storage(t) && e.version == version && e.source.storage_offset() == t.storage_offset() &&
         e.source.dtype() == t.dtype() && e.source.sizes() == t.sizes() && e.source.strides() == t.strides();
}

}  // namespace

Tensor widened_operand(const Tensor& t, bool cacheable, const OpCall& c) {
  Cache& k = cache();
  const uint32_t version = t.version();  // read before widening: a write meanwhile makes the entry stale, not wrong
  if (cacheable) {
    std::lock_guard<std::mutex> lock(k.mutex);
    if (k.limit == 0) {
      cacheable = false;
    } else {
      for (auto it = k.entries.begin(); it != k.entries.end(); ++it) {
        if (!same_operand(*it, t, version)) continue;
        ++k.hits;
        k.entries.splice(k.entries.begin(), k.entries, it);
        return it->wide;
      }
    }
  }
  Tensor wide = host::copied(t, kFloat32, c);
  if (!cacheable) return wide;
  std::lock_guard<std::mutex> lock(k.mutex);
  ++k.misses;
  if (wide.nbytes() > k.limit) return wide;
  // Older copies of the same storage are stale now (or another thread's duplicate).
  for (auto it = k.entries.begin(); it != k.entries.end();) {
    if (it->source.shares_storage(t) && (it->version != version || same_operand(*it, t, version))) {
      k.bytes -= it->wide.nbytes();
      it = k.entries.erase(it);
    } else {
      ++it;
    }
  }
  k.entries.push_front(Entry{make_view(t, t.sizes(), t.strides(), t.storage_offset()), version, wide});
  k.bytes += wide.nbytes();
  k.trim();
  return wide;
}

}  // namespace mixt::cpu

namespace mixt::gemm {

void clear_widening_cache() {
  cpu::Cache& k = cpu::cache();
  std::list<cpu::Entry> dropped;  // released outside the lock
  std::lock_guard<std::mutex> lock(k.mutex);
  dropped.swap(k.entries);
  k.bytes = 0;
}

void set_widening_cache_limit(int64_t bytes) {
  MIXT_CHECK(bytes >= 0, "gemm::set_widening_cache_limit", "the limit must be a byte count >= 0, got {}", bytes);
  cpu::Cache& k = cpu::cache();
  std::lock_guard<std::mutex> lock(k.mutex);
  k.limit = bytes;
  k.trim();
}

WideningCacheStats widening_cache_stats() {
  cpu::Cache& k = cpu::cache();
  std::lock_guard<std::mutex> lock(k.mutex);
  return {k.hits, k.misses, static_cast<int64_t>(k.entries.size()), k.bytes};
}

void reset_widening_cache_stats() {
  cpu::Cache& k = cpu::cache();
  std::lock_guard<std::mutex> lock(k.mutex);
  k.hits = k.misses = 0;
}

}  // namespace mixt::gemm
