// One training step of a small MLP on the CPU (forward, cross entropy, backward,
// AdamW): milliseconds per step and the peak memory the step allocates.
#include <chrono>
#include <cstdio>
#include <string>

#include <mixt/mixt.h>
#include <mixt/runtime/cuda.h>

#include "bench_json.h"
#include "bench_train.h"

namespace mixt::bench {

int run_train(const cli::Args& args) {
  const int64_t steps = args.integer("--steps");
  const int64_t dim = args.integer("--dim");
  const int64_t batch = args.integer("--batch");
  const int64_t layers = args.integer("--layers");
  const Device device = args.device();
  manual_seed(0);
  nn::Sequential model;
  for (int64_t i = 0; i < layers; ++i) {
    model.push_back(nn::Linear(dim, dim));
    model.push_back(nn::GELU());
  }
  model.push_back(nn::LayerNorm(Shape{dim}));
  model.push_back(nn::Linear(dim, 10));
  // Built on the CPU and moved: the same seed gives the same weights on every device.
  model.to(device);
  optim::AdamW opt(model.parameters(), {.lr = 1e-3});
  const Tensor x = randn({batch, dim}).to(device);
  const Tensor y = randint(0, 10, {batch}).to(device);
  auto step = [&] {
    opt.zero_grad();
    Tensor loss = nn::functional::cross_entropy(model.forward(x), y);
    loss.backward();
    opt.step();
    return loss.item<double>();
  };
  step();  // warm up (allocator cache, first-touch)
  reset_cpu_peak_memory();
  const int64_t before = cpu_memory_stats().allocated_bytes;
  const auto t0 = std::chrono::steady_clock::now();
  double loss = 0;
  for (int64_t i = 0; i < steps; ++i) loss = step();
  cuda::synchronize();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
                    static_cast<double>(steps);
  const MemoryStats m = cpu_memory_stats();
  const double flops = 6.0 * static_cast<double>(model.num_parameters()) * static_cast<double>(batch);
  const double peak_mb = static_cast<double>(m.peak_bytes - before) / 1e6;
  const double params_mb = static_cast<double>(model.num_parameters()) * 4 / 1e6;
  std::printf("mixt-bench train: MLP %lld x (Linear %lld + GELU), LayerNorm, Linear %lld->10; batch %lld; AdamW; "
              "float32 on %s\n",
              static_cast<long long>(layers), static_cast<long long>(dim), static_cast<long long>(dim),
              static_cast<long long>(batch), device.is_cpu() ? "the CPU" : device.str().c_str());
  std::printf("%-24s %10.2f\n", "ms/step", ms);
  std::printf("%-24s %10.1f\n", "GFLOP/s (6*params*batch)", flops / ms / 1e6);
  // The peak counts the CPU allocator only (mixt keeps no CUDA memory statistics).
  if (device.is_cpu()) std::printf("%-24s %10.2f\n", "peak MB during steps", peak_mb);
  std::printf("%-24s %10.2f\n", "parameters (MB)", params_mb);
  std::printf("%-24s %10.4f\n", "final loss", loss);
  write_figures(args.text("--json"), {{"command", "train"},
                                      {"device", device.str()},
                                      {"steps", steps},
                                      {"dim", dim},
                                      {"batch", batch},
                                      {"layers", layers},
                                      {"ms_per_step", ms},
                                      {"gflops", flops / ms / 1e6},
                                      {"peak_mb", device.is_cpu() ? Json(peak_mb) : Json()},
                                      {"parameters_mb", params_mb},
                                      {"final_loss", loss}});
  return 0;
}

cli::Command train_command() {
  using cli::Kind;
  return {.name = "train",
          .summary = "ms per training step of a small MLP, and the peak memory of the steps",
          .options = {{.name = "--steps", .kind = Kind::Int, .metavar = "N", .help = "timed steps, after one warm-up step",
                       .default_value = "30"},
                      {.name = "--dim", .kind = Kind::Int, .metavar = "D", .help = "width of the hidden layers",
                       .default_value = "512"},
                      {.name = "--batch", .kind = Kind::Int, .metavar = "B", .help = "rows per batch",
                       .default_value = "256"},
                      {.name = "--layers", .kind = Kind::Int, .metavar = "L", .help = "Linear + GELU layers",
                       .default_value = "4", .min = 0},
                      cli::device_option("where the model and the batch live", /*needs_usable=*/true),
                      cli::json_option()},
          .run = run_train};
}

}  // namespace mixt::bench
