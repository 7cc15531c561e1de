// The launch checks of the emulated device and the kernel attributes they read
// (cudaFuncSetAttribute / cudaFuncGetAttributes): a launch that breaks an H200 limit
// does not run, and its error comes back through cudaGetLastError, not sticky.
#include <map>
#include <mutex>

#include <mixt/kernels/cuda/emulated/emulator.h>
#include <mixt/kernels/cuda/emulated/executor.h>

namespace mixt::cuda::emulated {
namespace {

struct KernelAttributes {
  int max_dynamic_shared = limits::kSharedPerBlock;
  int preferred_carveout = -1;
};

std::mutex g_mutex;
std::map<const void*, KernelAttributes>& attributes() {
  static std::map<const void*, KernelAttributes> m;
  return m;
}

int max_dynamic_shared(const void* kernel) {
  std::lock_guard<std::mutex> lock(g_mutex);
  const auto it = attributes().find(kernel);
  return it == attributes().end() ? limits::kSharedPerBlock : it->second.max_dynamic_shared;
}

}  // namespace

cudaError_t check_launch(const LaunchRequest& r) {
  const unsigned b[3] = {r.block.x, r.block.y, r.block.z}, g[3] = {r.grid.x, r.grid.y, r.grid.z};
  for (int i = 0; i < 3; ++i) {
    if (b[i] == 0 || b[i] > static_cast<unsigned>(limits::kMaxBlockDim[i])) return cudaErrorInvalidConfiguration;
    if (g[i] == 0 || g[i] > static_cast<unsigned>(limits::kMaxGridDim[i])) return cudaErrorInvalidConfiguration;
  }
  if (static_cast<uint64_t>(b[0]) * b[1] * b[2] > static_cast<uint64_t>(limits::kMaxThreadsPerBlock))
    return cudaErrorInvalidConfiguration;
  if (r.shared_bytes > static_cast<size_t>(max_dynamic_shared(r.kernel))) return cudaErrorInvalidValue;
  if (r.param_bytes > limits::kMaxParamBytes) return cudaErrorInvalidValue;
  return cudaSuccess;
}

}  // namespace mixt::cuda::emulated

using namespace mixt::cuda::emulated;

extern "C" {

cudaError_t cudaFuncSetAttribute(const void* func, enum cudaFuncAttribute attr, int value) {
  if (func == nullptr) return set_last_error(cudaErrorInvalidDeviceFunction);
  std::lock_guard<std::mutex> lock(g_mutex);
  switch (attr) {
    case cudaFuncAttributeMaxDynamicSharedMemorySize:
      if (value < 0 || value > limits::kSharedPerBlockOptin) return set_last_error(cudaErrorInvalidValue);
      attributes()[func].max_dynamic_shared = value;
      return cudaSuccess;
    case cudaFuncAttributePreferredSharedMemoryCarveout:
      if (value < -1 || value > 100) return set_last_error(cudaErrorInvalidValue);
      attributes()[func].preferred_carveout = value;
      return cudaSuccess;
    default: return set_last_error(cudaErrorInvalidValue);
  }
}

cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes* out, const void* func) {
  if (out == nullptr || func == nullptr) return set_last_error(cudaErrorInvalidValue);
  *out = cudaFuncAttributes{};
  out->maxThreadsPerBlock = limits::kMaxThreadsPerBlock;
  out->maxDynamicSharedSizeBytes = max_dynamic_shared(func);
  out->ptxVersion = 90;
  out->binaryVersion = 90;
  return cudaSuccess;
}

}  // extern "C"
