#include <mixt/autocast/cast_cache.h>

#include <unordered_map>

#include <mixt/autocast/autocast.h>
#include <mixt/runtime/autograd/autograd.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::autocast {
namespace {

struct Key {
  const TensorImpl* source;
  ScalarType dtype;
  bool operator==(const Key& o) const { return source == o.source && dtype == o.dtype; }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    return std::hash<const void*>()(k.source) ^ (static_cast<size_t>(k.dtype) * 0x9e3779b97f4a7c15ull);
  }
};
struct Entry {
  Tensor source;  // keeps the address from being reused by another tensor while cached
  Tensor cast;
  uint32_t version;
};

// Note [Cast cache]: the cache is per thread (each thread's autocast state is,
// and its outermost exit clears it), so it needs no lock.
thread_local std::unordered_map<Key, Entry, KeyHash> g_cache;
thread_local CacheStats g_stats;

}  // namespace

bool cacheable(const Tensor& t, ScalarType to, ScalarType device_lower_dtype) {
  return state().cache_enabled && to == device_lower_dtype && t.dtype() == kFloat32 && t.requires_grad() &&
         t.is_leaf() && !t.impl()->is_view;
}

Tensor cached_cast(const Tensor& t, ScalarType to, bool use_cache, bool* hit) {
  *hit = false;
  if (t.dtype() == to) return t;
  if (!use_cache) return mixt::to(t, to);
  const Key key{t.impl(), to};
  auto it = g_cache.find(key);
  if (it != g_cache.end()) {
    if (it->second.version == t.version()) {
      ++g_stats.hits;
      *hit = true;
      return it->second.cast;
    }
    // The parameter changed in place (an optimizer step): never serve the stale cast.
    ++g_stats.invalidations;
    g_stats.bytes -= it->second.cast.nbytes();
    g_cache.erase(it);
  }
  // Record the cast even under no_grad: a later use with grad must reach the parameter.
  Tensor cast;
  {
    autograd::EnableGradGuard grad_on;
    cast = mixt::to(t, to);
  }
  ++g_stats.misses;
  g_cache.emplace(key, Entry{t, cast, t.version()});
  g_stats.bytes += cast.nbytes();
  return cast;
}

CacheStats cache_stats() {
  CacheStats s = g_stats;
  s.entries = static_cast<int64_t>(g_cache.size());
  return s;
}

void clear_cache() {
  g_cache.clear();
  g_stats.bytes = 0;
}

void reset_cache_stats() {
  g_stats = CacheStats{};
  for (const auto& [k, e] : g_cache) g_stats.bytes += e.cast.nbytes();
}

}  // namespace mixt::autocast
