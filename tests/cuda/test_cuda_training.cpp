// Training on CUDA against the same training on the CPU: autograd through CUDA
// kernels, the fused optimizers (sgd_step_, adam_step_), the grad scaler with its
// sync-free step, and determinism (the same step twice gives the same bits). Own main
// (no Catch2, so the binary carries to a GPU machine); exits 77 without a GPU.
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <mixt/mixt.h>

#include "gpu_checks.h"
#include "gpu_skip.h"

using namespace mixt;
using namespace mixt::testing;
namespace F = mixt::nn::functional;

namespace {

const Device kCuda = Device::cuda(0);

// Largest |a - b| / (atol + rtol |b|) over the elements (<= 1 passes), in float64 on the CPU.
double closeness(const Tensor& a, const Tensor& b, double rtol, double atol) {
  const std::vector<double> x = a.to(Device::cpu(), kFloat64).contiguous().to_vector<double>();
  const std::vector<double> y = b.to(Device::cpu(), kFloat64).contiguous().to_vector<double>();
  if (x.size() != y.size()) return INFINITY;
  double worst = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]) != std::isnan(y[i])) return INFINITY;
    if (!std::isnan(x[i])) worst = std::max(worst, std::abs(x[i] - y[i]) / (atol + rtol * std::abs(y[i])));
  }
  return worst;
}

// True when `a` (any device) and `b` hold the same bytes.
bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor x = a.cpu().contiguous(), y = b.cpu().contiguous();
  return x.dtype() == y.dtype() && x.sizes() == y.sizes() &&
         std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.nbytes())) == 0;
}

// A two-layer MLP's parameters, drawn on the CPU (the same numbers for every device).
std::vector<Tensor> mlp_params(uint64_t seed) {
  Generator g(seed);
  return {mul(randn({64, 32}, {}, &g), 0.1), zeros({64}), mul(randn({8, 64}, {}, &g), 0.1), zeros({8})};
}

// loss = mean((gelu(x W1^T + b1) W2^T + b2 - target)^2)
Tensor mlp_loss(const std::vector<Tensor>& p, const Tensor& x, const Tensor& target) {
  const Tensor h = F::gelu(F::linear(x, p[0], p[1]));
  return F::mse_loss(F::linear(h, p[2], p[3]), target);
}

// Copies of `params` on `device` that require grad (leaves).
std::vector<Tensor> leaves_on(const std::vector<Tensor>& params, Device device) {
  std::vector<Tensor> out;
  for (const Tensor& t : params) out.push_back(t.to(device).detach().requires_grad_(true));
  return out;
}

// Runs `steps` optimizer steps of the MLP on `device` and returns the final parameters.
template <class MakeOpt>
std::vector<Tensor> train(Device device, int steps, const MakeOpt& make_opt) {
  std::vector<Tensor> p = leaves_on(mlp_params(1), device);
  auto opt = make_opt(p);
  Generator g(2);
  for (int s = 0; s < steps; ++s) {
    const Tensor x = randn({16, 32}, {}, &g).to(device), t = randn({16, 8}, {}, &g).to(device);
    opt->zero_grad();
    mlp_loss(p, x, t).backward();
    opt->step();
  }
  return p;
}

void autograd_group() {
  Generator g(3);
  const Tensor x = randn({16, 32}, {}, &g), t = randn({16, 8}, {}, &g);
  std::vector<Tensor> cpu = leaves_on(mlp_params(1), Device::cpu()), gpu = leaves_on(mlp_params(1), kCuda);
  const Tensor lc = mlp_loss(cpu, x, t), lg = mlp_loss(gpu, x.to(kCuda), t.to(kCuda));
  lc.backward();
  lg.backward();
  expect(lg.device() == kCuda, "the loss stays on CUDA");
  expect(closeness(lg, lc, 1e-5, 1e-6) <= 1, "loss: CUDA vs CPU");
  for (size_t i = 0; i < cpu.size(); ++i) {
    expect(gpu[i].grad().defined() && gpu[i].grad().device() == kCuda, "gradient " + std::to_string(i) + " on CUDA");
    expect(closeness(gpu[i].grad(), cpu[i].grad(), 1e-4, 1e-6) <= 1, "gradient " + std::to_string(i) + ": CUDA vs CPU");
  }
}

void optimizer_group() {
  auto sgd = [](std::vector<Tensor>& p) {
    return std::make_unique<optim::SGD>(p, optim::SGDOptions{.lr = 0.1, .momentum = 0.9, .weight_decay = 1e-4});
  };
  auto adamw = [](std::vector<Tensor>& p) {
    return std::make_unique<optim::AdamW>(p, optim::AdamWOptions{.lr = 1e-2, .weight_decay = 0.01});
  };
  const auto sc = train(Device::cpu(), 5, sgd), sg = train(kCuda, 5, sgd);
  const auto ac = train(Device::cpu(), 5, adamw), ag = train(kCuda, 5, adamw);
  for (size_t i = 0; i < sc.size(); ++i) {
    // GEMMs differ from OpenBLAS in their summation order, so parameters agree closely, not bit for bit.
    expect(closeness(sg[i], sc[i], 1e-4, 1e-6) <= 1, "SGD parameter " + std::to_string(i) + ": CUDA vs CPU");
    expect(closeness(ag[i], ac[i], 1e-3, 1e-5) <= 1, "AdamW parameter " + std::to_string(i) + ": CUDA vs CPU");
  }
  // The fused update itself on identical inputs: the same bits on both devices.
  Generator g(4);
  const Tensor w = randn({1000}, {}, &g), grad = randn({1000}, {}, &g);
  std::vector<Tensor> pc = {w.clone().requires_grad_(true)}, pg = {w.to(kCuda).requires_grad_(true)};
  optim::AdamW oc(pc, {.lr = 1e-2, .weight_decay = 0.01}), og(pg, {.lr = 1e-2, .weight_decay = 0.01});
  for (int s = 0; s < 3; ++s) {
    pc[0].set_grad(grad.clone());
    pg[0].set_grad(grad.to(kCuda));
    oc.step();
    og.step();
  }
  expect(same_bits(pg[0], pc[0]), "three AdamW steps on identical gradients: the same bits on CUDA and the CPU");
}

void scaler_group() {
  // float16 autocast with the grad scaler: an injected overflow is skipped and backs the scale off, as on the CPU.
  auto run = [](Device device, bool sync_free) {
    std::vector<Tensor> p = leaves_on(mlp_params(5), device);
    optim::SGD opt(p, {.lr = 0.05});
    amp::GradScaler scaler({.initial_scale = 1024.0, .growth_interval = 2});
    Generator g(6);
    std::vector<double> scales;
    for (int s = 0; s < 6; ++s) {
      const Tensor x = randn({16, 32}, {}, &g).to(device), t = randn({16, 8}, {}, &g).to(device);
      opt.zero_grad();
      Tensor loss;
      {
        autocast::Guard ac({.device = device.type(), .dtype = kFloat16});
        loss = mlp_loss(p, x, t);
      }
      scaler.scale(loss).backward();
      if (s == 2) p[0].set_grad(full_like(p[0].grad(), INFINITY));  // one overflowing step
      if (sync_free) scaler.step_sync_free(opt);
      else scaler.step(opt);
      scaler.update();
      scales.push_back(scaler.current_scale());
    }
    return std::make_pair(scales, scaler.skipped_steps());
  };
  const auto cpu = run(Device::cpu(), false), gpu = run(kCuda, false), gpu_free = run(kCuda, true);
  expect(gpu.first == cpu.first, "the scale after each step: CUDA equals the CPU");
  expect(gpu.second == 1 && cpu.second == 1, "exactly one skipped step on each device");
  expect(gpu_free.first == cpu.first, "step_sync_free on CUDA follows the same scales");
}

void determinism_group() {
  set_deterministic(true);
  auto adamw = [](std::vector<Tensor>& p) { return std::make_unique<optim::AdamW>(p, optim::AdamWOptions{.lr = 1e-2}); };
  const auto a = train(kCuda, 4, adamw), b = train(kCuda, 4, adamw);
  for (size_t i = 0; i < a.size(); ++i)
    expect(same_bits(a[i], b[i]), "deterministic: parameter " + std::to_string(i) + " identical in two runs");
  set_deterministic(false);
}

}  // namespace

int main() {
  if (const int status = cuda_unavailable_status("test_cuda_training"); status >= 0) return status;
  group("autograd through CUDA (MLP loss and gradients vs CPU)", autograd_group);
  group("fused SGD and AdamW on CUDA vs CPU", optimizer_group);
  group("grad scaler on CUDA (skip, backoff, sync-free)", scaler_group);
  group("set_deterministic: two runs, the same bits", determinism_group);
  std::printf("test_cuda_training: %d checks, %d failures\n", g_checks, g_failures);
  return g_failures == 0 ? 0 : 1;
}
