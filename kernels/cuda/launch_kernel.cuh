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

#if defined(MIXT_CUDA_EMULATED)
#include <source_location>

#include <mixt/kernels/cuda/emulated/device_runtime.h>
#endif

namespace mixt::cuda {

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
