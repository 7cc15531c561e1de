#include <mixt/autocast/cast_cache.h>

#include <array>
#include <cstdint>
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

// Note [Cast cache]: the cache is per thread (each thread's autocast state is, and its
// outermost exit clears it), so it needs no lock. The map owns the entries; in front of
// it, a few direct-mapped slots name recently used entries (an entry's address stays
// put until it is erased), so a repeated lookup is one compare instead of a hash and a
// bucket walk. Erasing an entry clears its slot. The slots and the counters are plain
// data, constant-initialized: reaching them costs no thread-local initialization check.
struct Recent {
  const TensorImpl* source = nullptr;
  ScalarType dtype = ScalarType::Undefined;
  Entry* entry = nullptr;
};
constexpr int kRecentBits = 5;

struct Front {
  std::array<Recent, size_t{1} << kRecentBits> recent{};
  CacheStats stats;

  Recent& slot(const TensorImpl* source, ScalarType dtype) {
    const uint64_t h = (reinterpret_cast<uintptr_t>(source) ^ static_cast<uint64_t>(dtype)) * 0x9e3779b97f4a7c15ull;
    return recent[h >> (64 - kRecentBits)];
  }
};
constinit thread_local Front t_front;

struct Entries {
  std::unordered_map<Key, Entry, KeyHash> map;
  ~Entries() { t_front.recent.fill({}); }  // the thread ends: no slot may outlive its entry
};
thread_local Entries t_entries;

}  // namespace

bool cacheable(const Tensor& t, ScalarType to, ScalarType device_lower_dtype, bool cache_enabled) {
  return cache_enabled && to == device_lower_dtype && t.dtype() == kFloat32 && t.requires_grad() && t.is_leaf() &&
         !t.impl()->is_view;
}

Tensor cached_cast(const Tensor& t, ScalarType to, bool use_cache, bool* hit) {
  *hit = false;
  if (t.dtype() == to) return t;
  if (!use_cache) return mixt::to(t, to);
  Front& front = t_front;
  const Key key{t.impl(), to};
  Recent& recent = front.slot(key.source, to);
  Entry* entry = recent.source == key.source && recent.dtype == to ? recent.entry : nullptr;
  if (!entry) {
    auto it = t_entries.map.find(key);
    if (it != t_entries.map.end()) entry = &it->second;
  }
  if (entry) {
    if (entry->version == t.version()) {
      ++front.stats.hits;
      *hit = true;
      recent = {key.source, to, entry};
      return entry->cast;
    }
    // The parameter changed in place (an optimizer step): never serve the stale cast.
    ++front.stats.invalidations;
    front.stats.bytes -= entry->cast.nbytes();
    if (recent.entry == entry) recent = {};
    t_entries.map.erase(key);
  }
  // Record the cast even under no_grad: a later use with grad must reach the parameter.
  Tensor cast;
  {
    autograd::EnableGradGuard grad_on;
    cast = mixt::to(t, to);
  }
  ++front.stats.misses;
  Entry& stored = t_entries.map.emplace(key, Entry{t, cast, t.version()}).first->second;
  recent = {key.source, to, &stored};
  front.stats.bytes += cast.nbytes();
  return cast;
}

CacheStats cache_stats() {
  CacheStats s = t_front.stats;
  s.entries = static_cast<int64_t>(t_entries.map.size());
  return s;
}

void clear_cache() {
  t_front.recent.fill({});
  t_entries.map.clear();
  t_front.stats.bytes = 0;
}

void reset_cache_stats() {
  t_front.stats = CacheStats{};
  for (const auto& [k, e] : t_entries.map) t_front.stats.bytes += e.cast.nbytes();
}

}  // namespace mixt::autocast
