// mixt-bench train-step: the MLP training step of the GEMM issue's target — tokens x dim
// activations through L x (Linear dim->dim + GELU) and a LayerNorm, an MSE loss,
// backward, fused AdamW — in float32, TF32, bfloat16 autocast or float16 autocast with
// the grad scaler; with the GEMM floor measured in the same run: the step's 3L GEMMs
// alone (forward, input gradient, weight gradient per layer) in the step's compute dtype.
// The defaults are the on CUDA (8192 tokens, d = 4096, 8 layers) and small on
// the CPU (256 tokens, d = 512, 4 layers).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <mixt/mixt.h>
#include <mixt/runtime/cuda.h>
#include <mixt/runtime/gemm_settings.h>

#include "bench_json.h"
#include "bench_train_step.h"

namespace mixt::bench {
namespace {

// Median seconds of `reps` calls of f (after two warm-up calls), waiting for the device after each.
template <class F>
double median_call_seconds(const Device& device, int64_t reps, F&& f) {
  for (int i = 0; i < 2; ++i) f();
  if (device.is_cuda()) cuda::synchronize();
  std::vector<double> runs;
  for (int64_t r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    if (device.is_cuda()) cuda::synchronize();
    runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

struct StepConfig {
  int64_t tokens, dim, layers;
  std::string precision;  // f32, tf32, bf16, fp16
};

// The dtype the step's GEMMs run in.
ScalarType gemm_dtype(const std::string& precision) {
  if (precision == "bf16") return kBFloat16;
  if (precision == "fp16") return kFloat16;
  return kFloat32;
}

// One precision's figures.
struct StepFigures {
  double step_ms, gemm_floor_ms, gemm_tflops, final_loss;
};

StepFigures measure(const StepConfig& cfg, const Device& device, int64_t steps) {
  set_float32_matmul_precision(cfg.precision == "tf32" ? Float32MatmulPrecision::High
                                                       : Float32MatmulPrecision::Highest);
  manual_seed(0);
  nn::Sequential model;
  for (int64_t i = 0; i < cfg.layers; ++i) {
    model.push_back(nn::Linear(cfg.dim, cfg.dim));
    model.push_back(nn::GELU());
  }
  model.push_back(nn::LayerNorm(Shape{cfg.dim}));
  model.to(device);
  optim::AdamW opt(model.parameters(), {.lr = 1e-4});
  amp::GradScaler scaler({.initial_scale = 1024.0});
  const Tensor x = randn({cfg.tokens, cfg.dim}).to(device);
  const Tensor target = randn({cfg.tokens, cfg.dim}).to(device);
  const ScalarType low = gemm_dtype(cfg.precision);
  Tensor loss;
  auto step = [&] {
    opt.zero_grad();
    {
      std::optional<autocast::Guard> guard;
      if (low != kFloat32) guard.emplace(autocast::Options{.device = device.type(), .dtype = low});
      loss = nn::functional::mse_loss(model.forward(x), target);
    }
    if (cfg.precision == "fp16") {
      scaler.scale(loss).backward();
      scaler.step_sync_free(opt);
      scaler.update();
    } else {
      loss.backward();
      opt.step();
    }
  };
  StepFigures f{};
  f.step_ms = median_call_seconds(device, steps, step) * 1e3;
  f.final_loss = loss.item<double>();

  // The GEMM floor: per layer y = x W^T, dx = dy W and dW = dy^T x, in the step's dtype.
  const Tensor a = randn({cfg.tokens, cfg.dim}).to(low).to(device);
  const Tensor w = randn({cfg.dim, cfg.dim}).to(low).to(device);
  f.gemm_floor_ms = median_call_seconds(device, steps, [&] {
                      for (int64_t l = 0; l < cfg.layers; ++l) {
                        (void)mm(a, w.t());
                        (void)mm(a, w);
                        (void)mm(a.t(), a);
                      }
                    }) * 1e3;
  const double flops = 3.0 * 2.0 * static_cast<double>(cfg.tokens) * static_cast<double>(cfg.dim) *
                       static_cast<double>(cfg.dim) * static_cast<double>(cfg.layers);
  f.gemm_tflops = flops / (f.gemm_floor_ms / 1e3) / 1e12;
  return f;
}

}  // namespace

int run_train_step(const cli::Args& args) {
  const Device device = args.device();
  const bool cpu = device.is_cpu();
  // The sizes on CUDA; small ones on the CPU unless given.
  auto size = [&](const char* name, int64_t on_cpu) { return args.given(name) || !cpu ? args.integer(name) : on_cpu; };
  const int64_t tokens = size("--tokens", 256), dim = size("--dim", 512), layers = size("--layers", 4);
  const int64_t steps = args.integer("--steps");
  std::printf("mixt-bench train-step on %s: %lld tokens, %lld x (Linear %lld + GELU), LayerNorm, MSE, fused AdamW; "
              "median of %lld steps\n\n",
              device.str().c_str(), static_cast<long long>(tokens), static_cast<long long>(layers),
              static_cast<long long>(dim), static_cast<long long>(steps));
  std::printf("| %-9s | %10s | %14s | %10s | %12s | %10s |\n", "precision", "ms/step", "GEMM floor ms", "step/floor",
              "floor TFLOP/s", "last loss");
  std::printf("|-----------|------------|----------------|------------|--------------|------------|\n");
  const Float32MatmulPrecision saved = float32_matmul_precision();
  Json rows = Json::array();
  for (const std::string& precision : args.list("--precision")) {
    const StepFigures f = measure({tokens, dim, layers, precision}, device, steps);
    std::printf("| %-9s | %10.3f | %14.3f | %10.2f | %12.2f | %10.4f |\n", precision.c_str(), f.step_ms,
                f.gemm_floor_ms, f.step_ms / f.gemm_floor_ms, f.gemm_tflops, f.final_loss);
    rows.push_back({{"precision", precision},
                    {"ms_per_step", f.step_ms},
                    {"gemm_floor_ms", f.gemm_floor_ms},
                    {"step_over_floor", f.step_ms / f.gemm_floor_ms},
                    {"gemm_tflops", f.gemm_tflops},
                    {"final_loss", f.final_loss}});
  }
  set_float32_matmul_precision(saved);
  std::printf("\nThe floor is the step's 3 x %lld GEMMs alone in the step's GEMM dtype. Target on an H200 at the\n"
              "default sizes: bf16 at most 11.0 ms per step (PyTorch eager 12.5 ms, torch.compile 12.05 ms).\n",
              static_cast<long long>(layers));
  write_figures(args.text("--json"), {{"command", "train-step"},
                                      {"device", device.str()},
                                      {"tokens", tokens},
                                      {"dim", dim},
                                      {"layers", layers},
                                      {"steps", steps},
                                      {"rows", rows}});
  return 0;
}

cli::Command train_step_command() {
  using cli::Kind;
  return {.name = "train-step",
          .summary = "ms per MLP training step (Linear+GELU layers, LayerNorm, AdamW) against its GEMMs alone, per precision",
          .options = {cli::device_option("where the model and the batch live", /*needs_usable=*/true),
                      {.name = "--precision", .kind = Kind::List, .metavar = "P",
                       .help = "any of f32, tf32 (float32 GEMMs in TF32 on CUDA), bf16 (autocast), fp16 "
                               "(autocast + grad scaler)",
                       .default_value = "bf16", .choices = {"f32", "tf32", "bf16", "fp16"}},
                      {.name = "--tokens", .kind = Kind::Int, .metavar = "T",
                       .help = "rows of the activation (256 on the CPU unless given)", .default_value = "8192"},
                      {.name = "--dim", .kind = Kind::Int, .metavar = "D",
                       .help = "width of every layer (512 on the CPU unless given)", .default_value = "4096"},
                      {.name = "--layers", .kind = Kind::Int, .metavar = "L",
                       .help = "Linear + GELU layers (4 on the CPU unless given)", .default_value = "8"},
                      {.name = "--steps", .kind = Kind::Int, .metavar = "N",
                       .help = "timed steps (and GEMM-floor runs), the median is shown", .default_value = "10",
                       .max = 100'000},
                      cli::json_option()},
          .run = run_train_step};
}

}  // namespace mixt::bench
