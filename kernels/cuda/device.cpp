// CUDA discovery (runtime/cuda.h) and the host helpers of kernels/cuda/host.h (the
// CUDA allocator is in allocator.cpp). Any error while counting devices means "unavailable"; the
// reason says which: no device, or a driver error.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>

#include <cuda_runtime_api.h>

#include <mixt/kernels/cuda/device_error.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/launch.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/cuda.h>

namespace mixt::cuda {
namespace {

struct Discovery {
  int count = 0;
  std::string reason;
};

// Counts the devices once; remembers why there are none.
const Discovery& discovery() {
  static std::once_flag once;
  static Discovery d;
  std::call_once(once, [] {
    int n = 0;
    const cudaError_t err = cudaGetDeviceCount(&n);
    if (err != cudaSuccess) {
      cudaGetLastError();  // clear it: later launches must not report it
      const std::string detail = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
      d.reason = err == cudaErrorNoDevice ? "no CUDA device found (" + detail + ")"
                 : err == cudaErrorInsufficientDriver
                     ? "driver error: the NVIDIA driver is missing or older than this CUDA runtime (" + detail + ")"
                     : "driver error: cudaGetDeviceCount failed (" + detail + ")";
    } else if (n <= 0) {
      d.reason = "no CUDA device found";
    } else {
      d.count = n;
    }
  });
  return d;
}

}  // namespace

bool is_compiled() { return true; }

#if defined(MIXT_CUDA_EMULATED)
bool is_emulated() { return true; }
#else
bool is_emulated() { return false; }
#endif

std::string device_name(int index) {
  MIXT_CHECK(is_available(), "cuda::device_name", "CUDA is not available: {}", unavailable_reason());
  MIXT_CHECK(index >= 0 && index < device_count(), "cuda::device_name", "cuda:{} does not exist: {} CUDA device(s) present",
             index, device_count());
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, index), "cuda::device_name");
  return std::string(prop.name);
}
bool is_available() { return discovery().count > 0; }
int device_count() { return discovery().count; }
std::string unavailable_reason() { return discovery().reason; }

void launch_empty_kernel() {
  MIXT_CHECK(is_available(), "cuda::launch_empty_kernel", "CUDA is not available: {}", unavailable_reason());
  int current = 0;
  check(cudaGetDevice(&current), "cuda::launch_empty_kernel");
  launch_empty_kernel(Device::cuda(current));
}

void launch_empty_kernel(Device device) {
  MIXT_CHECK(is_available(), "cuda::launch_empty_kernel", "CUDA is not available: {}", unavailable_reason());
  MIXT_CHECK(device.is_cuda() && device.index() >= 0 && device.index() < device_count(), "cuda::launch_empty_kernel",
             "{} is not a CUDA device of this process ({} present)", device, device_count());
  DeviceGuard guard(device.index(), "cuda::launch_empty_kernel");
  check(launch_empty(current_native_stream(device.index())), "cuda::launch_empty_kernel");
}

void synchronize() {
  if (!is_available()) return;
  // Every device mixt has used in this process (not only the current one); a device
  // never used has no work and is not touched (no context is made there).
  const uint64_t used = used_devices();
  for (int d = 0; d < device_count() && d < 64; ++d) {
    if (!(used >> d & 1u)) continue;
    DeviceGuard guard(d, "cuda::synchronize");
    check(cudaDeviceSynchronize(), "cuda::synchronize");
    raise_device_error(d, "cuda::synchronize");
  }
}

void check(cudaError_t err, const char* op) {
  if (MIXT_LIKELY(err == cudaSuccess)) return;
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  MIXT_FAIL(op, "CUDA error {}: {}{}", cudaGetErrorName(err), cudaGetErrorString(err),
            is_emulated() ? " [on the emulated CUDA device]" : "");
}

// Note [Device guard]: the guard makes `index` current and afterwards returns to the
// previous device only when mixt has used that device in this process. A thread's
// current device starts as 0 whether or not anything runs there; switching back to it
// would create a CUDA context on GPU 0 in every process of a one-process-per-GPU job
// (memory on GPU 0 for each rank, and a failure in exclusive-process mode).
DeviceGuard::DeviceGuard(int index, const char* op) {
  MIXT_CHECK(is_available(), op, "CUDA is not available: {}", unavailable_reason());
  int current = -1;
  check(cudaGetDevice(&current), op);
  mark_device_used(index);
  if (current != index) {
    check(cudaSetDevice(index), op);
    if (current >= 0 && (used_devices() >> current & 1u)) previous_ = current;
  }
}

DeviceGuard::~DeviceGuard() {
  // A switch back that fails leaves no error behind for a later, unrelated call.
  if (previous_ >= 0 && cudaSetDevice(previous_) != cudaSuccess) cudaGetLastError();
}

int InputDevice::index_of(const OpCall& c) {
  MIXT_CHECK_OP(c.n_in > 0 && c.in[0].is_cuda(), c, "the CUDA kernel got a tensor on {}",
                c.n_in > 0 ? c.in[0].device() : Device::cpu());
  return c.in[0].device().index();
}

InputDevice::InputDevice(const OpCall& c)
    : guard_(index_of(c), op_name(c.op).data()), stream_(current_native_stream(c.in[0].device().index())) {}

namespace {
std::atomic<uint64_t> g_used_devices{0};
}  // namespace

void mark_device_used(int index) {
  if (index >= 0 && index < 64) g_used_devices.fetch_or(uint64_t{1} << index, std::memory_order_relaxed);
}

uint64_t used_devices() { return g_used_devices.load(std::memory_order_relaxed); }

LaunchLayout make_launch_layout(const Shape& out_sizes, std::span<const OperandGeometry> operands,
                                const bool* ignore_for_contiguity) {
  LaunchLayout L;
  L.layout = make_strided_layout(out_sizes, operands);
  L.contiguous = is_dense(L.layout, operands, ignore_for_contiguity);
  return L;
}

}  // namespace mixt::cuda
