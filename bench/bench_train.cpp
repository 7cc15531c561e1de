// One training step of a small MLP on the CPU (forward, cross entropy, backward,
// AdamW): milliseconds per step and the peak memory the step allocates.
#include <chrono>
#include <cstdio>

#include <mixt/mixt.h>

#include "bench_train.h"
#include "bench_util.h"

namespace mixt::bench {

int run_train(int argc, char** argv) {
  const int64_t steps = int_option(argc, argv, "--steps", 30);
  const int64_t dim = int_option(argc, argv, "--dim", 512);
  const int64_t batch = int_option(argc, argv, "--batch", 256);
  const int64_t layers = int_option(argc, argv, "--layers", 4);
  manual_seed(0);
  nn::Sequential model;
  for (int64_t i = 0; i < layers; ++i) {
    model.push_back(nn::Linear(dim, dim));
    model.push_back(nn::GELU());
  }
  model.push_back(nn::LayerNorm(Shape{dim}));
  model.push_back(nn::Linear(dim, 10));
  optim::AdamW opt(model.parameters(), {.lr = 1e-3});
  const Tensor x = randn({batch, dim});
  const Tensor y = randint(0, 10, {batch});
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
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count() /
                    static_cast<double>(steps);
  const MemoryStats m = cpu_memory_stats();
  const double flops = 6.0 * static_cast<double>(model.num_parameters()) * static_cast<double>(batch);
  std::printf("mixt-bench train: MLP %lld x (Linear %lld + GELU), LayerNorm, Linear %lld->10; batch %lld; AdamW; "
              "float32 on the CPU\n",
              static_cast<long long>(layers), static_cast<long long>(dim), static_cast<long long>(dim),
              static_cast<long long>(batch));
  std::printf("%-24s %10.2f\n", "ms/step", ms);
  std::printf("%-24s %10.1f\n", "GFLOP/s (6*params*batch)", flops / ms / 1e6);
  std::printf("%-24s %10.2f\n", "peak MB during steps", static_cast<double>(m.peak_bytes - before) / 1e6);
  std::printf("%-24s %10.2f\n", "parameters (MB)", static_cast<double>(model.num_parameters()) * 4 / 1e6);
  std::printf("%-24s %10.4f\n", "final loss", loss);
  return 0;
}

}  // namespace mixt::bench
