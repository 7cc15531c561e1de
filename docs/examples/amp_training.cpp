// Float16 training with the dynamic grad scaler: the loop, gradient
// accumulation, the sync-free step, and a checkpoint that carries the
// scaler and the precision policy. Runs on the CPU as written (on cuda:0 with
// MIXT_EXAMPLE_DEVICE=cuda; where CUDA code has run: docs/cuda.md#status).
// It checks what it shows: the loss falls, and the reloaded state equals the saved one.
#include <cstdio>

#include <mixt/mixt.h>

#include "example_support.h"

using namespace mixt;
namespace F = mixt::nn::functional;

int main() {
  manual_seed(0);
  nn::Sequential model(nn::Linear(16, 64), nn::GELU(), nn::Linear(64, 4));
  optim::AdamW opt(model.parameters(), {.lr = 3e-3});
  amp::GradScaler scaler({.initial_scale = 65536.0, .growth_interval = 50});

  // A toy task: the class is the index of the largest of the first 4 features.
  const Tensor x = randn({256, 16});
  const Tensor y = argmax(x.narrow(1, 0, 4), 1);
  auto loss_of = [&](const Tensor& xb, const Tensor& yb) {
    autocast::Guard ac({.device = DeviceType::CPU, .dtype = kFloat16});
    return F::cross_entropy(model.forward(xb), yb);
  };

  // 1. The plain loop: scale, backward, step (skipped on overflow), update.
  double first = 0, last = 0;
  int skipped = 0;
  for (int step = 0; step < 150; ++step) {
    opt.zero_grad();
    const Tensor loss = loss_of(x, y);
    scaler.scale(loss).backward();
    if (!scaler.step(opt)) ++skipped;
    scaler.update();
    (step == 0 ? first : last) = loss.item<double>();
  }
  std::printf("loss %.3f -> %.3f, scale %.0f, %d skipped steps\n", first, last, scaler.current_scale(), skipped);

  // 2. Gradient accumulation: four micro-batches, one unscale and one step per window.
  opt.zero_grad();
  for (int m = 0; m < 4; ++m) amp::backward(scaler, loss_of(x.narrow(0, 64 * m, 64), y.narrow(0, 64 * m, 64)));
  scaler.unscale(opt);  // e.g. to clip the true gradients here
  const bool stepped = amp::step(scaler, opt);
  std::printf("accumulated window stepped: %s\n", stepped ? "yes" : "no");

  // 3. The sync-free step: the update is predicated on the overflow flag where it
  //    lives; the decision is read only when the application asks.
  opt.zero_grad();
  scaler.scale(loss_of(x, y)).backward();
  scaler.step_sync_free(opt);
  scaler.update();
  std::printf("sync-free step skipped: %s\n", scaler.last_step_skipped() ? "yes" : "no");

  // 4. A checkpoint with model, optimizer, scaler, generator and precision fingerprint.
  const example::ScratchDir scratch;
  const std::string path = scratch.file("amp_training.safetensors");
  amp::save_training_checkpoint(path, model, opt, scaler);
  const io::StateDict saved_model = example::snapshot(model.state_dict()), saved_opt = example::snapshot(opt.state_dict());
  nn::Sequential restored_model(nn::Linear(16, 64), nn::GELU(), nn::Linear(64, 4));
  optim::AdamW restored_opt(restored_model.parameters(), {.lr = 3e-3});
  amp::GradScaler restored;
  const amp::ResumeReport report = amp::load_training_checkpoint(path, restored_model, restored_opt, restored);
  example::require(example::state_difference(saved_model, restored_model.state_dict()).empty(), "the model differs");
  example::require(example::state_difference(saved_opt, restored_opt.state_dict()).empty(), "the optimizer differs");
  example::require(example::state_difference(scaler.state_dict(), restored.state_dict()).empty(), "the scaler differs");
  std::printf("resumed at scale %.0f, policy %s\n  %s\n", restored.current_scale(),
              report.policy_matches ? "unchanged" : "changed", report.saved_fingerprint.c_str());
  example::require(last < 0.5 * first, "the loss did not fall by half");
  example::require(stepped, "the accumulated window stepped");
  example::require(report.policy_matches, "the precision policy is unchanged");
  return 0;
}
