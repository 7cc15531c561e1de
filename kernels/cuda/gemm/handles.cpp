// Note [GEMM handles]: one cuBLASLt handle per device, shared by all threads; one cuBLAS
// handle per device and thread (its stream and workspace are per-call state); one 32 MiB
// workspace per stream (the size cuBLAS recommends on Hopper; smaller ones exclude the
// split-K algorithms that skinny shapes need). Workspaces come from the caching allocator
// while their stream is current, so their blocks are ordered on that stream; they are never
// freed, because GEMMs queued on the stream may use them after the op returns, and there
// are few streams (streams are never destroyed either, cuda_stream.h).
#include <mixt/kernels/cuda/gemm/handles.h>

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/common/gemm_key.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/cuda.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cuda::gemm {
namespace {

constexpr int kMaxDevices = 64;

struct Shared {
  std::mutex mu;
  cublasLtHandle_t lt[kMaxDevices] = {};
  std::map<std::pair<int, cudaStream_t>, Tensor> workspaces;
  std::string names[kMaxDevices];
};
Shared& shared() {
  static Shared* s = new Shared();  // never destroyed: GEMMs may run during static destruction
  return *s;
}

void check_index(int device) {
  MIXT_CHECK(device >= 0 && device < kMaxDevices, "gemm", "device index {} out of range", device);
}

}  // namespace

void check_blas(cublasStatus_t s, const char* op, const char* what) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  MIXT_FAIL(op, "{} failed: {} ({})", what, cublasGetStatusName(s), cublasGetStatusString(s));
}

cublasLtHandle_t lt_handle(int device) {
  check_index(device);
  Shared& s = shared();
  std::lock_guard<std::mutex> lock(s.mu);
  if (!s.lt[device]) {
    DeviceGuard guard(device, "gemm");
    check_blas(cublasLtCreate(&s.lt[device]), "gemm", "cublasLtCreate");
  }
  return s.lt[device];
}

void* workspace(int device, cudaStream_t stream) {
  check_index(device);
  Shared& s = shared();
  std::lock_guard<std::mutex> lock(s.mu);
  auto it = s.workspaces.find({device, stream});
  if (it == s.workspaces.end()) {
    DeviceGuard guard(device, "gemm");
    // Allocated on the caller's current stream of `device`, which is `stream`.
    it = s.workspaces.emplace(std::make_pair(device, stream),
                              make_empty({static_cast<int64_t>(mixt::gemm::kWorkspaceBytes)}, kUInt8,
                                         Device::cuda(device)))
             .first;
  }
  return it->second.data_ptr();
}

cublasHandle_t blas_handle(int device, cudaStream_t stream) {
  check_index(device);
  // Per thread: destroyed with the thread (after its GEMMs were queued; cuBLAS allows that).
  struct Handles {
    cublasHandle_t h[kMaxDevices] = {};
    ~Handles() {
      for (cublasHandle_t x : h)
        if (x) cublasDestroy(x);
    }
  };
  thread_local Handles handles;
  cublasHandle_t& h = handles.h[device];
  if (!h) {
    DeviceGuard guard(device, "gemm");
    check_blas(cublasCreate(&h), "gemm", "cublasCreate");
    // Accumulate float16/bfloat16 split-K partial sums in float32, as cuBLASLt does here
    // (the engine's preference) and as the CPU reference does.
    check_blas(cublasSetMathMode(h, static_cast<cublasMath_t>(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)), "gemm",
               "cublasSetMathMode");
  }
  void* ws = workspace(device, stream);
  check_blas(cublasSetStream(h, stream), "gemm", "cublasSetStream");
  check_blas(cublasSetWorkspace(h, ws, mixt::gemm::kWorkspaceBytes), "gemm", "cublasSetWorkspace");
  return h;
}

const char* device_name(int device) {
  if (!is_available() || device < 0 || device >= device_count() || device >= kMaxDevices) return "none";
  Shared& s = shared();
  std::lock_guard<std::mutex> lock(s.mu);
  if (s.names[device].empty()) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device) != cudaSuccess) {
      cudaGetLastError();
      return "none";
    }
    std::string n = prop.name;
    for (char& ch : n)
      if (ch < 0x20 || ch >= 0x7f) ch = '?';
    s.names[device] = n.empty() ? "unnamed" : n.substr(0, 200);
  }
  return s.names[device].c_str();
}

}  // namespace mixt::cuda::gemm
