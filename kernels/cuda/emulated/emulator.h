// The emulated CUDA device's host-side core, as its library stand-ins (cuBLASLt,
// cuBLAS, NCCL) and its own tests see it: stream-ordered work, the device memory
// map, sticky faults and the emulator's settings. Emulated builds only
// (-Dcuda=emulated); applications use the CUDA runtime API (cuda_runtime_api.h),
// which kernels/cuda/emulated/runtime.cpp implements on top of this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include <cuda_runtime_api.h>

namespace mixt::cuda::emulated {

// ---- settings (read once from the environment; docs/emulated-cuda.md) ----
enum class BlockOrder { Natural, Reverse, Shuffle };
enum class AsyncMode { Eager, Deferred };
struct Settings {
  int device_count = 2;                       // MIXT_EMULATED_DEVICES
  size_t memory_bytes = size_t{8} << 30;      // MIXT_EMULATED_MEMORY, per device
  BlockOrder order = BlockOrder::Natural;     // MIXT_EMULATED_ORDER=natural|reverse|shuffle
  uint64_t seed = 1;                          // MIXT_EMULATED_SEED (shuffle order)
  AsyncMode async = AsyncMode::Eager;         // MIXT_EMULATED_ASYNC=eager|deferred
  int workers = 0;                            // MIXT_EMULATED_WORKERS (0: the CPU's threads)
  // MIXT_EMULATED_CHECKS=all|none|a comma list of memcheck,initcheck,racecheck: the
  // access checks of instrumented device code (kernels/cuda/emulated/access_checks.h).
  bool memcheck = true, initcheck = true, racecheck = true;
  // MIXT_EMULATED_MAX_BLOCKS: caps the grid of grid-stride and row-striding launches
  // (mixt::cuda::grid_blocks) so one block handles several rows or chunks; 0: no cap.
  int64_t max_blocks = 0;
  // The first malformed setting ("MIXT_EMULATED_ORDER=sideways is not valid (expected ...)"):
  // then there is no device, and cudaGetDeviceCount fails with cudaErrorInitializationError,
  // whose text carries this message (mixt raises it from the first CUDA use, never exits).
  std::string error;
};
const Settings& settings();
// The name every emulated device reports (cudaDeviceProp::name).
constexpr const char* kDeviceName = "mixt emulated CUDA device (H200 limits, runs on the CPU)";

// ---- stream-ordered work ----
// Queues `work` on `stream` (nullptr / cudaStreamLegacy: the current device's legacy
// default stream) with the CUDA runtime's ordering: issue order within a stream, the
// legacy stream against every blocking stream of its device, events across streams.
// Eager mode runs it before returning; deferred mode runs it at the next
// synchronisation point that needs it. `what` names it in fault reports.
// Returns cudaErrorInvalidResourceHandle for an unknown or destroyed stream, or the
// sticky fault.
cudaError_t enqueue(cudaStream_t stream, const char* what, std::function<void()> work);
// Runs `fn` once the work queued on `stream` so far has run (at once when none is
// pending), as part of that work: no new piece of work, so stream and event queries
// are unchanged. For the emulator's own bookkeeping (the allocator's block marks).
void after_stream_work(cudaStream_t stream, std::function<void()> fn);
// Runs everything queued on `stream` so far (and what it depends on): a host wait.
cudaError_t synchronize_stream(cudaStream_t stream);
// The device a stream belongs to (-1 for an unknown handle); the legacy stream
// handles name the current device.
int stream_device(cudaStream_t stream);
// The current device of the calling host thread.
int current_device();

// ---- memory ----
enum class MemoryKind { None, Device, PinnedHost };
struct Allocation {
  MemoryKind kind = MemoryKind::None;
  int device = -1;          // for Device
  const char* base = nullptr;
  size_t bytes = 0;
};
// The allocation that holds all of [p, p + bytes) (kind None when none does).
Allocation find_allocation(const void* p, size_t bytes);
// True when a kernel or library call of the current device may touch [p, p + bytes):
// device memory of any device (peer access) or mapped pinned host memory.
bool device_accessible(const void* p, size_t bytes);

// The caching allocator's blocks, as memcheck sees them (access_checks.h). A new
// segment from cudaMalloc holds no block yet: none of it is addressable.
void note_segment(const void* p, size_t bytes);
// In order with `stream`'s work: the block [p, p + bytes) is handed out with its first
// `live_bytes` addressable and unwritten (the rest is the allocator's rounding), or, with
// `live_bytes` 0, it is free again and nothing in it is addressable.
void note_block(cudaStream_t stream, const void* p, size_t bytes, size_t live_bytes);

// True once a call has created device `device`'s primary context (cudaSetDevice,
// an allocation, a launch): a process that should use one GPU must not touch others.
bool context_created(int device);
// Forgets which contexts were created (tests of the emulator only).
void forget_contexts();

// ---- faults ----
// Records a fault found while running device work (a kernel's barrier divergence, a
// library call's bad pointer): `code` becomes the context's sticky error and
// cudaGetErrorString(code) returns `message` from now on. Printed once to stderr.
void record_fault(cudaError_t code, const std::string& message);
// The last fault's message ("" when none).
std::string last_fault();
// Forgets every fault and the sticky error (tests of the emulator only; a real
// context stays broken until the process exits).
void reset_faults();
// Sets the per-thread last error, as a failed call does.
cudaError_t set_last_error(cudaError_t e);

}  // namespace mixt::cuda::emulated
