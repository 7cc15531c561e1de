// mixt-bench-allreduce: all_reduce(sum) of float32 over the world group, launched
// with mpirun. Per message size: the median time (each call timed between two
// barriers, the slowest rank's time counting), the algorithm bandwidth
// (bytes / time) and the bus bandwidth (algbw * 2(n-1)/n), and on the CPU the
// ratio of that time to a plain memcpy of the same bytes measured in the same
// run. `--device cuda` uses the NCCL backend (one GPU per rank, by local rank).
// Its own program, so mixt-bench stays free of MPI.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <mixt/distributed/world.h>
#include <mixt/mixt.h>
#if MIXT_HAS_NCCL
#include <mixt/distributed/nccl/nccl_group.h>
#endif

#include "bench_cli.h"
#include "bench_json.h"
#include "bench_util.h"

namespace mixt::bench {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The rank of this process on its machine (Open MPI, Slurm), 0 when not launched.
int local_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"})
    if (const char* v = std::getenv(var)) return std::atoi(v);
  return 0;
}

// The device of this rank: the CPU, or the GPU of its local rank.
Device rank_device(Device asked) { return asked.is_cuda() ? Device::cuda(local_rank() % cuda::device_count()) : asked; }

dist::ProcessGroupPtr group_for(Device device, const dist::ProcessGroupPtr& world, dist::GroupOptions options) {
  if (!device.is_cuda()) return world;
#if MIXT_HAS_NCCL
  return dist::make_nccl_group(*world, device.index(), options);
#else
  MIXT_FAIL("--device cuda", "mixt was built without the NCCL backend (meson option nccl)");
#endif
}

// Seconds of one plain memcpy of `bytes`, median of `iters` (after one warm-up).
double memcpy_seconds(int64_t bytes, int64_t iters) {
  std::vector<char> src(static_cast<size_t>(bytes), 1), dst(static_cast<size_t>(bytes));
  std::memcpy(dst.data(), src.data(), src.size());
  std::vector<double> s;
  for (int64_t i = 0; i < iters; ++i) {
    const auto t0 = Clock::now();
    std::memcpy(dst.data(), src.data(), src.size());
    s.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return median(s);
}

int run_allreduce(const cli::Args& args) {
  const std::vector<int64_t> sizes = args.sizes("--sizes");
  const int64_t iters = args.integer("--iters");
  const Device device = rank_device(args.device());
  const dist::GroupOptions options{.check_collectives = !args.flag("--unchecked")};
  for (int64_t bytes : sizes)
    MIXT_CHECK(bytes % 4 == 0, "--sizes", "{} bytes is not a whole number of float32 elements", bytes);

  const dist::ProcessGroupPtr world = dist::init({.group = options});
  const dist::ProcessGroupPtr pg = group_for(device, world, options);
  const int n = pg->size();
  const bool cpu = device.is_cpu();
  const bool lead = pg->rank() == 0;
  if (lead) {
    std::printf("all_reduce(sum) float32 over %d rank%s, %s backend, median of %lld calls, check_collectives=%s\n\n", n,
                n == 1 ? "" : "s", pg->backend().c_str(), static_cast<long long>(iters),
                options.check_collectives ? "on" : "off");
    std::printf("| %10s | %11s | %10s | %10s | %8s |\n", "bytes", "median us", "algbw GB/s", "busbw GB/s",
                cpu ? "x memcpy" : "");
    std::printf("|-----------:|------------:|-----------:|-----------:|---------:|\n");
  }
  Json rows = Json::array();
  for (int64_t bytes : sizes) {
    Tensor t = zeros({bytes / 4}, TensorOptions{.dtype = kFloat32, .device = device});  // sums stay 0
    for (int i = 0; i < 2; ++i) pg->all_reduce(t);                                     // warm up
    std::vector<double> seconds;
    for (int64_t i = 0; i < iters; ++i) {
      pg->barrier();
      const auto t0 = Clock::now();
      pg->all_reduce(t);
      Tensor took = full({1}, std::chrono::duration<double>(Clock::now() - t0).count(), TensorOptions{.dtype = kFloat64});
      world->all_reduce(took, dist::ReduceOp::Max);  // the slowest rank's time
      seconds.push_back(took.item<double>());
    }
    const double s = median(seconds);
    const double algbw = static_cast<double>(bytes) / s / 1e9;
    const double busbw = algbw * all_reduce_bus_factor(n);
    const double copy = cpu ? memcpy_seconds(bytes, iters) : 0;
    if (lead) {
      std::printf("| %10lld | %11.1f | %10.2f | %10.2f | %8s |\n", static_cast<long long>(bytes), s * 1e6, algbw, busbw,
                  cpu ? fmt::format("{:.1f}", s / copy).c_str() : "");
      Json row = {{"bytes", bytes}, {"median_us", s * 1e6}, {"algbw_gbs", algbw}, {"busbw_gbs", busbw}};
      row["x_memcpy"] = cpu ? Json(s / copy) : Json(nullptr);
      rows.push_back(row);
    }
  }
  if (lead)
    write_figures(args.text("--json"), {{"benchmark", "allreduce"}, {"ranks", n}, {"backend", pg->backend()},
                                        {"device", device.str()}, {"iters", iters},
                                        {"check_collectives", options.check_collectives}, {"rows", rows}});
  if (pg != world) pg->destroy();
  dist::finalize();
  return 0;
}

cli::Command allreduce_command() {
  using cli::Kind;
  return {.name = "mixt-bench-allreduce",
          .summary = "all_reduce(sum) over the world group (launch with mpirun -np N): median time, algbw, busbw",
          .options = {cli::device_option("cpu: the MPI backend; cuda: NCCL, one GPU per rank", true),
                      {.name = "--sizes", .kind = Kind::Sizes, .metavar = "LIST",
                       .help = "message sizes in bytes, comma-separated, K/M/G suffixes allowed",
                       .default_value = "4K,16K,64K,256K,1M,4M,16M,64M,256M", .min = 4,
                       .max = int64_t{1} << 36},
                      {.name = "--iters", .kind = Kind::Int, .metavar = "N", .help = "timed calls per size",
                       .default_value = "20", .min = 1, .max = 100000},
                      {.name = "--unchecked", .kind = Kind::Flag,
                       .help = "turn off the collectives' signature check (GroupOptions::check_collectives)"},
                      cli::json_option()},
          .run = run_allreduce,
          .standalone = true};
}

}  // namespace
}  // namespace mixt::bench

int main(int argc, char** argv) { return mixt::bench::cli::run_program(mixt::bench::allreduce_command(), argc, argv); }
