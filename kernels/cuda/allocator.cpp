// The CUDA adapter of the caching allocator (runtime/caching_allocator.h): device
// memory through cudaMalloc/cudaFree, pinned host memory through cudaHostAlloc/
// cudaFreeHost, and CUDA events for blocks used on other streams. Allocations are
// ordered on the current stream of their device (kernels/cuda/stream.h).
#include <atomic>
#include <mutex>

#include <cuda_runtime_api.h>

#if defined(MIXT_CUDA_EMULATED)
#include <mixt/kernels/cuda/emulated/emulator.h>
#endif
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/checked.h>
#include <mixt/runtime/cuda.h>
#include <mixt/runtime/cuda_memory.h>
#include <mixt/runtime/tensor.h>
#include <mixt/runtime/tensor_impl.h>

namespace mixt::cuda {
namespace {

// An event of a pool: made on the device of the stream it is first recorded on (the
// pinned pool records on streams of every device).
struct PooledEvent {
  cudaEvent_t event = nullptr;
  int device = -1;
};

// The event half of the CUDA backends.
class CudaEventBackend : public PoolBackend {
 public:
  PoolEvent create_event() override { return new PooledEvent; }

  void record_event(PoolEvent e, StreamKey key) override {
    auto* ev = static_cast<PooledEvent*>(e);
    const Stream stream = stream_of_key(key);
    DeviceGuard guard(stream.device_index(), "free");
    if (ev->event && ev->device != stream.device_index()) {
      cudaEventDestroy(ev->event);
      ev->event = nullptr;
    }
    if (!ev->event) {
      check(cudaEventCreateWithFlags(&ev->event, cudaEventDisableTiming), "free");
      ev->device = stream.device_index();
    }
    check(cudaEventRecord(ev->event, native(stream)), "free");
  }

  bool event_done(PoolEvent e) override {
    const cudaError_t err = cudaEventQuery(static_cast<PooledEvent*>(e)->event);
    if (err == cudaErrorNotReady) {
      cudaGetLastError();
      return false;
    }
    check(err, "allocate");
    return true;
  }

  void destroy_event(PoolEvent e) override {
    auto* ev = static_cast<PooledEvent*>(e);
    if (ev->event && cudaEventDestroy(ev->event) != cudaSuccess) cudaGetLastError();
    delete ev;
  }
};

// nullptr for an out-of-memory error (cleared), mixt::Error for any other.
void* malloc_result(cudaError_t err, void* p, const char* op) {
  if (err == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    return nullptr;
  }
  check(err, op);
  return p;
}

// Device memory of one device.
class DeviceBackend final : public CudaEventBackend {
 public:
  explicit DeviceBackend(int device) : device_(device) {}
  void* raw_malloc(size_t bytes) override {
    DeviceGuard guard(device_, "allocate");
    void* p = nullptr;
    const cudaError_t err = cudaMalloc(&p, bytes);  // before p is read: argument order is unspecified
    p = malloc_result(err, p, "allocate");
#if defined(MIXT_CUDA_EMULATED)
    if (p) emulated::note_segment(p, bytes);
#endif
    return p;
  }
#if defined(MIXT_CUDA_EMULATED)
  // The emulated device's memcheck knows each block's live extent: a kernel that runs
  // past a tensor's bytes faults even inside the block's 512-byte rounding.
  void block_state(void* p, size_t bytes, size_t requested, StreamKey key) override {
    const Stream stream = stream_of_key(key);
    DeviceGuard guard(stream.device_index(), "allocate");  // a legacy stream names the current device's
    emulated::note_block(native(stream), p, bytes, requested);
  }
#endif
  void raw_free(void* p, size_t) override {
    DeviceGuard guard(device_, "cuda::empty_cache");
    check(cudaFree(p), "cuda::empty_cache");
  }

 private:
  int device_;
};

// Pinned host memory, usable from every device.
class PinnedBackend final : public CudaEventBackend {
 public:
  void* raw_malloc(size_t bytes) override {
    void* p = nullptr;
    const cudaError_t err = cudaHostAlloc(&p, bytes, cudaHostAllocPortable);
    return malloc_result(err, p, "cuda::empty_pinned");
  }
  void raw_free(void* p, size_t) override { check(cudaFreeHost(p), "cuda::empty_cache"); }
};

struct DevicePool {
  explicit DevicePool(int device) : backend(device), pool(backend, fmt::format("cuda:{}", device)) {}
  DeviceBackend backend;
  CachingPool pool;
};

struct PinnedPool {
  PinnedPool() : pool(backend, "pinned host memory") {}
  PinnedBackend backend;
  CachingPool pool;
};

// Pools are made on first use and never destroyed: storages may be freed during static
// destruction, after any pool object would be gone.
std::atomic<DevicePool*> g_pools[Device::kMaxCudaIndex + 1];
std::mutex g_pools_mutex;

DevicePool* find_pool(int index) { return g_pools[index].load(std::memory_order_acquire); }

DevicePool& pool_for(int index) {
  if (DevicePool* p = find_pool(index)) return *p;
  std::lock_guard<std::mutex> lock(g_pools_mutex);
  DevicePool* p = g_pools[index].load(std::memory_order_relaxed);
  if (!p) {
    p = new DevicePool(index);
    g_pools[index].store(p, std::memory_order_release);
  }
  return *p;
}

PinnedPool& pinned_pool() {
  static PinnedPool* pool = new PinnedPool;
  return *pool;
}

// Pinned blocks belong to the host: the host writes them in program order, so no
// stream orders their reuse; transfers that read or write them record their streams.
constexpr StreamKey kHostStream = ~StreamKey{0};

// The deleter of every block of a pool (`ctx` is the pool). Never throws: it runs in
// destructors; a free that fails (the CUDA runtime gone at exit) leaves the block out of use.
void pool_free(void* ctx, void* ptr) noexcept {
  try {
    static_cast<CachingPool*>(ctx)->free(ptr);
  } catch (...) {
  }
}

class CudaCachingAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device device) override {
    MIXT_CHECK(device.is_cuda() && device.index() >= 0 && device.index() < device_count(), "allocate",
               "cannot allocate on {}: {}", device,
               is_available() ? fmt::format("{} CUDA device(s) present", device_count())
                              : "CUDA is not available: " + unavailable_reason());
    if (nbytes == 0) return {};
    const int index = device.index();
    CachingPool& pool = pool_for(index).pool;
    const Stream stream = Stream::from_handle(device, current_native_stream(index));
    return {pool.allocate(nbytes, stream_key(stream)), &pool, &pool_free};
  }
};

CudaCachingAllocator g_allocator;

// The pool that owns `t`'s memory, or nullptr when `t`'s memory came from elsewhere.
CachingPool* owning_pool(const Tensor& t) {
  if (!t.defined()) return nullptr;
  const DataPtr& d = t.impl()->storage->data;
  return d.ptr && d.deleter == &pool_free ? static_cast<CachingPool*>(d.ctx) : nullptr;
}

}  // namespace

Allocator* cuda_allocator() { return &g_allocator; }

CachingPoolStats memory_stats(Device device) {
  MIXT_CHECK(device.is_cuda(), "cuda::memory_stats", "needs a CUDA device, not {}", device);
  const DevicePool* p = find_pool(device.index());
  return p ? p->pool.stats() : CachingPoolStats{};
}

void empty_cache() {
  if (!is_available()) return;
  for (int i = 0; i < device_count(); ++i)
    if (DevicePool* p = find_pool(i)) p->pool.empty_cache();
  pinned_pool().pool.empty_cache();
}

void reset_peak_memory_stats(Device device) {
  MIXT_CHECK(device.is_cuda(), "cuda::reset_peak_memory_stats", "needs a CUDA device, not {}", device);
  if (DevicePool* p = find_pool(device.index())) p->pool.reset_peak();
}

Tensor empty_pinned(const Shape& sizes, ScalarType dtype) {
  MIXT_CHECK(dtype != ScalarType::Undefined, "cuda::empty_pinned", "a tensor needs a dtype");
  MIXT_CHECK(is_available(), "cuda::empty_pinned", "CUDA is not available: {}", unavailable_reason());
  const int64_t bytes = checked_nbytes(checked_numel(sizes, "cuda::empty_pinned"), element_size(dtype),
                                       "cuda::empty_pinned");
  CachingPool& pool = pinned_pool().pool;
  void* p = pool.allocate(static_cast<size_t>(bytes), kHostStream);
  return from_blob(p, sizes, contiguous_strides(sizes), dtype, p ? &pool_free : nullptr, p ? &pool : nullptr);
}

bool is_pinned(const Tensor& t) {
  return t.defined() && t.is_cpu() && is_available() && owning_pool(t) == &pinned_pool().pool;
}

CachingPoolStats pinned_memory_stats() { return is_available() ? pinned_pool().pool.stats() : CachingPoolStats{}; }

void record_stream(const Tensor& t, const Stream& stream) {
  MIXT_CHECK(t.defined(), "cuda::record_stream", "the tensor is undefined");
  MIXT_CHECK(t.is_cuda() || t.is_cpu(), "cuda::record_stream", "needs a CUDA or pinned CPU tensor, not one on {}",
             t.device());
  check_device(stream.device(), "cuda::record_stream");
  if (CachingPool* pool = owning_pool(t)) pool->record_stream(t.impl()->storage->data.ptr, stream_key(stream));
}

}  // namespace mixt::cuda
