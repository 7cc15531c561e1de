// A training loop as an embedding application writes it: a model from
// modules, AdamW with a warmup + cosine schedule, and a checkpoint that is
// written and resumed. It checks what it shows: the loss falls, and the resumed
// objects hold exactly the state that was saved.
#include <cmath>
#include <cstdio>
#include <string>

#include <mixt/mixt.h>

#include "example_support.h"

using namespace mixt;
namespace F = mixt::nn::functional;

int main() {
  manual_seed(0);
  // The default device: the CPU, unless a DefaultDeviceGuard names another one (the
  // GPU check runs every example with cuda:0 as the default, example_support.h).
  const Device dev = default_device();
  nn::Sequential model(nn::Linear(16, 64), nn::GELU(), nn::Linear(64, 4));
  model.to(dev);
  optim::AdamW opt(model.parameters(), {.lr = 3e-3});
  optim::WarmupCosine schedule(opt, /*warmup_steps=*/10, /*total_steps=*/200);

  // A toy task: the class is the index of the largest of the first 4 features.
  Tensor x = randn({256, 16}).to(dev);
  Tensor y = argmax(x.narrow(1, 0, 4), 1).to(dev);
  const example::ScratchDir scratch;
  const std::string path = scratch.file("training_loop.ckpt.safetensors");
  io::StateDict saved_model, saved_opt, saved_schedule, saved_rng;
  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    opt.zero_grad();
    Tensor loss = F::cross_entropy(model.forward(x), y);
    loss.backward();
    opt.step();
    schedule.step();
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    example::require(std::isfinite(last), "the loss is not finite");
    if (step == 100) {
      io::save_checkpoint(path, model, opt, &schedule);
      saved_model = example::snapshot(model.state_dict());
      saved_opt = example::snapshot(opt.state_dict());
      saved_schedule = schedule.state_dict();
      saved_rng = io::rng_state();
    }
  }
  std::printf("loss %.3f -> %.3f\n", first, last);
  example::require(last < 0.5 * first, "the loss did not fall by half");

  // Resume: fresh objects, state from the file.
  nn::Sequential restored(nn::Linear(16, 64), nn::GELU(), nn::Linear(64, 4));
  optim::AdamW restored_opt(restored.parameters(), {.lr = 3e-3});
  optim::WarmupCosine restored_schedule(restored_opt, 10, 200);
  io::load_checkpoint(path, restored, restored_opt, &restored_schedule);
  std::printf("resumed at step %lld with lr %.2e\n", static_cast<long long>(restored_schedule.current_step()),
              restored_opt.lr());
  example::require(restored_schedule.current_step() == 101, "the schedule resumed at another step");
  example::require(example::state_difference(saved_model, restored.state_dict()).empty(), "the model differs");
  example::require(example::state_difference(saved_opt, restored_opt.state_dict()).empty(), "the optimizer differs");
  example::require(example::state_difference(saved_schedule, restored_schedule.state_dict()).empty(),
                   "the schedule differs");
  example::require(example::state_difference(saved_rng, io::rng_state()).empty(), "the generator differs");

  // Without a schedule (the argument is optional): the model, the optimizer and the
  // generator. Asking such a checkpoint for a schedule raises, naming the missing part.
  const std::string plain = scratch.file("model_and_optimizer.safetensors");
  io::save_checkpoint(plain, restored, restored_opt);
  nn::Sequential again(nn::Linear(16, 64), nn::GELU(), nn::Linear(64, 4));
  optim::AdamW again_opt(again.parameters(), {.lr = 3e-3});
  io::load_checkpoint(plain, again, again_opt);
  example::require(example::state_difference(restored.state_dict(), again.state_dict()).empty() &&
                       example::state_difference(restored_opt.state_dict(), again_opt.state_dict()).empty(),
                   "a checkpoint without a schedule restores the model and the optimizer");
  optim::WarmupCosine again_schedule(again_opt, 10, 200);
  bool raised = false;
  try {
    io::load_checkpoint(plain, again, again_opt, &again_schedule);
  } catch (const Error& e) {
    raised = std::string(e.what()).find("schedule") != std::string::npos;
  }
  example::require(raised, "loading a schedule from a checkpoint without one raises naming the part");
  return 0;
}
