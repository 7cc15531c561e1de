// More than one CUDA device in one process: work on cuda:1 stays on cuda:1 (results,
// streams, synchronize), a process that only uses cuda:1 never makes cuda:0 current
// (on a real GPU that would create a context there: every rank of a
// one-process-per-GPU job would hold memory on GPU 0), cuda::synchronize waits for
// every device mixt used, and a failed switch back leaves no stale error for a later,
// unrelated call. The context checks need the emulated device (it records which
// devices had a context made); the rest also runs on a machine with two GPUs. Own main
// (tests/cuda/gpu_checks.h); exits 77 without a GPU, and skips the two-device checks
// on a machine with one.
#include <cstdio>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include <mixt/mixt.h>

#if defined(MIXT_CUDA_EMULATED)
#include <mixt/kernels/cuda/emulated/emulator.h>
#endif

#include "gpu_checks.h"
#include "gpu_skip.h"

using namespace mixt;
using namespace mixt::testing;

namespace {

int current_device() {
  int d = -1;
  cudaGetDevice(&d);
  return d;
}

void work_on_device_one() {
  const Device one = Device::cuda(1);
  Tensor a = arange(0, 1000, 1, TensorOptions{.dtype = kFloat32}).to(one);
  Tensor b = mul(add(a, 1.0), 2.0);
  Tensor s = sum(b);
  expect(s.device() == one, "the result of ops on cuda:1 lives on cuda:1");
  expect(s.item<double>() == 2.0 * (999.0 * 1000.0 / 2.0 + 1000.0), "sum of (a + 1) * 2 on cuda:1");
  Tensor c = randn({64, 32}, TensorOptions{.dtype = kFloat32, .device = one});
  Tensor m = matmul(c, c.t());
  expect(m.device() == one && m.sizes() == Shape{64, 64}, "a GEMM on cuda:1");
  cuda::synchronize();
}

void only_device_one() {
#if defined(MIXT_CUDA_EMULATED)
  expect(!cuda::emulated::context_created(0), "no context on cuda:0 before any work (test precondition)");
#endif
  work_on_device_one();
  cuda::launch_empty_kernel(Device::cuda(1));  // on cuda:1, whatever device is current
  cuda::synchronize();
  expect_error("launch_empty_kernel on a device that does not exist raises",
               [] { cuda::launch_empty_kernel(Device::cuda(cuda::device_count())); });
#if defined(MIXT_CUDA_EMULATED)
  expect(!cuda::emulated::context_created(0),
         "a process that only uses cuda:1 never makes cuda:0 current (no context there)");
  expect(cuda::emulated::context_created(1), "cuda:1 has its context");
#endif
  expect(current_device() == 1, "after ops on cuda:1 the current device is cuda:1, not a restored cuda:0");
}

void switching_back() {
  // cuda:1 is current and used: an op on cuda:0 switches there and back.
  Tensor z = ones({4}, TensorOptions{.dtype = kFloat32, .device = Device::cuda(0)});
  expect(current_device() == 1, "an op on cuda:0 returns to the used cuda:1 afterwards");
  cudaSetDevice(0);
  Tensor w = ones({4}, TensorOptions{.dtype = kFloat32, .device = Device::cuda(1)});
  expect(current_device() == 0, "with both used, an op on cuda:1 returns to cuda:0 afterwards");
  expect(sum(z).item<double>() == 4.0 && sum(w).item<double>() == 4.0, "both devices' results");
}

void synchronize_every_device() {
  const Device one = Device::cuda(1);
  cuda::Stream s = cuda::create_stream(one);
  Tensor big = zeros({1 << 16}, TensorOptions{.dtype = kFloat32, .device = one});
  // s is a non-blocking stream: it must wait for the zeros written on cuda:1's current
  // stream (without this wait, memcheck finds add_ reading a block not yet handed out).
  cuda::Event filled;
  filled.record(cuda::current_stream(one));
  filled.wait(s);
  {
    cuda::StreamGuard g(s);
    big.add_(3.0);
  }
  cudaSetDevice(0);
  cuda::synchronize();
  expect(s.query(), "cuda::synchronize waits for cuda:1's streams too, whatever device is current");
  expect(cudaGetLastError() == cudaSuccess, "no stale error after the device switches");
}

// Every place that names the device says when it is the emulated one.
void names_the_device() {
  const std::string name = cuda::device_name(0);
  autocast::Explain ex;
  { Tensor y = add(ones({4}, TensorOptions{.dtype = kFloat32, .device = Device::cuda(0)}), 1.0); }
  const std::string table = ex.table(), json = ex.json();
  if (cuda::is_emulated()) {
    expect(name.find("emulated") != std::string::npos, "cuda::device_name says emulated: " + name);
    expect(table.find("cuda(emu)") != std::string::npos, "explain's table shows cuda(emu):\n" + table);
    expect(json.find("\"emulated_cuda\": true") != std::string::npos, "explain's JSON says emulated_cuda");
    bool raised = false;
    try {
      empty({1 << 20, 1 << 20, 1 << 10}, TensorOptions{.dtype = kFloat32, .device = Device::cuda(0)});
    } catch (const Error& e) {
      raised = std::string(e.what()).find("cuda:0") != std::string::npos;
    }
    expect(raised, "an out-of-memory error names the device");
  } else {
    expect(name.find("emulated") == std::string::npos, "a GPU's name: " + name);
    expect(table.find("cuda(emu)") == std::string::npos, "explain shows cuda");
  }
}

}  // namespace

int main() {
  if (const int status = cuda_unavailable_status("test_cuda_devices"); status >= 0) return status;
  if (cuda::device_count() < 2) {
    std::printf("test_cuda_devices: one CUDA device here: the two-device checks are skipped\n");
    return 77;
  }
  group("a process that only uses cuda:1", only_device_one);
  group("switching back to a used device", switching_back);
  group("cuda::synchronize waits for every device", synchronize_every_device);
  group("the device's name says whether it is emulated", names_the_device);
  std::printf("test_cuda_devices: %d checks, %d failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
