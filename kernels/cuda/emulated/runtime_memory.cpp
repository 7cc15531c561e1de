// The emulated CUDA runtime, part three: device and pinned memory, copies and
// memsets. Device allocations are exact-size host allocations (256-byte aligned, as
// cudaMalloc guarantees), so AddressSanitizer sees an access past one; they start
// filled with 0xff bytes (NaN in every floating type) so a read of memory nobody wrote
// shows. A per-device cap (MIXT_EMULATED_MEMORY) makes cudaMalloc run out like a GPU.
// Copies check their ranges against the allocations, as the real runtime's
// direction checks do, and follow its host-synchronisation rules: pageable
// host-to-device copies are staged (the caller may reuse its buffer at once),
// device-to-pageable-host copies return only when done, pinned copies are truly
// asynchronous (deferred mode runs them later).
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <vector>

#include <mixt/kernels/cuda/emulated/access_checks.h>
#include <mixt/kernels/cuda/emulated/emulator.h>
#include <mixt/kernels/cuda/emulated/runtime_state.h>

namespace mixt::cuda::emulated {
namespace {

struct Block {
  MemoryKind kind = MemoryKind::None;
  int device = -1;
  size_t bytes = 0;
};

std::mutex g_mutex;
std::map<const char*, Block> g_blocks;  // by base address
size_t g_used[16] = {};
constexpr std::align_val_t kAlign{256};

// The block containing p (nullptr when none does); caller holds g_mutex.
const std::pair<const char* const, Block>* block_of(const void* p) {
  const char* c = static_cast<const char*>(p);
  auto it = g_blocks.upper_bound(c);
  if (it == g_blocks.begin()) return nullptr;
  --it;
  // A zero-byte block holds no address; others hold [base, base + bytes).
  if (c < it->first || c >= it->first + it->second.bytes) return nullptr;
  return &*it;
}

cudaError_t allocate(void** out, size_t bytes, MemoryKind kind) {
  if (out == nullptr) return set_last_error(cudaErrorInvalidValue);
  if (const cudaError_t e = sticky_error(); e != cudaSuccess) return e;
  *out = nullptr;
  if (bytes == 0) return cudaSuccess;
  const int device = current_device();
  std::lock_guard<std::mutex> lock(g_mutex);
  if (kind == MemoryKind::Device && bytes > settings().memory_bytes - g_used[device])
    return set_last_error(cudaErrorMemoryAllocation);
  void* p = ::operator new[](bytes, kAlign, std::nothrow);
  if (p == nullptr) return set_last_error(cudaErrorMemoryAllocation);
  std::memset(p, kind == MemoryKind::Device ? 0xff : 0, bytes);
  // The access checks' shadow state (a byte per byte): no room for it is out of memory too.
  if (kind == MemoryKind::Device && !track_device_region(static_cast<const char*>(p), bytes, device)) {
    ::operator delete[](p, kAlign);
    return set_last_error(cudaErrorMemoryAllocation);
  }
  if (kind == MemoryKind::PinnedHost) track_pinned_region(static_cast<const char*>(p), bytes);
  g_blocks[static_cast<const char*>(p)] = Block{kind, kind == MemoryKind::Device ? device : -1, bytes};
  if (kind == MemoryKind::Device) g_used[device] += bytes;
  touch_context(device);
  *out = p;
  return cudaSuccess;
}

cudaError_t release(void* p, MemoryKind kind) {
  if (p == nullptr) return cudaSuccess;
  // cudaFree waits for the allocation's device, cudaFreeHost for every device.
  const Allocation a = find_allocation(p, 1);
  if (kind == MemoryKind::Device && a.kind == MemoryKind::Device) synchronize_device(a.device);
  else synchronize_all();
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = g_blocks.find(static_cast<const char*>(p));
  if (it == g_blocks.end() || it->second.kind != kind) return set_last_error(cudaErrorInvalidValue);
  if (kind == MemoryKind::Device) g_used[it->second.device] -= it->second.bytes;
  g_blocks.erase(it);
  untrack_region(static_cast<const char*>(p));
  ::operator delete[](p, kAlign);
  return cudaSuccess;
}

// What a copy endpoint is: device-side (device or pinned memory), pageable host, or bad.
enum class Side { Device, Pinned, Pageable, Bad };

Side side_of(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto* b = block_of(p);
  if (b == nullptr) return Side::Pageable;
  if (static_cast<const char*>(p) + bytes > b->first + b->second.bytes) return Side::Bad;  // runs past its block
  return b->second.kind == MemoryKind::Device ? Side::Device : Side::Pinned;
}

// Checks a copy's endpoints against its direction (cudaMemcpyDefault infers it).
bool direction_ok(Side dst, Side src, cudaMemcpyKind kind) {
  if (dst == Side::Bad || src == Side::Bad) return false;
  const bool dst_dev = dst != Side::Pageable, src_dev = src != Side::Pageable;
  switch (kind) {
    case cudaMemcpyHostToHost: return true;
    case cudaMemcpyHostToDevice: return dst_dev;
    case cudaMemcpyDeviceToHost: return src_dev;
    case cudaMemcpyDeviceToDevice: return dst_dev && src_dev;
    case cudaMemcpyDefault: return true;
  }
  return false;
}

// Queues one copy of `rows` rows of `width` bytes; `sync` makes the host wait for it.
cudaError_t copy(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t rows,
                 cudaMemcpyKind kind, cudaStream_t stream, bool sync) {
  if (const cudaError_t e = sticky_error(); e != cudaSuccess) return e;
  if (width == 0 || rows == 0) return cudaSuccess;
  if ((dst == nullptr || src == nullptr) || (rows > 1 && (width > dpitch || width > spitch)))
    return set_last_error(cudaErrorInvalidValue);
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return set_last_error(cudaErrorInvalidMemcpyDirection);
  const size_t dspan = (rows - 1) * dpitch + width, sspan = (rows - 1) * spitch + width;
  const Side ds = side_of(dst, dspan), ss = side_of(src, sspan);
  if (!direction_ok(ds, ss, kind)) return set_last_error(cudaErrorInvalidValue);
  std::shared_ptr<std::vector<char>> staged;
  const char* from = static_cast<const char*>(src);
  size_t from_pitch = spitch;
  if (ss == Side::Pageable && ds != Side::Pageable && !sync) {
    // Pageable to device: the runtime stages the source before returning.
    staged = std::make_shared<std::vector<char>>(rows * width);
    for (size_t r = 0; r < rows; ++r) std::memcpy(staged->data() + r * width, from + r * spitch, width);
    from = staged->data();
    from_pitch = width;
  }
  char* to = static_cast<char*>(dst);
  const bool device_source = ss == Side::Device;
  const cudaError_t q = enqueue(stream, "cudaMemcpy", [=] {
    for (size_t r = 0; r < rows; ++r) {
      std::memmove(to + r * dpitch, from + r * from_pitch, width);
      // initcheck: a copy from device memory carries its written bits; others write.
      if (device_source) copy_written_state(to + r * dpitch, from + r * from_pitch, width);
      else note_written(to + r * dpitch, width);
    }
    (void)staged;
  });
  if (q != cudaSuccess) return q;
  // Device to pageable host returns only once the copy is done, as does every synchronous copy.
  if (sync || (ds == Side::Pageable && ss != Side::Pageable)) return set_last_error(synchronize_stream(stream));
  return cudaSuccess;
}

cudaError_t fill(void* p, int value, size_t bytes, cudaStream_t stream, bool sync) {
  if (const cudaError_t e = sticky_error(); e != cudaSuccess) return e;
  if (bytes == 0) return cudaSuccess;
  const Side s = side_of(p, bytes);
  if (s != Side::Device && s != Side::Pinned) return set_last_error(cudaErrorInvalidValue);
  char* to = static_cast<char*>(p);
  const cudaError_t q = enqueue(stream, "cudaMemset", [=] {
    std::memset(to, value, bytes);
    note_written(to, bytes);
  });
  if (q != cudaSuccess) return q;
  return sync ? set_last_error(synchronize_stream(stream)) : cudaSuccess;
}

}  // namespace

Allocation find_allocation(const void* p, size_t bytes) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto* b = block_of(p);
  if (b == nullptr || static_cast<const char*>(p) + bytes > b->first + b->second.bytes) return Allocation{};
  return Allocation{b->second.kind, b->second.device, b->first, b->second.bytes};
}

bool device_accessible(const void* p, size_t bytes) {
  if (bytes == 0) return true;
  return find_allocation(p, bytes).kind != MemoryKind::None;
}

}  // namespace mixt::cuda::emulated

using namespace mixt::cuda::emulated;

extern "C" {

cudaError_t cudaMalloc(void** p, size_t bytes) { return allocate(p, bytes, MemoryKind::Device); }
cudaError_t cudaFree(void* p) { return release(p, MemoryKind::Device); }
cudaError_t cudaMallocHost(void** p, size_t bytes) { return allocate(p, bytes, MemoryKind::PinnedHost); }

cudaError_t cudaHostAlloc(void** p, size_t bytes, unsigned int flags) {
  constexpr unsigned kKnown = cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
  if ((flags & ~kKnown) != 0) return set_last_error(cudaErrorInvalidValue);
  return allocate(p, bytes, MemoryKind::PinnedHost);
}

cudaError_t cudaFreeHost(void* p) { return release(p, MemoryKind::PinnedHost); }

cudaError_t cudaHostGetDevicePointer(void** device, void* host, unsigned int flags) {
  if (device == nullptr || flags != 0) return set_last_error(cudaErrorInvalidValue);
  if (find_allocation(host, 1).kind != MemoryKind::PinnedHost) return set_last_error(cudaErrorInvalidValue);
  *device = host;  // unified addressing: the same address on both sides
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* a, const void* p) {
  if (a == nullptr) return set_last_error(cudaErrorInvalidValue);
  *a = cudaPointerAttributes{};
  const Allocation al = find_allocation(p, 1);
  a->device = al.kind == MemoryKind::Device ? al.device : current_device();
  if (al.kind == MemoryKind::Device) {
    a->type = cudaMemoryTypeDevice;
    a->devicePointer = const_cast<void*>(p);
  } else if (al.kind == MemoryKind::PinnedHost) {
    a->type = cudaMemoryTypeHost;
    a->devicePointer = const_cast<void*>(p);
    a->hostPointer = const_cast<void*>(p);
  } else {
    a->type = cudaMemoryTypeUnregistered;
    a->hostPointer = const_cast<void*>(p);
  }
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const int d = current_device();
  if (free_bytes) *free_bytes = settings().memory_bytes - g_used[d];
  if (total) *total = settings().memory_bytes;
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind) {
  return copy(dst, count, src, count, count, 1, kind, nullptr, true);
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t count, enum cudaMemcpyKind kind, cudaStream_t s) {
  return copy(dst, count, src, count, count, 1, kind, s, false);
}

cudaError_t cudaMemcpy2DAsync(void* dst, size_t dpitch, const void* src, size_t spitch, size_t width, size_t height,
                              enum cudaMemcpyKind kind, cudaStream_t s) {
  return copy(dst, dpitch, src, spitch, width, height, kind, s, false);
}

cudaError_t cudaMemcpyPeerAsync(void* dst, int dst_device, const void* src, int src_device, size_t count,
                                cudaStream_t s) {
  if (count == 0) return cudaSuccess;
  const Allocation d = find_allocation(dst, count), a = find_allocation(src, count);
  if (d.kind != MemoryKind::Device || a.kind != MemoryKind::Device || d.device != dst_device ||
      a.device != src_device)
    return set_last_error(cudaErrorInvalidValue);
  return copy(dst, count, src, count, count, 1, cudaMemcpyDeviceToDevice, s, false);
}

cudaError_t cudaMemset(void* p, int value, size_t count) { return fill(p, value, count, nullptr, true); }
cudaError_t cudaMemsetAsync(void* p, int value, size_t count, cudaStream_t s) {
  return fill(p, value, count, s, false);
}

}  // extern "C"
