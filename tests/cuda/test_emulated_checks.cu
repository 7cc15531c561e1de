// The emulated device's access checks (kernels/cuda/emulated/access_checks.h; built
// with -Dcuda=emulated only). Each check is shown the bug it exists for, planted in a
// small kernel, and must report it with the kernel's launch site, block, thread and
// kind: memcheck (a tail one element past a tensor inside its caching-allocator
// block, past a cudaMalloc allocation, past the shared memory; host, freed and other
// devices' pointers as kernel arguments), initcheck (a read of a reused block, of
// fresh cudaMalloc memory) and racecheck (a missing barrier between shared writes and
// reads, two blocks writing one global word) and synccheck (a lane a shuffle's mask
// names that returned early; a mask without the caller). Warp shuffles, votes and
// __syncwarp give what the CUDA guide says. The same kernels with the bug fixed run
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

// Each thread writes what eight warp operations give it (out[t * 8 + k]).
__global__ void warp_ops_kernel(int* out) {
  const int t = static_cast<int>(threadIdx.x), lane = t % 32;
  const unsigned all = 0xffffffffu;
  int* o = out + t * 8;
  o[0] = __shfl_sync(all, t * 10, 3);
  o[1] = __shfl_up_sync(all, t, 1);
  o[2] = __shfl_down_sync(all, t, 4);
  o[3] = __shfl_xor_sync(all, t, 1);
  o[4] = static_cast<int>(__ballot_sync(all, lane % 3 == 0));
  o[5] = __any_sync(all, t == 40);
  o[6] = __all_sync(all, t < 60);
  o[7] = __shfl_xor_sync(all, t, 16, 16);  // width 16: a later group's lane gives the caller's own value
}

// The warp's sum by an xor butterfly, in every lane.
__global__ void warp_sum_kernel(const float* in, float* out) {
  float v = in[threadIdx.x];
  for (int m = 16; m > 0; m >>= 1) v += __shfl_xor_sync(0xffffffffu, v, m);
  out[threadIdx.x] = v;
}

// Lane `gone` returns before the shuffle its mask names it in (the planted bug), or
// (`gone` < 0) every lane shuffles.
__global__ void missing_lane_kernel(float* out, int gone) {
  if (static_cast<int>(threadIdx.x) == gone) return;
  out[threadIdx.x] = __shfl_down_sync(0xffffffffu, static_cast<float>(threadIdx.x), 1);
}

// Every lane shuffles with a mask that names lane 0 only.
__global__ void narrow_mask_kernel(float* out) { out[threadIdx.x] = __shfl_sync(0x1u, 1.0f, 0); }

// Lanes exchange through shared memory; `sync` false removes the __syncwarp between.
__global__ void warp_exchange_kernel(float* out, bool sync) {
  MIXT_DYNAMIC_SHARED_BYTES(bytes);
  float* sh = reinterpret_cast<float*>(bytes);
  sh[threadIdx.x] = static_cast<float>(threadIdx.x);
  if (sync) __syncwarp();
  out[threadIdx.x] = sh[threadIdx.x ^ 1u];
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

void warp_operations() {
  constexpr int n = 64;
  mixt::Tensor out = mixt::zeros({n * 8}, {mixt::ScalarType::Int32, mixt::Device::cuda()});
  launch_kernel(warp_ops_kernel, {1, n, 0, nullptr}, out.data_ptr<int32_t>());
  expect(fault_of_last_launch().empty(), "the warp operations run");
  const mixt::Tensor h = out.to(mixt::Device::cpu());
  const int32_t* r = h.data_ptr<int32_t>();
  int wrong = 0;
  for (int t = 0; t < n; ++t) {
    const int lane = t % 32, warp = t / 32;
    unsigned ballot = 0;
    for (int l = 0; l < 32; ++l)
      if (l % 3 == 0) ballot |= 1u << l;
    const int want[8] = {(warp * 32 + 3) * 10,
                         lane >= 1 ? t - 1 : t,
                         lane + 4 < 32 ? t + 4 : t,
                         t ^ 1,
                         static_cast<int>(ballot),
                         warp == 1,
                         warp == 0,
                         lane >= 16 ? t - 16 : t};
    for (int k = 0; k < 8; ++k) {
      if (r[t * 8 + k] == want[k]) continue;
      if (++wrong <= 4) expect(false, "thread " + std::to_string(t) + " operation " + std::to_string(k) + ": got " +
                                          std::to_string(r[t * 8 + k]) + ", want " + std::to_string(want[k]));
    }
  }
  expect(wrong == 0, "shuffles (index, up, down, xor, width 16), ballot, any, all as the CUDA guide defines them");
  mixt::Tensor in = mixt::arange(0, 32, 1, {mixt::ScalarType::Float32, mixt::Device::cuda()});
  mixt::Tensor sums = cuda_floats(32);
  launch_kernel(warp_sum_kernel, {1, 32, 0, nullptr}, in.data_ptr<float>(), sums.data_ptr<float>());
  const mixt::Tensor hs = sums.to(mixt::Device::cpu());
  bool all_496 = true;
  for (int l = 0; l < 32; ++l) all_496 = all_496 && hs.data_ptr<float>()[l] == 496.0f;
  expect(all_496, "an xor butterfly gives every lane the warp's sum");
}

void warp_sync_faults() {
  mixt::Tensor out = cuda_floats(64);
  launch_kernel(missing_lane_kernel, {1, 64, 0, nullptr}, out.data_ptr<float>(), -1);
  expect(fault_of_last_launch().empty(), "every lane at the shuffle is clean");
  launch_kernel(missing_lane_kernel, {1, 64, 0, nullptr}, out.data_ptr<float>(), 5);
  const std::string r = fault_of_last_launch();
  expect(has(r, "synccheck: ") && has(r, "lane 5 of warp 0, named in the mask 0xffffffff of __shfl_down_sync") &&
             has(r, "has exited") && has(r, "block (0, 0, 0)") && has(r, "test_emulated_checks.cu"),
         "a lane of the mask that returned before the shuffle is a synccheck fault: " + r);
  launch_kernel(narrow_mask_kernel, {1, 32, 0, nullptr}, out.data_ptr<float>());
  const std::string m = fault_of_last_launch();
  expect(has(m, "synccheck: __shfl_sync") && has(m, "does not name the calling lane"),
         "a mask without the calling lane is a fault: " + m);
  launch_kernel(warp_exchange_kernel, {1, 32, 32 * sizeof(float), nullptr}, out.data_ptr<float>(), true);
  expect(fault_of_last_launch().empty(), "__syncwarp orders the lanes' shared accesses (no hazard)");
  launch_kernel(warp_exchange_kernel, {1, 32, 32 * sizeof(float), nullptr}, out.data_ptr<float>(), false);
  expect(has(fault_of_last_launch(), "racecheck: shared-memory"), "without __syncwarp the exchange is a hazard");
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
  group("warps: shuffles, votes, __syncwarp", warp_operations);
  group("synccheck: a lane missing from its warp operation", warp_sync_faults);
  group("MIXT_EMULATED_MAX_BLOCKS lowers the grid cap", [&] { grid_cap(argv[0]); });
  std::printf("test_emulated_checks: %d checks, %d failures\n", mixt::testing::g_checks, mixt::testing::g_failures);
  return mixt::testing::g_failures == 0 ? 0 : 1;
}
