// The NCCL backend on one GPU: a group of world size 1 made from an explicit
// unique id, every collective of every dtype against the result computed on the
// CPU (for one rank: the input itself), non-contiguous tensors, the order after
// the compute stream and after the current stream under a StreamGuard, the
// refusals, a rank that never joins (the timeout), and the all_reduce bandwidth
// from 1 MiB to 1 GiB (on a GPU only: not on the emulated device). Own main (no
// Catch2, no MPI), so the binary carries to a GPU machine (tests/gpu/run.sh);
// exits 77 (meson: SKIP) only on a machine without a GPU (gpu_skip.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <mixt/distributed/nccl/nccl_group.h>
#include <mixt/mixt.h>

#include "bench_util.h"
#include "gpu_checks.h"
#include "gpu_skip.h"

using namespace mixt;
using testing::expect;
using testing::g_checks;
using testing::g_failures;
using testing::group;
using dist::ReduceOp;

namespace {

const Device kGpu = Device::cuda(0);

// Checks that `f` raises mixt::Error whose text contains `needle`.
void expect_error(const std::string& what, const std::string& needle, const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    expect(std::string(e.what()).find(needle) != std::string::npos,
           what + ": the error does not say '" + needle + "': " + e.what());
    return;
  } catch (const std::exception& e) {
    expect(false, what + ": raised a non-mixt exception: " + e.what());
    return;
  }
  expect(false, what + ": expected mixt::Error");
}

// `got` (any device) has `want`'s dtype, shape and bytes.
void expect_same(const Tensor& got_any, const Tensor& want_any, const std::string& what) {
  const Tensor got = got_any.cpu().contiguous(), want = want_any.contiguous();
  if (got.dtype() != want.dtype() || got.sizes() != want.sizes()) {
    expect(false, what + ": got " + got.describe() + ", expected " + want.describe());
    return;
  }
  // (empty tensors have no data pointer to compare)
  expect(want.nbytes() == 0 || std::memcmp(got.data_ptr(), want.data_ptr(), static_cast<size_t>(want.nbytes())) == 0,
         what + ": the values differ from the CPU result");
}

// Small integers, exact in every dtype (float8 included): the inputs of the checks.
Tensor input(int64_t n, ScalarType dt) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = dt == kBool ? static_cast<double>(i % 3 == 0) : static_cast<double>((i * 3) % 11 - 5);
  if (dt == kUInt8)
    for (double& x : v) x += 5;
  return from_vector(v, {n}).to(dt);
}

const std::vector<ScalarType> kDtypes = {kFloat32, kFloat64, kFloat16, kBFloat16,       kInt8, kUInt8,
                                         kInt32,   kInt64,   kBool,    kFloat8_e4m3fn, kFloat8_e5m2};
const std::vector<int64_t> kSizes = {0, 1, 7, 1000, 65537};

void test_collectives(dist::ProcessGroup& pg) {
  for (ScalarType dt : kDtypes) {
    for (int64_t n : kSizes) {
      const std::string at = std::string(dtype_name(dt)) + " n=" + std::to_string(n);
      const Tensor cpu = input(n, dt);
      for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Min}) {
        if (op == ReduceOp::Avg && !is_floating(dt)) continue;
        Tensor t = cpu.to(kGpu);
        pg.all_reduce(t, op);
        expect_same(t, cpu, "all_reduce(" + std::string(dist::reduce_op_name(op)) + ") " + at);
        expect_same(pg.reduce_scatter(cpu.to(kGpu), op), cpu,
                    "reduce_scatter(" + std::string(dist::reduce_op_name(op)) + ") " + at);
      }
      Tensor b = cpu.to(kGpu);
      pg.broadcast(b, 0);
      expect_same(b, cpu, "broadcast " + at);
      expect_same(pg.all_gather(cpu.to(kGpu)), reshape(cpu, {1, n}), "all_gather " + at);
    }
  }
  pg.barrier();
}

void test_non_contiguous(dist::ProcessGroup& pg) {
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat16}) {
    const std::string name(dtype_name(dt));
    const Tensor cpu = reshape(input(12 * 7, dt), {12, 7});
    Tensor t = cpu.to(kGpu).t();  // a transposed view
    pg.all_reduce(t, ReduceOp::Max);
    expect_same(t, cpu.t(), std::string("all_reduce into a transposed view ") + name);
    Tensor b = cpu.to(kGpu).t();
    pg.broadcast(b, 0);
    expect_same(b, cpu.t(), std::string("broadcast into a transposed view ") + name);
    Tensor wide = zeros({2 * 84}, TensorOptions{.dtype = dt, .device = kGpu});
    Tensor every_other = wide.slice(0, 0, 2 * 84, 2);
    pg.reduce_scatter_async(every_other, cpu.to(kGpu).t(), ReduceOp::Sum)->wait();
    expect_same(every_other, reshape(cpu.t().contiguous(), {84}), "reduce_scatter into a strided view " + name);
    Tensor gathered = zeros({7, 12}, TensorOptions{.dtype = dt, .device = kGpu}).t();
    pg.all_gather_async(gathered, cpu.to(kGpu))->wait();
    expect_same(gathered, cpu, std::string("all_gather into a transposed view ") + name);
  }
}

// The collective reads what the compute stream wrote just before (a long kernel).
void test_stream_order(dist::ProcessGroup& pg) {
  const int64_t n = int64_t{1} << 26;
  Tensor t = zeros({n}, TensorOptions{.dtype = kFloat32, .device = kGpu});
  for (int i = 0; i < 4; ++i) t.add_(1.0);
  Tensor out = pg.all_gather(t);
  const Tensor want = full({1, n}, 4.0, TensorOptions{.dtype = kFloat32});
  expect_same(out, want, "all_gather after add_ on the compute stream");
  std::vector<dist::WorkPtr> works;
  std::vector<Tensor> ts;
  for (int i = 0; i < 8; ++i) ts.push_back(full({1000}, static_cast<double>(i), TensorOptions{.device = kGpu}));
  for (Tensor& x : ts) works.push_back(pg.all_reduce_async(x, ReduceOp::Sum));
  for (auto& w : works) w->wait();
  for (int i = 0; i < 8; ++i)
    expect_same(ts[static_cast<size_t>(i)], full({1000}, static_cast<double>(i), TensorOptions{}),
                "async all_reduce " + std::to_string(i));
  auto last = pg.barrier_async();
  last->wait();
  expect(last->is_completed(), "a waited barrier is completed");
}

// Under a StreamGuard mixt's kernels run on another stream than the default one:
// the collective still reads what they wrote, and a stream-ordered wait makes
// later work on that stream read its result.
void test_current_stream_order(dist::ProcessGroup& pg) {
  const cuda::Stream side = cuda::create_stream(kGpu);
  cuda::StreamGuard guard(side);
  const int64_t n = int64_t{1} << 24;
  Tensor t = zeros({n}, TensorOptions{.dtype = kFloat32, .device = kGpu});
  for (int i = 0; i < 4; ++i) t.add_(1.0);
  expect_same(pg.all_gather(t), full({1, n}, 4.0, TensorOptions{.dtype = kFloat32}),
              "all_gather after add_ on the current (non-default) stream");
  Tensor u = full({1000}, 2.0, TensorOptions{.device = kGpu});
  pg.all_reduce_async(u, ReduceOp::Max)->wait_on_current_stream();
  Tensor v = mul(u, 3.0);  // queued on the current stream after the all_reduce
  expect_same(v, full({1000}, 6.0, TensorOptions{}), "work after wait_on_current_stream reads the result");
}

void test_refusals(dist::ProcessGroup& pg) {
  Tensor cpu = zeros({4});
  expect_error("a CPU tensor", "cuda", [&] { pg.all_reduce(cpu); });
  Tensor ints = zeros({4}, TensorOptions{.dtype = kInt32, .device = kGpu});
  expect_error("avg of int32", "avg", [&] { pg.all_reduce(ints, ReduceOp::Avg); });
  Tensor f = zeros({4}, TensorOptions{.device = kGpu});
  expect_error("broadcast from rank 1 of 1", "root rank 1", [&] { pg.broadcast(f, 1); });
  expect_error("send to itself", "itself", [&] { pg.send(f, 0); });
  expect_error("recv from itself", "itself", [&] { pg.recv(f, 0); });
  Tensor wrong = zeros({3}, TensorOptions{.device = kGpu});
  expect_error("reduce_scatter into the wrong size", "reduce_scatter",
               [&] { pg.reduce_scatter_async(wrong, f, ReduceOp::Sum)->wait(); });
  Tensor expanded = zeros({1}, TensorOptions{.device = kGpu}).expand({4});
  expect_error("all_reduce into an expanded view", "share memory", [&] { pg.all_reduce(expanded); });
  // The group is still usable after refusals.
  pg.all_reduce(f);
  expect(true, "usable after refusals");
}

// Rank 0 of 2 waits for a rank that never comes: a clear error within the timeout.
void test_timeout() {
  const auto t0 = std::chrono::steady_clock::now();
  expect_error("a rank that never joins", "timed out", [] {
    dist::make_nccl_group(dist::nccl_unique_id(), 0, 2, 0, {.timeout = std::chrono::seconds(3)});
  });
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  expect(s < 30, "the lone rank gave up in " + std::to_string(s) + " s (timeout 3 s)");
}

void test_destroy(dist::ProcessGroupPtr pg) {
  Tensor f = zeros({4}, TensorOptions{.device = kGpu});
  auto work = pg->all_reduce_async(f, ReduceOp::Sum);
  pg->destroy();
  expect(pg->is_destroyed(), "destroyed");
  work->wait();  // finished by destroy()
  expect_error("a collective after destroy", "destroyed", [&] { pg->all_reduce(f); });
  pg->destroy();  // idempotent
}

// all_reduce(sum) of float32, 1 MiB .. 1 GiB: median time, algbw and busbw. Not
// on the emulated device: it runs on the CPU, and its times are not a GPU's.
void bandwidth() {
  if (cuda::is_emulated()) {
    std::printf("all_reduce bandwidth: not measured on the emulated CUDA device (it runs on the CPU; its times "
                "would not be a GPU's)\n");
    return;
  }
  auto pg = dist::make_nccl_group(dist::nccl_unique_id(), 0, 1, 0, {.check_collectives = false});
  std::printf("\nall_reduce(sum) float32 on %d rank (busbw = algbw * 2(n-1)/n: 0 at one rank)\n", pg->size());
  std::printf("| %10s | %10s | %12s | %12s |\n", "bytes", "median us", "algbw GB/s", "busbw GB/s");
  for (int64_t bytes = int64_t{1} << 20; bytes <= int64_t{1} << 30; bytes *= 4) {
    Tensor t = ones({bytes / 4}, TensorOptions{.dtype = kFloat32, .device = kGpu});
    std::vector<double> us;
    for (int i = 0; i < 23; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      pg->all_reduce(t);
      const double d = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      if (i >= 3) us.push_back(d);  // 3 warm-up calls
    }
    std::sort(us.begin(), us.end());
    const double median = us[us.size() / 2];
    const double algbw = static_cast<double>(bytes) / (median * 1e-6) / 1e9;
    std::printf("| %10lld | %10.1f | %12.1f | %12.1f |\n", static_cast<long long>(bytes), median, algbw,
                algbw * bench::all_reduce_bus_factor(pg->size()));
  }
}

}  // namespace

int main() {
  std::printf("cuda::is_compiled() = %d\n", cuda::is_compiled() ? 1 : 0);
  if (const int status = testing::cuda_unavailable_status("test_nccl_gpu"); status >= 0) return status;
  dist::ProcessGroupPtr pg;
  group("make_nccl_group (world size 1, explicit id)", [&] {
    pg = dist::make_nccl_group(dist::nccl_unique_id(), 0, 1, 0, {.timeout = std::chrono::seconds(60)});
    expect(pg->backend() == "nccl" && pg->size() == 1 && pg->rank() == 0, "backend, size and rank");
  });
  if (pg) {
    group("every collective and dtype against the CPU", [&] { test_collectives(*pg); });
    group("non-contiguous tensors", [&] { test_non_contiguous(*pg); });
    group("after the compute stream; async works", [&] { test_stream_order(*pg); });
    group("after the current stream under a StreamGuard", [&] { test_current_stream_order(*pg); });
    group("refusals leave the group usable", [&] { test_refusals(*pg); });
    group("destroy", [&] { test_destroy(pg); });
  }
  group("a rank that never joins times out", test_timeout);
  group("all_reduce bandwidth", bandwidth);
  std::printf("test_nccl_gpu: %d checks, %d failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
