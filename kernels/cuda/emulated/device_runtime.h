// The device side of the emulated CUDA device (-Dcuda=emulated): what a .cu file
// needs when the host C++ compiler compiles it instead of nvcc. It is included
// before anything else in every device translation unit of an emulated build
// (kernels/cuda/meson.build), so the CUDA headers see the qualifiers already
// defined (as nothing) and keep their host declarations.
//
// A kernel runs as one call per CUDA thread; the threads of a block are cooperative
// fibers on one CPU thread and the blocks are spread over the CPU's threads
// (kernels/cuda/emulated/executor.cpp). The built-in variables are thread-locals that
// the executor sets before it resumes a fiber. Note [Emulated CUDA device] in
// docs/notes/emulated-cuda.md has the design; docs/emulated-cuda.md the user's view.
#pragma once

#if !defined(MIXT_CUDA_EMULATED)
#error "device_runtime.h is for emulated builds only (-Dcuda=emulated)"
#endif

// Device code is being compiled for the emulated device (the counterpart of __CUDACC__).
#define MIXT_EMULATED_DEVICE_CODE 1

#define __host__
#define __device__
#define __global__
#define __shared__ static thread_local
#define __constant__ static
#define __managed__

#include <atomic>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <source_location>
#include <tuple>
#include <type_traits>
#include <utility>

#include <cuda_runtime_api.h>

#undef __launch_bounds__
#define __launch_bounds__(...)

// The built-in variables: the calling fiber's coordinates.
extern thread_local uint3 threadIdx __attribute__((tls_model("initial-exec")));
extern thread_local uint3 blockIdx __attribute__((tls_model("initial-exec")));
extern thread_local dim3 blockDim __attribute__((tls_model("initial-exec")));
extern thread_local dim3 gridDim __attribute__((tls_model("initial-exec")));
constexpr int warpSize = 32;

namespace mixt::cuda::emulated {

// One barrier of the block; `kind` 0 plain, 1 _or, 2 _and, 3 _count; returns the
// block's combined `predicate` for the counting forms. The barrier is named by its
// source line (`file`, `line`): code the host compiler duplicates still names one barrier.
int block_barrier(int kind, int predicate, const char* file, int line);
// One warp-synchronous operation of the calling thread: it waits until every lane that
// `mask` names has reached the same call (same source line, operation and mask), then
// returns its result — the source lane's `value` for the shuffles, the ballot of the
// lanes' `value != 0` for Ballot/Any/All. A lane that never arrives (it exited, waits at
// a __syncthreads or at another warp operation), a mask without the calling lane, or a
// bad width is a synccheck fault. Warps are 32 consecutive threads of the block's linear order.
enum class WarpOp : uint8_t { Sync, Shfl, ShflUp, ShflDown, ShflXor, Ballot, Any, All };
uint64_t warp_sync(WarpOp op, unsigned mask, uint64_t value, int arg, int width, const char* file, int line);
// The lanes of the caller's warp that have not exited (__activemask).
unsigned active_mask();

template <class T>
T shuffle(WarpOp op, unsigned mask, T var, int arg, int width, const char* file, int line) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable_v<T>, "warp shuffles move values of up to 8 bytes");
  uint64_t bits = 0;
  std::memcpy(&bits, &var, sizeof(T));
  bits = warp_sync(op, mask, bits, arg, width, file, line);
  T out;
  std::memcpy(&out, &bits, sizeof(T));
  return out;
}

// The block's dynamic shared memory (exactly the launch's size, poisoned at block start).
unsigned char* dynamic_shared_memory();
// MIXT_EMULATED_MAX_BLOCKS: the most blocks a grid-stride or row-striding launch uses
// (0: the GPU's cap; mixt::cuda::grid_blocks).
int64_t grid_block_cap();

// The launch of one kernel: limits checked, the grid queued on `stream` as one piece
// of stream-ordered work. `run_thread(params)` runs one CUDA thread. Returns the
// launch error (also left for cudaGetLastError, as the real runtime does).
// A kernel argument of pointer type, checked at launch (memcheck).
struct PointerArgument {
  int index = 0;  // the argument's position
  const void* value = nullptr;
};
struct LaunchRequest {
  const void* kernel = nullptr;  // identifies the kernel (cudaFuncSetAttribute)
  dim3 grid, block;
  size_t shared_bytes = 0;
  cudaStream_t stream = nullptr;
  size_t param_bytes = 0;
  std::source_location site;
  size_t params_object_bytes = 0;  // the parameter block's size as the executor copies it
  const PointerArgument* pointers = nullptr;
  int pointer_count = 0;
};
using ThreadBody = void (*)(const void* params);
using ParamsCopy = void* (*)(const void* params);  // heap copy of the parameter block
using ParamsFree = void (*)(void* params);
cudaError_t launch(const LaunchRequest& request, const void* params, ThreadBody body, ParamsCopy copy,
                   ParamsFree destroy);

template <class Kernel, class Tuple>
struct Thunk {
  static void run(const void* p) {
    // Each CUDA thread gets its own copy of the parameters (they are by value).
    Tuple args = *static_cast<const Tuple*>(p);
    std::apply(*std::get<0>(args), std::move(std::get<1>(args)));
  }
  static void* copy(const void* p) { return new Tuple(*static_cast<const Tuple*>(p)); }
  static void destroy(void* p) { delete static_cast<Tuple*>(p); }
};

template <class... P>
constexpr size_t param_bytes() {
  return (size_t{0} + ... + sizeof(P));
}

// The arguments of pointer type (to objects) among `args`, in `out`; returns how many.
template <class... P>
int pointer_arguments(const std::tuple<P...>& args, PointerArgument* out) {
  int n = 0, index = 0;
  std::apply(
      [&](const auto&... a) {
        const auto one = [&](const auto& v) {
          using V = std::decay_t<decltype(v)>;
          if constexpr (std::is_pointer_v<V> && std::is_object_v<std::remove_pointer_t<V>>)
            out[n++] = PointerArgument{index, static_cast<const void*>(v)};
          ++index;
        };
        (one(a), ...);
      },
      args);
  return n;
}

// The emulated `kernel<<<grid, block, shared_bytes, stream>>>(args...)`.
template <class... P, class... A>
cudaError_t launch_kernel(void (*kernel)(P...), dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                          std::source_location site, A&&... args) {
  using Params = std::tuple<std::decay_t<P>...>;
  using Tuple = std::tuple<void (*)(P...), Params>;
  const Tuple t{kernel, Params(std::forward<A>(args)...)};
  PointerArgument pointers[sizeof...(P) + 1];
  const int pointer_count = pointer_arguments(std::get<1>(t), pointers);
  const LaunchRequest r{reinterpret_cast<const void*>(kernel), grid, block, shared_bytes, stream,
                        param_bytes<P...>(), site, sizeof(Tuple), pointers, pointer_count};
  return launch(r, &t, &Thunk<void (*)(P...), Tuple>::run, &Thunk<void (*)(P...), Tuple>::copy,
                &Thunk<void (*)(P...), Tuple>::destroy);
}

}  // namespace mixt::cuda::emulated

// ---- the intrinsics mixt's device code uses ----
// Each names its call's source line (the default arguments are evaluated at the call).
inline void __syncthreads(const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  mixt::cuda::emulated::block_barrier(0, 0, file, line);
}
inline int __syncthreads_or(int p, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return mixt::cuda::emulated::block_barrier(1, p, file, line);
}
inline int __syncthreads_and(int p, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return mixt::cuda::emulated::block_barrier(2, p, file, line);
}
inline int __syncthreads_count(int p, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return mixt::cuda::emulated::block_barrier(3, p, file, line);
}
// The warp intrinsics (CUDA C++ Programming Guide, warp shuffle, vote and __syncwarp).
template <class T>
inline T __shfl_sync(unsigned mask, T var, int src_lane, int width = warpSize, const char* file = __builtin_FILE(),
                     int line = __builtin_LINE()) {
  return mixt::cuda::emulated::shuffle(mixt::cuda::emulated::WarpOp::Shfl, mask, var, src_lane, width, file, line);
}
template <class T>
inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize, const char* file = __builtin_FILE(),
                        int line = __builtin_LINE()) {
  return mixt::cuda::emulated::shuffle(mixt::cuda::emulated::WarpOp::ShflUp, mask, var, static_cast<int>(delta), width,
                                       file, line);
}
template <class T>
inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize,
                          const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return mixt::cuda::emulated::shuffle(mixt::cuda::emulated::WarpOp::ShflDown, mask, var, static_cast<int>(delta),
                                       width, file, line);
}
template <class T>
inline T __shfl_xor_sync(unsigned mask, T var, int lane_mask, int width = warpSize, const char* file = __builtin_FILE(),
                         int line = __builtin_LINE()) {
  return mixt::cuda::emulated::shuffle(mixt::cuda::emulated::WarpOp::ShflXor, mask, var, lane_mask, width, file, line);
}
inline unsigned __ballot_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  return static_cast<unsigned>(
      mixt::cuda::emulated::warp_sync(mixt::cuda::emulated::WarpOp::Ballot, mask, predicate != 0, 0, 32, file, line));
}
inline int __any_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return static_cast<int>(
      mixt::cuda::emulated::warp_sync(mixt::cuda::emulated::WarpOp::Any, mask, predicate != 0, 0, 32, file, line));
}
inline int __all_sync(unsigned mask, int predicate, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  return static_cast<int>(
      mixt::cuda::emulated::warp_sync(mixt::cuda::emulated::WarpOp::All, mask, predicate != 0, 0, 32, file, line));
}
inline void __syncwarp(unsigned mask = 0xffffffffu, const char* file = __builtin_FILE(), int line = __builtin_LINE()) {
  mixt::cuda::emulated::warp_sync(mixt::cuda::emulated::WarpOp::Sync, mask, 0, 0, 32, file, line);
}
inline unsigned __activemask() { return mixt::cuda::emulated::active_mask(); }

inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline void __threadfence_block() { std::atomic_thread_fence(std::memory_order_seq_cst); }

template <class T>
inline T atomicAdd(T* address, T value) {
  return std::atomic_ref<T>(*address).fetch_add(value);
}
template <class T>
inline T atomicCAS(T* address, T compare, T value) {
  std::atomic_ref<T>(*address).compare_exchange_strong(compare, value);
  return compare;
}
template <class T>
inline T atomicExch(T* address, T value) {
  return std::atomic_ref<T>(*address).exchange(value);
}
template <class T>
inline T atomicMax(T* address, T value) {
  std::atomic_ref<T> a(*address);
  T old = a.load();
  while (old < value && !a.compare_exchange_weak(old, value)) {
  }
  return old;
}
template <class T>
inline T atomicMin(T* address, T value) {
  std::atomic_ref<T> a(*address);
  T old = a.load();
  while (value < old && !a.compare_exchange_weak(old, value)) {
  }
  return old;
}
