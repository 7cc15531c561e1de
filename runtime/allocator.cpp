#include <mixt/runtime/allocator.h>

#include <cstdlib>

#include <mixt/runtime/check.h>

namespace mixt {
namespace {

class CpuAllocator final : public Allocator {
 public:
  DataPtr allocate(size_t nbytes, Device) override {
    if (nbytes == 0) return {};
    const size_t rounded = (nbytes + kCpuAlignment - 1) / kCpuAlignment * kCpuAlignment;
    void* p = std::aligned_alloc(kCpuAlignment, rounded);
    MIXT_CHECK(p != nullptr, "allocate", "out of host memory allocating {} bytes", nbytes);
    return {p, nullptr, [](void*, void* q) { std::free(q); }};
  }
};

CpuAllocator g_cpu_allocator;
std::atomic<Allocator*> g_allocators[kNumDeviceTypes] = {&g_cpu_allocator, nullptr};

}  // namespace

Allocator* cpu_allocator() { return &g_cpu_allocator; }

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
