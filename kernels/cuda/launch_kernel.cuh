// The one way mixt launches a kernel: launch_kernel(kernel, {grid, block, shared
// bytes, stream}, args...) is `kernel<<<grid, block, shared bytes, stream>>>(args...)`
// under nvcc, and the emulated device's launch in an emulated build
// (-Dcuda=emulated, kernels/cuda/emulated/device_runtime.h), where the same call also
// records where it was made so a fault names the launch site. Device code only.
// The caller still reads the launch error with cudaGetLastError(), as after <<< >>>.
#pragma once

#include <cstddef>
#include <utility>

#include <cuda_runtime_api.h>

#include <mixt/kernels/common/launch_geometry.h>

#if defined(MIXT_CUDA_EMULATED)
#include <source_location>

#include <mixt/kernels/cuda/emulated/device_runtime.h>
#endif

namespace mixt::cuda {

// The grid of a launch whose blocks stride over `wanted` blocks' worth of work (grid-
// stride loops, row kernels): at most kMaxBlocks. The emulated device may lower the cap
// (MIXT_EMULATED_MAX_BLOCKS), so tests run the paths where one block handles several
// rows or chunks, which otherwise only inputs of millions of rows reach.
inline unsigned grid_blocks(int64_t wanted) {
#if defined(MIXT_CUDA_EMULATED)
  const int64_t lowered = emulated::grid_block_cap();
  const int64_t cap = lowered > 0 && lowered < kMaxBlocks ? lowered : kMaxBlocks;
#else
  const int64_t cap = kMaxBlocks;
#endif
  return static_cast<unsigned>(wanted < 1 ? 1 : wanted < cap ? wanted : cap);
}
// The grid of a grid-stride loop over `n` items, one thread each (blocks_for, capped).
inline unsigned grid_for(int64_t n) { return grid_blocks((n + kBlockThreads - 1) / kBlockThreads); }

// A launch's configuration: what goes between <<< and >>>.
struct KernelConfig {
  dim3 grid;
  dim3 block;
  size_t shared_bytes = 0;
  cudaStream_t stream = nullptr;
#if defined(MIXT_CUDA_EMULATED)
  std::source_location site = std::source_location::current();
#endif
};

// Queues kernel(args...) with configuration `c`.
template <class... P, class... A>
inline void launch_kernel(void (*kernel)(P...), const KernelConfig& c, A&&... args) {
#if defined(MIXT_CUDA_EMULATED)
  emulated::launch_kernel(kernel, c.grid, c.block, c.shared_bytes, c.stream, c.site, std::forward<A>(args)...);
#else
  kernel<<<c.grid, c.block, c.shared_bytes, c.stream>>>(std::forward<A>(args)...);
#endif
}

}  // namespace mixt::cuda

// Declares `name` as the block's dynamic shared memory (bytes, 16-byte aligned): the
// `extern __shared__` array under nvcc, the emulated block's exact-size buffer otherwise.
#if defined(MIXT_CUDA_EMULATED)
#define MIXT_DYNAMIC_SHARED_BYTES(name) unsigned char* name = ::mixt::cuda::emulated::dynamic_shared_memory()
#else
#define MIXT_DYNAMIC_SHARED_BYTES(name) extern __shared__ __align__(16) unsigned char name[]
#endif
