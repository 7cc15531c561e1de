// A training loop as an embedding application writes it: a model from
// modules, AdamW with a warmup + cosine schedule, and a checkpoint that is
// written and resumed.
#include <cstdio>

#include <mixt/mixt.h>

using namespace mixt;
namespace F = mixt::nn::functional;

int main() {
  manual_seed(0);
  const Device dev = cuda::is_available() ? Device::cuda(0) : Device::cpu();
  nn::Sequential model(nn::Linear(16, 64), nn::GELU(), nn::Linear(64, 4));
  model.to(dev);
  optim::AdamW opt(model.parameters(), {.lr = 3e-3});
  optim::WarmupCosine schedule(opt, /*warmup_steps=*/10, /*total_steps=*/200);

  // A toy task: the class is the index of the largest of the first 4 features.
  Tensor x = randn({256, 16}).to(dev);
  Tensor y = argmax(x.narrow(1, 0, 4), 1).to(dev);
  double first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    opt.zero_grad();
    Tensor loss = F::cross_entropy(model.forward(x), y);
    loss.backward();
    opt.step();
    schedule.step();
    if (step == 0) first = loss.item<double>();
    last = loss.item<double>();
    if (step == 100) io::save_checkpoint("training_loop.ckpt.safetensors", model, opt, &schedule);
  }
  std::printf("loss %.3f -> %.3f\n", first, last);

  // Resume: fresh objects, state from the file.
  nn::Sequential restored(nn::Linear(16, 64), nn::GELU(), nn::Linear(64, 4));
  optim::AdamW restored_opt(restored.parameters(), {.lr = 3e-3});
  optim::WarmupCosine restored_schedule(restored_opt, 10, 200);
  io::load_checkpoint("training_loop.ckpt.safetensors", restored, restored_opt, &restored_schedule);
  std::printf("resumed at step %lld with lr %.2e\n", static_cast<long long>(restored_schedule.current_step()),
              restored_opt.lr());
  std::remove("training_loop.ckpt.safetensors");
  return last < first ? 0 : 1;
}
