// The emulated CUDA device's own checks (built with -Dcuda=emulated only): each fault
// the emulator exists to find is planted in a small kernel and must be caught —
// a barrier in a divergent branch, an oversized dynamic shared buffer without the
// attribute, a launch on the legacy stream racing a non-blocking stream — and the
// device's limits, shared-memory poison, barrier reductions, atomics and memory cap
// behave as an H200's documented ones. Runs in deferred mode (set below) so the race
// shows; own main (tests/cuda/gpu_checks.h). The access checks (memcheck, initcheck,
// racecheck; a removed __syncthreads among them) have their own program,
// test_emulated_checks.cu.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <sys/wait.h>

#include <mixt/kernels/cuda/emulated/emulator.h>
#include <mixt/kernels/cuda/launch_kernel.cuh>
#include <mixt/mixt.h>

#include "gpu_checks.h"

using mixt::cuda::KernelConfig;
using mixt::cuda::launch_kernel;
using mixt::testing::expect;
using mixt::testing::group;
namespace emu = mixt::cuda::emulated;

namespace {

constexpr int kThreads = 64;

// A barrier only the first `waiting` threads reach; the others return.
__global__ void divergent_barrier_kernel(float* out, unsigned waiting) {
  if (threadIdx.x >= waiting) return;
  __syncthreads();
  out[blockIdx.x * blockDim.x + threadIdx.x] = 1.0f;
}

// Odd and even threads wait at two different barriers.
__global__ void two_barriers_kernel(float* out) {
  if (threadIdx.x % 2) {
    out[threadIdx.x] = 1.0f;
    __syncthreads();
  } else {
    __syncthreads();
    out[threadIdx.x] = 2.0f;
  }
}

// Reads shared memory nobody wrote.
__global__ void uninitialised_shared_kernel(float* out) {
  MIXT_DYNAMIC_SHARED_BYTES(bytes);
  out[threadIdx.x] = reinterpret_cast<const float*>(bytes)[threadIdx.x];
}

__global__ void shared_kernel(float* out, int n) {
  MIXT_DYNAMIC_SHARED_BYTES(bytes);
  if (threadIdx.x == 0) out[0] = static_cast<float>(n) + (bytes != nullptr ? 0.0f : 1.0f);
}

__global__ void vote_kernel(int* out) {
  const int t = static_cast<int>(threadIdx.x);
  out[0] = __syncthreads_or(t == 5);
  out[1] = __syncthreads_and(t >= 0);
  out[2] = __syncthreads_and(t != 7);
  out[3] = __syncthreads_count(t % 3 == 0);
}

__global__ void count_kernel(unsigned long long* counter) { atomicAdd(counter, 1ull); }

__global__ void fill_kernel(float* p, int n, float v) {
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += static_cast<int>(gridDim.x * blockDim.x))
    p[i] = v;
}

__global__ void copy_kernel(const float* in, float* out, int n) {
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += static_cast<int>(gridDim.x * blockDim.x))
    out[i] = in[i];
}

__global__ void empty_kernel() {}

template <class T>
T* device_alloc(size_t n) {
  void* p = nullptr;
  if (cudaMalloc(&p, n * sizeof(T)) != cudaSuccess) return nullptr;
  return static_cast<T*>(p);
}

template <class T>
std::vector<T> to_host(const T* d, size_t n) {
  std::vector<T> h(n);
  cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
  return h;
}

// The launch error of the last launch, then the fault state cleared for the next case.
cudaError_t settle() {
  cudaDeviceSynchronize();
  const cudaError_t e = cudaGetLastError();
  emu::reset_faults();
  return e;
}

void divergent_barriers() {
  float* out = device_alloc<float>(2 * kThreads);
  launch_kernel(divergent_barrier_kernel, {2, kThreads, 0, nullptr}, out, 16u);
  expect(settle() == cudaErrorLaunchFailure, "a barrier reached by threads 0-15 while 16-63 exit is a launch failure");
  launch_kernel(divergent_barrier_kernel, {2, kThreads, 0, nullptr}, out, 16u);
  cudaDeviceSynchronize();
  const std::string report = cudaGetErrorString(cudaGetLastError());
  expect(report.find("barrier divergence") != std::string::npos && report.find(", block (") != std::string::npos &&
             report.find("threads 0-15") != std::string::npos && report.find("16-63") != std::string::npos &&
             report.find("test_emulated_device.cu") != std::string::npos,
         "the report names the launch site, the block and the threads: " + report);
  expect(cudaMalloc(reinterpret_cast<void**>(&out), 4) == cudaErrorLaunchFailure, "the fault is sticky: later calls fail");
  emu::reset_faults();
  launch_kernel(divergent_barrier_kernel, {2, kThreads, 0, nullptr}, out, static_cast<unsigned>(kThreads));
  expect(settle() == cudaSuccess, "the same kernel with every thread at the barrier runs");
  launch_kernel(two_barriers_kernel, {1, kThreads, 0, nullptr}, out);
  cudaDeviceSynchronize();
  const std::string two = emu::last_fault();
  expect(settle() == cudaErrorLaunchFailure && two.find("while threads 1, 3") != std::string::npos,
         "odd and even threads at two different barriers is a fault: " + two);
  cudaFree(out);
}

void limits() {
  launch_kernel(empty_kernel, {1, 1025, 0, nullptr});
  expect(cudaGetLastError() == cudaErrorInvalidConfiguration, "1025 threads a block is an invalid configuration");
  expect(cudaGetLastError() == cudaSuccess, "a configuration error is not sticky");
  launch_kernel(empty_kernel, {dim3(1, 65536), 1, 0, nullptr});
  expect(cudaGetLastError() == cudaErrorInvalidConfiguration, "grid y of 65536 is an invalid configuration");
  launch_kernel(empty_kernel, {dim3(0), 1, 0, nullptr});
  expect(cudaGetLastError() == cudaErrorInvalidConfiguration, "a zero-size grid is an invalid configuration");
  launch_kernel(empty_kernel, {1, dim3(1, 1, 65), 0, nullptr});
  expect(cudaGetLastError() == cudaErrorInvalidConfiguration, "block z of 65 is an invalid configuration");
  launch_kernel(empty_kernel, {dim3(70000), 1, 0, nullptr});
  expect(cudaPeekAtLastError() == cudaSuccess, "grid x may pass 65535");
  float* out = device_alloc<float>(1);
  launch_kernel(shared_kernel, {1, 32, 64 * 1024, nullptr}, out, 1);
  expect(cudaGetLastError() == cudaErrorInvalidValue,
         "64 KiB of dynamic shared memory without cudaFuncSetAttribute is refused (48 KiB default)");
  launch_kernel(shared_kernel, {1, 32, 48 * 1024, nullptr}, out, 2);
  expect(settle() == cudaSuccess && to_host(out, 1)[0] == 2.0f, "48 KiB runs without the attribute");
  const void* k = reinterpret_cast<const void*>(shared_kernel);
  expect(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024) == cudaSuccess,
         "the attribute raises the limit");
  launch_kernel(shared_kernel, {1, 32, 64 * 1024, nullptr}, out, 3);
  expect(settle() == cudaSuccess && to_host(out, 1)[0] == 3.0f, "64 KiB runs once the attribute allows it");
  expect(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 232449) == cudaErrorInvalidValue,
         "the attribute cannot pass the device's 227 KiB");
  cudaGetLastError();
  cudaFree(out);
}

void shared_poison_and_votes() {
  float* out = device_alloc<float>(kThreads);
  launch_kernel(uninitialised_shared_kernel, {1, kThreads, sizeof(float) * kThreads, nullptr}, out);
  settle();
  const std::vector<float> r = to_host(out, kThreads);
  bool all_nan = true;
  for (float v : r) all_nan = all_nan && std::isnan(v);
  expect(all_nan, "shared memory read before any write holds the poison (NaN)");
  int* votes = device_alloc<int>(4);
  launch_kernel(vote_kernel, {1, kThreads, 0, nullptr}, votes);
  expect(settle() == cudaSuccess, "vote_kernel runs");
  const std::vector<int> v = to_host(votes, 4);
  expect(v[0] != 0 && v[1] != 0 && v[2] == 0 && v[3] == (kThreads + 2) / 3,
         "__syncthreads_or / _and / _count combine the block's predicates");
  unsigned long long* counter = device_alloc<unsigned long long>(1);
  cudaMemset(counter, 0, sizeof *counter);
  launch_kernel(count_kernel, {300, 128, 0, nullptr}, counter);
  expect(settle() == cudaSuccess && to_host(counter, 1)[0] == 300ull * 128, "atomicAdd from every thread of 300 blocks");
  cudaFree(out);
  cudaFree(votes);
  cudaFree(counter);
}

// Writes x on a non-blocking stream, then copies x to y on the legacy stream: the two do
// not order each other, so without an event the copy may read x before the write.
void legacy_race() {
  constexpr int n = 1000;
  float* x = device_alloc<float>(n);
  float* y = device_alloc<float>(n);
  for (int variant = 0; variant < 3; ++variant) {
    cudaStream_t s = nullptr;
    cudaStreamCreateWithFlags(&s, variant == 2 ? cudaStreamDefault : cudaStreamNonBlocking);
    cudaMemset(x, 0, sizeof(float) * n);
    cudaMemset(y, 0, sizeof(float) * n);
    launch_kernel(fill_kernel, {4, 128, 0, s}, x, n, 7.0f);
    if (variant == 1) {  // the fix: an event orders the legacy stream after the write
      cudaEvent_t e = nullptr;
      cudaEventCreateWithFlags(&e, cudaEventDisableTiming);
      cudaEventRecord(e, s);
      cudaStreamWaitEvent(nullptr, e, 0);
      cudaEventDestroy(e);
    }
    launch_kernel(copy_kernel, {4, 128, 0, nullptr}, x, y, n);
    expect(settle() == cudaSuccess, "the streams' kernels run");
    const std::vector<float> r = to_host(y, n);
    const bool copied = r[0] == 7.0f && r[n - 1] == 7.0f;
    if (variant == 0) expect(!copied, "a legacy-stream read racing a non-blocking stream's write is caught (deferred mode)");
    if (variant == 1) expect(copied, "an event between the streams orders them");
    if (variant == 2) expect(copied, "a blocking stream's work is ordered before the legacy stream's");
    cudaStreamDestroy(s);
  }
  cudaFree(x);
  cudaFree(y);
}

void memory_and_streams() {
  cudaDeviceProp prop{};
  expect(cudaGetDeviceProperties(&prop, 0) == cudaSuccess && std::string(prop.name).find("emulated") != std::string::npos &&
             prop.major == 9 && prop.minor == 0 && prop.multiProcessorCount == 132 && prop.maxThreadsPerBlock == 1024,
         std::string("the device says it is emulated and has an H200's properties: ") + prop.name);
  int count = 0;
  expect(cudaGetDeviceCount(&count) == cudaSuccess && count == emu::settings().device_count, "the configured device count");
  void* p = nullptr;
  expect(cudaMalloc(&p, emu::settings().memory_bytes + 1) == cudaErrorMemoryAllocation,
         "an allocation over the device's memory fails with cudaErrorMemoryAllocation");
  expect(cudaGetLastError() == cudaErrorMemoryAllocation && cudaGetLastError() == cudaSuccess,
         "out of memory is reported once, not sticky");
  expect(cudaMalloc(&p, 1000) == cudaSuccess && reinterpret_cast<uintptr_t>(p) % 256 == 0, "cudaMalloc is 256-byte aligned");
  std::vector<char> host(1000);
  expect(cudaMemcpy(host.data(), host.data() + 10, 100, cudaMemcpyDeviceToHost) == cudaErrorInvalidValue,
         "a device-to-host copy from host memory is refused");
  expect(cudaMemcpy(p, host.data(), 1001, cudaMemcpyHostToDevice) == cudaErrorInvalidValue,
         "a copy past the end of a device allocation is refused");
  cudaGetLastError();
  if (count > 1) {
    cudaStream_t other = nullptr;
    cudaSetDevice(1);
    cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking);
    cudaSetDevice(0);
    launch_kernel(empty_kernel, {1, 1, 0, other});
    expect(cudaGetLastError() == cudaErrorInvalidResourceHandle,
           "a launch on a stream of another device than the current one is refused");
  }
  cudaFree(p);
}

// A malformed setting, in a child process (the settings are read once per process): no
// device, and every CUDA use raises mixt::Error quoting the setting; the process goes on.
int bad_setting_child() {
  const std::string reason = mixt::cuda::unavailable_reason();
  int bad = 0;
  if (mixt::cuda::is_available()) ++bad;
  if (reason.find("MIXT_EMULATED_ORDER=sideways") == std::string::npos) ++bad;
  try {
    (void)mixt::zeros({4}).to(mixt::Device::cuda());
    ++bad;
  } catch (const mixt::Error& e) {
    if (std::string(e.what()).find("MIXT_EMULATED_ORDER=sideways") == std::string::npos) ++bad;
  }
  std::printf("bad-setting child: reason \"%s\", %d problems\n", reason.c_str(), bad);
  return bad == 0 ? 0 : 1;
}

void bad_setting(const char* self) {
  const std::string cmd =
      std::string("MIXT_EMULATED_ORDER=sideways ASAN_OPTIONS=detect_leaks=0 '") + self + "' --bad-setting-child";
  const int status = std::system(cmd.c_str());
  expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
         "a malformed MIXT_EMULATED_ORDER leaves no device; CUDA uses raise mixt::Error quoting it, nothing exits");
}

}  // namespace

int main(int argc, char** argv) {
  setenv("MIXT_EMULATED_ASYNC", "deferred", 1);  // before the first CUDA call reads the settings
  if (argc > 1 && std::strcmp(argv[1], "--bad-setting-child") == 0) return bad_setting_child();
  group("emulator: divergent barriers", divergent_barriers);
  group("emulator: launch limits and shared memory", limits);
  group("emulator: shared poison, votes, atomics", shared_poison_and_votes);
  group("emulator: legacy stream racing a non-blocking one", legacy_race);
  group("emulator: memory, properties, streams", memory_and_streams);
  group("emulator: a malformed setting", [&] { bad_setting(argv[0]); });
  std::printf("test_emulated_device: %d checks, %d failures\n", mixt::testing::g_checks, mixt::testing::g_failures);
  return mixt::testing::g_failures == 0 ? 0 : 1;
}
