// The emulated device's access checks (kernels/cuda/emulated/access_checks.h; built
// with -Dcuda=emulated only). Each check is shown the bug it exists for, planted in a
// small kernel, and must report it with the kernel's launch site, block, thread and
// kind: memcheck (a tail one element past a tensor inside its caching-allocator
// block, past a cudaMalloc allocation, past the shared memory; host, freed and other
// devices' pointers as kernel arguments), initcheck (a read of a reused block, of
// fresh cudaMalloc memory) and racecheck (a missing barrier between shared writes and
// reads, two blocks writing one global word). The same kernels with the bug fixed run
// clean. MIXT_EMULATED_MAX_BLOCKS, which lets CI run every row-striding path, is checked
// in a child process. Own main (tests/cuda/gpu_checks.h).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

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

// Writes n + 1 elements when `planted` (the off-by-one), else n.
__global__ void tail_kernel(float* out, int n, bool planted) {
  const int end = planted ? n + 1 : n;
  for (int i = static_cast<int>(threadIdx.x); i < end; i += static_cast<int>(blockDim.x)) out[i] = 2.0f;
}

__global__ void copy_kernel(const float* in, float* out, int n) {
  for (int i = static_cast<int>(blockIdx.x * blockDim.x + threadIdx.x); i < n; i += static_cast<int>(gridDim.x * blockDim.x))
    out[i] = in[i];
}

// Every thread writes its value to shared memory, then reads its neighbour's; `sync`
// false removes the barrier between the two.
__global__ void neighbour_kernel(const float* in, float* out, bool sync) {
  MIXT_DYNAMIC_SHARED_BYTES(bytes);
  float* sh = reinterpret_cast<float*>(bytes);
  const unsigned t = threadIdx.x;
  sh[t] = in[t];
  if (sync) __syncthreads();
  out[t] = sh[(t + 1) % blockDim.x];
}

// Every thread writes one shared word (`planted`), or thread 0 alone does.
__global__ void shared_word_kernel(float* out, bool planted) {
  MIXT_DYNAMIC_SHARED_BYTES(bytes);
  float* sh = reinterpret_cast<float*>(bytes);
  if (planted || threadIdx.x == 0) sh[0] = static_cast<float>(threadIdx.x);
  __syncthreads();
  out[threadIdx.x] = sh[0];
}

// Reads `count` floats of shared memory (one past its end when count exceeds it).
__global__ void shared_read_kernel(float* out, int count) {
  MIXT_DYNAMIC_SHARED_BYTES(bytes);
  float* sh = reinterpret_cast<float*>(bytes);
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int i = 0; i < count; ++i) s += sh[i];
    out[0] = s;
  }
}

// Each block writes out[0] (`planted`), or its own out[blockIdx.x]; blocks also add
// into out[gridDim.x] with atomics, which is no race.
__global__ void block_writes_kernel(float* out, bool planted) {
  if (threadIdx.x != 0) return;
  out[planted ? 0 : blockIdx.x] = static_cast<float>(blockIdx.x);
  atomicAdd(&out[gridDim.x], 1.0f);
}

// Records the grid's size.
__global__ void grid_probe_kernel(unsigned* out) {
  if (blockIdx.x == 0 && threadIdx.x == 0) out[0] = gridDim.x;
}

// The fault after the grid ran, then the fault state cleared for the next case.
std::string fault_of_last_launch() {
  cudaDeviceSynchronize();
  cudaGetLastError();
  std::string report = emu::last_fault();
  emu::reset_faults();
  return report;
}

bool has(const std::string& text, const char* part) { return text.find(part) != std::string::npos; }

mixt::Tensor cuda_floats(int64_t n) {
  return mixt::empty({n}, {mixt::ScalarType::Float32, mixt::Device::cuda()});
}

void tail_inside_segment() {
  mixt::Tensor t = cuda_floats(100);  // a 512-byte block of a 2 MiB segment: 400 bytes are the tensor's
  float* p = t.data_ptr<float>();
  launch_kernel(tail_kernel, {1, 32, 0, nullptr}, p, 100, false);
  expect(fault_of_last_launch().empty(), "writing the tensor's 100 floats is clean");
  launch_kernel(tail_kernel, {1, 32, 0, nullptr}, p, 100, true);
  const std::string r = fault_of_last_launch();
  expect(has(r, "memcheck: invalid write of 4 bytes") && has(r, "test_emulated_checks.cu") &&
             has(r, "thread (4, 0, 0) of block (0, 0, 0)") && has(r, "0 bytes past the end of the live block") &&
             has(r, "(400 bytes)") && has(r, "[code at "),
         "the write one element past the tensor, inside its block's rounding, is caught and located: " + r);
  void* raw = nullptr;
  cudaMalloc(&raw, 100 * sizeof(float));
  launch_kernel(tail_kernel, {1, 32, 0, nullptr}, static_cast<float*>(raw), 100, true);
  const std::string r2 = fault_of_last_launch();
  expect(has(r2, "memcheck: invalid write") && has(r2, "0 bytes past the end of the 400-byte allocation"),
         "past a cudaMalloc allocation: " + r2);
  cudaFree(raw);
}

void pointer_arguments() {
  std::vector<float> host(64);
  mixt::Tensor keep = cuda_floats(64);
  float* out = keep.data_ptr<float>();
  launch_kernel(copy_kernel, {1, 32, 0, nullptr}, host.data(), out, 64);
  const cudaError_t e = cudaGetLastError();
  const std::string r = fault_of_last_launch();
  expect(e == cudaErrorIllegalAddress && has(r, "argument 0 of") && has(r, "test_emulated_checks.cu") &&
             has(r, "host memory that is not mapped"),
         "a host pointer as a kernel argument is refused at launch, naming the argument: " + r);
  void* gone = nullptr;
  cudaMalloc(&gone, 256);
  cudaFree(gone);
  launch_kernel(copy_kernel, {1, 32, 0, nullptr}, static_cast<const float*>(gone), out, 64);
  const std::string r2 = fault_of_last_launch();
  expect(has(r2, "argument 0") && has(r2, "released by cudaFree"), "a pointer into freed memory: " + r2);
  int count = 0;
  cudaGetDeviceCount(&count);
  if (count > 1) {
    void* other = nullptr;
    cudaSetDevice(1);
    cudaMalloc(&other, 256);
    cudaSetDevice(0);
    launch_kernel(copy_kernel, {1, 32, 0, nullptr}, static_cast<const float*>(other), out, 64);
    const std::string r3 = fault_of_last_launch();
    expect(has(r3, "argument 0") && has(r3, "device 1's memory"), "another device's memory: " + r3);
    cudaSetDevice(1);
    cudaFree(other);
    cudaSetDevice(0);
  }
  launch_kernel(copy_kernel, {1, 32, 0, nullptr}, static_cast<const float*>(nullptr), out, 0);
  expect(fault_of_last_launch().empty(), "a null pointer argument the kernel never reads is fine");
}

void reused_block() {
  const void* first = nullptr;
  {
    mixt::Tensor a = mixt::full({100}, 1.0, {mixt::ScalarType::Float32, mixt::Device::cuda()});
    first = a.data_ptr();
  }
  mixt::Tensor b = cuda_floats(100);  // the same block, handed out again
  mixt::Tensor c = cuda_floats(100);
  expect(b.data_ptr() == first, "the caching allocator reuses the freed block");
  launch_kernel(copy_kernel, {1, 32, 0, nullptr}, b.data_ptr<float>(), c.data_ptr<float>(), 100);
  const std::string r = fault_of_last_launch();
  expect(has(r, "initcheck: read of 4 bytes") && has(r, "nothing wrote since its block was allocated") &&
             has(r, "block (0, 0, 0)") && has(r, "test_emulated_checks.cu"),
         "reading a reused block that the new owner never wrote is caught: " + r);
  launch_kernel(tail_kernel, {1, 32, 0, nullptr}, b.data_ptr<float>(), 100, false);
  launch_kernel(copy_kernel, {1, 32, 0, nullptr}, b.data_ptr<float>(), c.data_ptr<float>(), 100);
  expect(fault_of_last_launch().empty(), "after a kernel wrote it, the read is clean");
  void* raw = nullptr;
  cudaMalloc(&raw, 400);
  launch_kernel(copy_kernel, {1, 32, 0, nullptr}, static_cast<const float*>(raw), c.data_ptr<float>(), 100);
  expect(has(fault_of_last_launch(), "initcheck"), "fresh cudaMalloc memory is unwritten");
  cudaMemset(raw, 0, 400);
  launch_kernel(copy_kernel, {1, 32, 0, nullptr}, static_cast<const float*>(raw), c.data_ptr<float>(), 100);
  expect(fault_of_last_launch().empty(), "cudaMemset writes it");
  cudaFree(raw);
}

void shared_races() {
  constexpr int n = 64;
  mixt::Tensor in = mixt::full({n}, 3.0, {mixt::ScalarType::Float32, mixt::Device::cuda()});
  mixt::Tensor out = cuda_floats(n);
  launch_kernel(neighbour_kernel, {1, n, sizeof(float) * n, nullptr}, in.data_ptr<float>(), out.data_ptr<float>(), true);
  expect(fault_of_last_launch().empty(), "with its barrier the exchange through shared memory is clean");
  launch_kernel(neighbour_kernel, {1, n, sizeof(float) * n, nullptr}, in.data_ptr<float>(), out.data_ptr<float>(), false);
  const std::string r = fault_of_last_launch();
  expect(has(r, "racecheck: shared-memory ") && (has(r, "RAW hazard") || has(r, "WAR hazard")) &&
             has(r, "with no barrier between them") && has(r, "block (0, 0, 0)") && has(r, "test_emulated_checks.cu"),
         "the missing barrier between the shared write and the neighbour's read is a hazard: " + r);
  launch_kernel(shared_word_kernel, {1, n, sizeof(float), nullptr}, out.data_ptr<float>(), false);
  expect(fault_of_last_launch().empty(), "one writer of the shared word is clean");
  launch_kernel(shared_word_kernel, {1, n, sizeof(float), nullptr}, out.data_ptr<float>(), true);
  const std::string w = fault_of_last_launch();
  expect(has(w, "racecheck: shared-memory WAW hazard at byte 0") && has(w, "wrote it and thread ("),
         "every thread writing one shared word is a WAW hazard: " + w);
  launch_kernel(shared_read_kernel, {1, 32, sizeof(float) * 8, nullptr}, out.data_ptr<float>(), 9);
  const std::string o = fault_of_last_launch();
  expect(has(o, "memcheck: invalid shared-memory read of 4 bytes at byte 32 of the block's 32 bytes"),
         "a read past the dynamic shared memory: " + o);
}

void global_races() {
  constexpr int blocks = 8;
  mixt::Tensor out = mixt::zeros({blocks + 1}, {mixt::ScalarType::Float32, mixt::Device::cuda()});
  launch_kernel(block_writes_kernel, {blocks, 32, 0, nullptr}, out.data_ptr<float>(), false);
  expect(fault_of_last_launch().empty(), "each block writing its own word, and atomics into a shared one, is clean");
  launch_kernel(block_writes_kernel, {blocks, 32, 0, nullptr}, out.data_ptr<float>(), true);
  const std::string r = fault_of_last_launch();
  expect(has(r, "racecheck: global-memory WAW hazard") && has(r, ", 0, 0) and block (") && has(r, "without atomics"),
         "two blocks of one grid writing one word is a hazard: " + r);
}

// The grid of a grid-stride launch over 2^20 items: 4096 blocks, or the lowered cap.
unsigned probed_grid() {
  mixt::Tensor out = mixt::zeros({1}, {mixt::ScalarType::Int32, mixt::Device::cuda()});
  launch_kernel(grid_probe_kernel, {mixt::cuda::grid_for(int64_t{1} << 20), mixt::kBlockThreads, 0, nullptr},
                reinterpret_cast<unsigned*>(out.data_ptr<int32_t>()));
  return static_cast<unsigned>(out.item<int64_t>());
}

void grid_cap(const char* self) {
  const int64_t cap = emu::settings().max_blocks;  // CI's shuffled run sets one
  const unsigned full = (1u << 20) / mixt::kBlockThreads;
  expect(probed_grid() == (cap > 0 && cap < full ? static_cast<unsigned>(cap) : full),
         "one thread per item, or the cap this process runs with");
  const std::string cmd = std::string("MIXT_EMULATED_MAX_BLOCKS=3 ASAN_OPTIONS=detect_leaks=0 '") + self + "' --grid-child";
  const int status = std::system(cmd.c_str());
  expect(status == 0, "MIXT_EMULATED_MAX_BLOCKS=3 caps a grid-stride launch at 3 blocks (child process)");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--grid-child") == 0) return probed_grid() == 3 ? 0 : 1;
  const emu::Settings& s = emu::settings();
  if (!(s.memcheck && s.initcheck && s.racecheck)) {
    std::printf("test_emulated_checks: MIXT_EMULATED_CHECKS turns some checks off; nothing to test\n");
    return 77;
  }
  group("memcheck: a tail past the tensor, inside its block", tail_inside_segment);
  group("memcheck: pointer arguments", pointer_arguments);
  group("initcheck: a reused block", reused_block);
  group("racecheck: shared memory", shared_races);
  group("racecheck: two blocks, one word", global_races);
  group("MIXT_EMULATED_MAX_BLOCKS lowers the grid cap", [&] { grid_cap(argv[0]); });
  std::printf("test_emulated_checks: %d checks, %d failures\n", mixt::testing::g_checks, mixt::testing::g_failures);
  return mixt::testing::g_failures == 0 ? 0 : 1;
}
