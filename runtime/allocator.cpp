#include <mixt/runtime/allocator.h>

#include <cstdlib>
#include <unordered_map>
#include <vector>

#include <mixt/runtime/check.h>

namespace mixt {
namespace {

std::atomic<int64_t> g_allocated{0}, g_peak{0}, g_allocations{0};

// Note [CPU block cache]: freed blocks are kept for the next allocation of the
// same size class, per thread (no lock): blocks under 32 KiB in power-of-two
// classes, larger ones rounded to whole pages. Training loops allocate the same
// shapes every step; reusing their blocks avoids malloc, mmap, page faults and
// zeroing per op. Each thread's cache holds at most 2 GiB (MIXT_CPU_CACHE_BYTES
// overrides; 0 disables it).
constexpr size_t kLargeFrom = 32 * 1024;
constexpr size_t kPage = 4096;

size_t cache_limit() {
  static const size_t limit = [] {
    const char* env = std::getenv("MIXT_CPU_CACHE_BYTES");
    return env ? static_cast<size_t>(std::strtoull(env, nullptr, 10)) : size_t{2} << 30;
  }();
  return limit;
}

// The size a request is served with (its class).
size_t block_size(size_t nbytes) {
  if (nbytes >= kLargeFrom) {
    // The rounding cannot wrap: no request reaches within a page of SIZE_MAX.
    MIXT_CHECK(nbytes <= (SIZE_MAX >> 1), "allocate", "{} bytes requested: more than any machine holds", nbytes);
    return (nbytes + kPage - 1) / kPage * kPage;
  }
  size_t s = kCpuAlignment;
  while (s < nbytes) s <<= 1;
  return s;
}

class BlockCache {
 public:
  ~BlockCache() { release(); }
  void* take(size_t bytes) {
    auto it = free_.find(bytes);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= bytes;
    return p;
  }
  // Keeps `p` for reuse; false when the cache is full (the caller frees it).
  bool give(void* p, size_t bytes) {
    if (cached_ + bytes > cache_limit()) return false;
    free_[bytes].push_back(p);
    cached_ += bytes;
    return true;
  }
  void release() {
    for (auto& [bytes, blocks] : free_)
      for (void* p : blocks) std::free(p);
    free_.clear();
    cached_ = 0;
  }
  size_t cached() const { return cached_; }

 private:
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
};

thread_local BlockCache t_cache;
thread_local bool t_cache_alive = true;  // false once this thread's cache is destroyed

struct CacheLifetime {
  ~CacheLifetime() { t_cache_alive = false; }
};
thread_local CacheLifetime t_cache_lifetime;

// Frees (or caches) a block whose size is stored in the deleter context.
void cpu_free(void* ctx, void* p) {
  const size_t bytes = static_cast<size_t>(reinterpret_cast<uintptr_t>(ctx));
  g_allocated.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  if (t_cache_alive && t_cache.give(p, bytes)) return;
  std::free(p);
}

class CpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device) override {
    if (nbytes == 0) return {};
    (void)t_cache_lifetime;  // constructed with the cache, destroyed before it
    const size_t rounded = block_size(nbytes);
    void* p = t_cache_alive ? t_cache.take(rounded) : nullptr;
    if (!p) p = std::aligned_alloc(rounded >= kLargeFrom ? kPage : kCpuAlignment, rounded);
    MIXT_CHECK(p != nullptr, "allocate", "out of host memory allocating {} bytes", nbytes);
    const int64_t now = g_allocated.fetch_add(static_cast<int64_t>(rounded), std::memory_order_relaxed) +
                        static_cast<int64_t>(rounded);
    int64_t peak = g_peak.load(std::memory_order_relaxed);
    while (now > peak && !g_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
    }
    g_allocations.fetch_add(1, std::memory_order_relaxed);
    return {p, reinterpret_cast<void*>(static_cast<uintptr_t>(rounded)), cpu_free};
  }
};

// The meta device's allocator: a storage records its size and owns no memory, so a
// model of any size can be traced (Note [Meta device]).
class MetaAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t, Device) override { return {}; }
};

CpuAllocator g_cpu_allocator;
MetaAllocator g_meta_allocator;
std::atomic<Allocator*> g_allocators[kNumDeviceTypes] = {&g_cpu_allocator, nullptr, &g_meta_allocator};

}  // namespace

Allocator* cpu_allocator() { return &g_cpu_allocator; }

MemoryStats cpu_memory_stats() {
  return {g_allocated.load(std::memory_order_relaxed), g_peak.load(std::memory_order_relaxed),
          g_allocations.load(std::memory_order_relaxed),
          t_cache_alive ? static_cast<int64_t>(t_cache.cached()) : 0};
}

void release_cpu_cache() {
  if (t_cache_alive) t_cache.release();
}

void reset_cpu_peak_memory() { g_peak.store(g_allocated.load(std::memory_order_relaxed), std::memory_order_relaxed); }

Allocator* allocator_for(DeviceType type) {
  Allocator* a = g_allocators[static_cast<int>(type)].load(std::memory_order_acquire);
  MIXT_CHECK(a != nullptr, "allocate", "no allocator for {}: CUDA is unavailable in this build or on this machine",
             device_type_name(type));
  return a;
}

void set_allocator(DeviceType type, Allocator* allocator) {
  g_allocators[static_cast<int>(type)].store(allocator, std::memory_order_release);
}

Storage make_storage(size_t nbytes, Device device) {
  Allocator* a = device.is_cpu() ? cpu_allocator() : allocator_for(device.type());
  return Storage::make(a->allocate(nbytes, device), nbytes, device);
}

}  // namespace mixt
