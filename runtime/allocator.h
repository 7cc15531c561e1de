// Allocators and the storage they own. CPU memory is 64-byte aligned; the CUDA
// backend registers its own allocator for DeviceType::CUDA.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include <mixt/runtime/device.h>
#include <mixt/runtime/intrusive_ptr.h>

namespace mixt {

// Memory plus the function that frees it.
struct DataPtr {
  void* ptr = nullptr;
  void* ctx = nullptr;
  void (*deleter)(void* ctx, void* ptr) = nullptr;
};

class Allocator {
 public:
  virtual ~Allocator() = default;
  // `nbytes` of memory on `device` (nullptr for 0 bytes).
  virtual DataPtr allocate(size_t nbytes, Device device) = 0;
};

constexpr size_t kCpuAlignment = 64;

// The CPU allocator (64-byte aligned).
Allocator* cpu_allocator();

// Bytes the CPU allocator has handed out: now, and at most since the last reset.
struct MemoryStats {
  int64_t allocated_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t allocations = 0;  // number of allocate() calls
  int64_t cached_bytes = 0; // freed blocks this thread keeps for reuse (Note [CPU block cache])
};
MemoryStats cpu_memory_stats();
// Returns this thread's cached free blocks to the system.
void release_cpu_cache();
// Sets the peak to the current allocation.
void reset_cpu_peak_memory();
// The allocator registered for `type`; throws mixt::Error if none (CUDA unavailable).
Allocator* allocator_for(DeviceType type);
// Registers the allocator for a device type (the CUDA backend does this).
void set_allocator(DeviceType type, Allocator* allocator);

// Ref-counted memory of one device. Views share it; its version counter counts
// in-place writes through any of them (autograd checks it).
struct StorageImpl {
  StorageImpl(DataPtr data, size_t nbytes, Device device) : data(data), nbytes(nbytes), device(device) {}
  ~StorageImpl() {
    if (data.deleter) data.deleter(data.ctx, data.ptr);
  }
  StorageImpl(const StorageImpl&) = delete;
  StorageImpl& operator=(const StorageImpl&) = delete;

  std::atomic<int32_t> refcount_{0};
  DataPtr data;
  size_t nbytes;
  Device device;
  std::atomic<uint32_t> version{0};
};
using Storage = IntrusivePtr<StorageImpl>;

// New storage of `nbytes` on `device` from its allocator.
Storage make_storage(size_t nbytes, Device device);

}  // namespace mixt
