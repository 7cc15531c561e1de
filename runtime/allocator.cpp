#include <mixt/runtime/allocator.h>

#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

#include <mixt/runtime/check.h>

namespace mixt {
namespace {

std::atomic<int64_t> g_allocated{0}, g_peak{0}, g_allocations{0};

// Note [CPU block cache]: blocks of 32 KiB and more are rounded to whole pages
// and kept after they are freed, for the next allocation of the same size.
// Training loops allocate the same shapes every step; reusing their blocks
// avoids an mmap, page faults and zeroing per op. The cache holds at most
// kCacheLimit bytes (MIXT_CPU_CACHE_BYTES overrides; 0 disables it).
constexpr size_t kCachedFrom = 32 * 1024;
constexpr size_t kPage = 4096;

class BlockCache {
 public:
  BlockCache() {
    if (const char* env = std::getenv("MIXT_CPU_CACHE_BYTES")) limit_ = static_cast<size_t>(std::strtoull(env, nullptr, 10));
  }
  ~BlockCache() { release(); }
  void* take(size_t bytes) {
    std::lock_guard lock(mutex_);
    auto it = free_.find(bytes);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= bytes;
    return p;
  }
  // Keeps `p` for reuse; returns false when the cache is full (the caller frees it).
  bool give(void* p, size_t bytes) {
    std::lock_guard lock(mutex_);
    if (cached_ + bytes > limit_) return false;
    free_[bytes].push_back(p);
    cached_ += bytes;
    return true;
  }
  void release() {
    std::lock_guard lock(mutex_);
    for (auto& [bytes, blocks] : free_)
      for (void* p : blocks) std::free(p);
    free_.clear();
    cached_ = 0;
  }
  size_t cached() {
    std::lock_guard lock(mutex_);
    return cached_;
  }

 private:
  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
  size_t limit_ = size_t{2} << 30;
};

BlockCache& block_cache() {
  static BlockCache* cache = new BlockCache();  // never destroyed: tensors may outlive static destruction
  return *cache;
}

// Frees (or caches) a block whose size is stored in the deleter context.
void cpu_free(void* ctx, void* p) {
  const size_t bytes = static_cast<size_t>(reinterpret_cast<uintptr_t>(ctx));
  g_allocated.fetch_sub(static_cast<int64_t>(bytes), std::memory_order_relaxed);
  if (bytes >= kCachedFrom && block_cache().give(p, bytes)) return;
  std::free(p);
}

class CpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device) override {
    if (nbytes == 0) return {};
    size_t rounded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    void* p = nullptr;
    if (rounded >= kCachedFrom) {
      rounded = (rounded + kPage - 1) / kPage * kPage;
      p = block_cache().take(rounded);
    }
    if (!p) p = std::aligned_alloc(rounded >= kCachedFrom ? kPage : kCpuAlignment, rounded);
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

CpuAllocator g_cpu_allocator;
std::atomic<Allocator*> g_allocators[kNumDeviceTypes] = {&g_cpu_allocator, nullptr};

}  // namespace

Allocator* cpu_allocator() { return &g_cpu_allocator; }

MemoryStats cpu_memory_stats() {
  return {g_allocated.load(std::memory_order_relaxed), g_peak.load(std::memory_order_relaxed),
          g_allocations.load(std::memory_order_relaxed), static_cast<int64_t>(block_cache().cached())};
}

void release_cpu_cache() { block_cache().release(); }

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
