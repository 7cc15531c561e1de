// The emulated device's access checks (Note [Access instrumentation] in
// docs/notes/emulated-cuda.md): every load and store of device code reaches
// check_access() with its address, size and kind, and is checked against shadow state
// kept for every device allocation:
// - memcheck: the bytes must lie in a live block (a cudaMalloc allocation, or the part
//   of a caching-allocator segment that a tensor holds), in the block's shared memory,
//   the thread's own stack, or the program's static data;
// - initcheck: a read must see bytes written since their block was handed out;
// - racecheck: two threads of a block touching one shared-memory byte between the same
//   two barriers (at least one writing), or two blocks of a grid writing one global
//   byte without atomics, is a hazard.
// A failed check is a sticky fault naming the kernel's launch site, block, thread,
// address and what lies nearest; the thread's kernel stops there.
// Emulated builds only; the executor, the runtime and the allocator's backend use this.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include <cuda_runtime_api.h>

namespace mixt::cuda::emulated {

// ---- regions (runtime_memory.cpp, under its own lock) ----
// Device memory from cudaMalloc: every byte addressable, none written. False when the
// host has no room for its shadow state (cudaMalloc then fails as out of memory).
bool track_device_region(const char* base, size_t bytes, int device);
// Mapped pinned host memory: kernels may touch it, unchecked.
void track_pinned_region(const char* base, size_t bytes);
// cudaFree / cudaFreeHost.
void untrack_region(const char* base);

// ---- shadow updates (stream-ordered callers run these as queued work) ----
// Bytes [p, p + bytes) become addressable and unwritten (`live`), or not addressable.
void set_live(const void* p, size_t bytes, bool live);
// Bytes written by something other than instrumented device code (a copy, a memset, a
// library stand-in): they count as initialised.
void note_written(const void* p, size_t bytes);
// A device-to-device copy carries the source's initialised bits to the destination.
void copy_written_state(void* dst, const void* src, size_t bytes);

// ---- launches ----
// "" when a kernel pointer argument of device `device` may be dereferenced: device
// memory of that device, mapped pinned memory, the program's static data, or null;
// else why not (host memory, memory released by cudaFree, another device's memory).
std::string check_kernel_pointer(const void* p, int device);

// What one CPU thread is running: the block, the CUDA thread, and the ranges its
// accesses may touch without a check. The executor fills it; check_access reads it.
struct KernelAccess {
  const std::string* kernel = nullptr;  // "the kernel launched at ..."
  uint64_t launch_number = 0;
  int device = 0;
  uint3 block{};
  uint3 thread{};
  dim3 block_dim, grid_dim;
  unsigned thread_linear = 0;
  uint32_t block_tag = 0;                     // (launch, block) as racecheck records a global writer
  uintptr_t stack_lo = 0, stack_bytes = 0;    // the running fiber's stack
  uintptr_t shared_lo = 0, shared_bytes = 0;  // the block's dynamic shared memory
  uintptr_t params_lo = 0, params_bytes = 0;  // the launch's parameter block
  uintptr_t tls_lo = 0, tls_bytes = 0;        // threadIdx, blockIdx, blockDim, gridDim
  uint32_t phase = 0;                         // the barrier interval, unique on this CPU thread
  uint32_t* warp_epochs = nullptr;      // per warp: warp-synchronous operations completed
  bool memcheck = false, initcheck = false, racecheck = false;
};
// The calling CPU thread's kernel (nullptr outside one): the hooks return at once then.
extern thread_local KernelAccess* t_kernel_access __attribute__((tls_model("initial-exec")));

// A block starts on this CPU thread: a fresh barrier interval, and the racecheck shadow
// of its `shared_bytes` of shared memory.
void begin_block(KernelAccess& a);
// Every thread of the block passed a barrier.
void next_phase(KernelAccess& a);

enum class AccessKind : uint8_t { Read, Write, Atomic };
// Checks one access of device code (`pc`: the instruction's address, for the report);
// accesses to the running fiber's own stack are filtered out by the caller (the hooks).
void check_access(KernelAccess& a, const void* p, size_t bytes, AccessKind kind, const void* pc);

// Ends the calling CUDA thread's kernel after a failed check (the executor abandons the
// block; the grid stops). Defined by the executor.
[[noreturn]] void abandon_kernel();

}  // namespace mixt::cuda::emulated
