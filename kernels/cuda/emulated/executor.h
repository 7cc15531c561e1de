// The emulated device's launch limits and kernel attributes (launch_limits.cpp), as
// the executor (executor.cpp) and the runtime API (runtime.cpp) share them.
// Emulated builds only.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include <mixt/kernels/cuda/emulated/device_runtime.h>

namespace mixt::cuda::emulated {

// An H200's limits (compute capability 9.0; the CUDA C++ Programming Guide's tables).
namespace limits {
constexpr int kMaxThreadsPerBlock = 1024;
constexpr int kMaxBlockDim[3] = {1024, 1024, 64};
constexpr int kMaxGridDim[3] = {2147483647, 65535, 65535};
constexpr int kSharedPerBlock = 48 * 1024;          // without cudaFuncSetAttribute
constexpr int kSharedPerBlockOptin = 232448;        // 227 KiB, the most an attribute may raise it to
constexpr int kSharedPerMultiprocessor = 233472;    // 228 KiB
constexpr size_t kMaxParamBytes = 32764;
constexpr int kMultiprocessors = 132;
constexpr int kWarpSize = 32;
constexpr int kMaxThreadsPerMultiprocessor = 2048;
constexpr int kRegistersPerBlock = 65536;
constexpr size_t kConstantBytes = 65536;
constexpr int kStreamPriorityLeast = 0;
constexpr int kStreamPriorityGreatest = -5;
}  // namespace limits

// The launch error of `r` against the limits and the kernel's attributes
// (cudaErrorInvalidConfiguration for block and grid shapes, cudaErrorInvalidValue for
// shared memory and parameters), or cudaSuccess.
cudaError_t check_launch(const LaunchRequest& r);

}  // namespace mixt::cuda::emulated
