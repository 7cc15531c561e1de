// The error words of Note [Device-side errors]: one 4-byte word per device in mapped,
// page-locked host memory, written by kernels, read by the host after a wait.
#include <array>
#include <atomic>
#include <mutex>

#include <cuda_runtime_api.h>

#include <mixt/kernels/cuda/device_error.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/runtime/check.h>

namespace mixt::cuda {
namespace {

constexpr int kMaxDevices = 64;

struct ErrorWord {
  std::once_flag once;
  std::atomic<uint32_t*> host{nullptr};  // published once the word exists (raise_device_error reads it unlocked)
  uint32_t* device = nullptr;
};

std::array<ErrorWord, kMaxDevices>& words() {
  static std::array<ErrorWord, kMaxDevices> w;
  return w;
}

ErrorWord& word_of(int index, const char* where) {
  MIXT_CHECK(index >= 0 && index < kMaxDevices, where, "device index {} is out of range", index);
  ErrorWord& w = words()[static_cast<size_t>(index)];
  std::call_once(w.once, [&] {
    DeviceGuard guard(index, where);
    void* p = nullptr;
    check(cudaHostAlloc(&p, sizeof(uint32_t), cudaHostAllocMapped | cudaHostAllocPortable), where);
    *static_cast<uint32_t*>(p) = 0;
    void* d = nullptr;
    check(cudaHostGetDevicePointer(&d, p, 0), where);
    w.device = static_cast<uint32_t*>(d);
    w.host.store(static_cast<uint32_t*>(p), std::memory_order_release);
  });
  return w;
}

}  // namespace

uint32_t* device_error_word(int index) { return word_of(index, "device_error_word").device; }

void raise_device_error(int index, const char* where) {
  if (index < 0 || index >= kMaxDevices) return;
  ErrorWord& w = words()[static_cast<size_t>(index)];
  uint32_t* host = w.host.load(std::memory_order_acquire);
  if (host == nullptr) return;  // no kernel of this device has asked for the word yet
  // Read and clear in one step, so two threads that wait at once raise the error once.
  const uint32_t code = std::atomic_ref<uint32_t>(*host).exchange(0);
  if (code == 0) return;
  MIXT_FAIL(where, "a CUDA kernel queued earlier on cuda:{} met {} (Note [Device-side errors])", index,
            device_error_text(static_cast<DeviceError>(code)));
}

}  // namespace mixt::cuda
