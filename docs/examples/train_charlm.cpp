// The training demo: a small character-level transformer language model
// trained on real text (on the GPU when one is present, else on the CPU), with a
// progress line, a checkpoint that is written and resumed, and a sample of generated
// text at the end.
//
//   train_charlm [text file] [--steps N] [--seconds S] [--precision bf16|fp16|f32]
//                [--checkpoint PATH] [--device auto|cpu|cuda] [--deterministic]
//                [--save-params PATH] [--sample N]
// --device auto (the default) picks cuda:0 when a GPU is available. --deterministic
// calls set_deterministic(true); --save-params writes the trained parameters
// (safetensors) so two runs can be compared bit for bit; --sample sets the length of the
// generated sample (default 200 characters).
// Default text: /usr/share/common-licenses/GPL-3 (the last 10% is held out);
// default: 1200 steps under bfloat16 autocast, stopping early at 100 seconds.
// fp16 trains under float16 autocast with the dynamic grad scaler. The checkpoint
// goes to PATH, by default into a fresh temporary directory (removed at the end).
//
// It checks what it shows and exits with 1 otherwise: every loss is finite, the
// held-out loss falls, and the reloaded checkpoint equals the saved state (model,
// optimizer, schedule, scaler and random generator, bit for bit).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <mixt/mixt.h>

#include "charlm.h"
#include "example_support.h"

using namespace mixt;
namespace F = mixt::nn::functional;

using charlm::CharLM;
using charlm::Corpus;

namespace {

struct Config : charlm::ModelSize {
  std::string path = charlm::kDefaultText;
  int64_t steps = 1200;
  double seconds = 100;
  double lr = 3e-3;
  std::string precision = "bf16";  // bf16 (default), fp16 (with the grad scaler) or f32
  std::string checkpoint;          // "" : a file in a fresh temporary directory
  std::string device_name = "auto";
  bool deterministic = false;
  std::string save_params;         // "" : not written
  int64_t sample_chars = 200;

  bool autocast() const { return precision != "f32"; }
  ScalarType low_dtype() const { return precision == "fp16" ? kFloat16 : kBFloat16; }
};

Config parse(int argc, char** argv) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) c.steps = std::atoll(argv[++i]);
    else if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) c.seconds = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--precision") && i + 1 < argc) c.precision = argv[++i];
    else if (!std::strcmp(argv[i], "--checkpoint") && i + 1 < argc) c.checkpoint = argv[++i];
    else if (!std::strcmp(argv[i], "--device") && i + 1 < argc) c.device_name = argv[++i];
    else if (!std::strcmp(argv[i], "--deterministic")) c.deterministic = true;
    else if (!std::strcmp(argv[i], "--save-params") && i + 1 < argc) c.save_params = argv[++i];
    else if (!std::strcmp(argv[i], "--sample") && i + 1 < argc) c.sample_chars = std::atoll(argv[++i]);
    else c.path = argv[i];
  }
  return c;
}

// A model, its optimizer, its schedule and its grad scaler: what a checkpoint restores.
struct Run {
  std::unique_ptr<CharLM> model;
  std::unique_ptr<optim::AdamW> opt;
  std::unique_ptr<optim::WarmupCosine> schedule;
  std::unique_ptr<amp::GradScaler> scaler;  // enabled for fp16 only (bfloat16 needs no scaling)
};

Run make_run(int64_t vocab, const Config& c, int64_t planned_steps) {
  Run r;
  r.model = std::make_unique<CharLM>(vocab, c);  // initialised on the CPU (the same weights everywhere)
  r.model->to(c.device);
  r.opt = std::make_unique<optim::AdamW>(r.model->parameters(), optim::AdamWOptions{.lr = c.lr, .weight_decay = 0.01});
  r.schedule = std::make_unique<optim::WarmupCosine>(*r.opt, std::min<int64_t>(50, planned_steps / 10 + 1),
                                                     planned_steps, 0.1);
  r.scaler = std::make_unique<amp::GradScaler>(amp::GradScalerOptions{.enabled = c.precision == "fp16"});
  return r;
}

// The device of --device: auto is cuda:0 when a GPU is available (the emulated CUDA
// device is a test device: auto keeps the CPU there, --device cuda selects it).
Device pick_device(const std::string& name) {
  if (name == "cpu") return Device::cpu();
  if (name == "cuda") return Device::cuda(0);
  if (name != "auto") throw Error("train_charlm", "--device must be auto, cpu or cuda, not " + name);
  return cuda::is_available() && !cuda::is_emulated() ? Device::cuda(0) : Device::cpu();
}

// Bytes in use on `device`, for the progress line.
double megabytes_in_use(Device device) {
  const int64_t bytes = device.is_cuda() ? cuda::memory_stats(device).allocated_bytes : cpu_memory_stats().allocated_bytes;
  return static_cast<double>(bytes) / 1e6;
}

}  // namespace

int train_demo(int argc, char** argv) {
  Config cfg = parse(argc, argv);
  cfg.device = pick_device(cfg.device_name);
  set_deterministic(cfg.deterministic);
  const Corpus corpus = charlm::load(cfg.path);
  std::printf("text: %s, %zu characters (last %zu held out), vocabulary %zu, unigram entropy %.3f nats/char\n",
              cfg.path.c_str(), corpus.ids.size(), corpus.ids.size() - corpus.train_end, corpus.chars.size(),
              corpus.unigram_entropy);

  manual_seed(0);
  const int64_t vocab = static_cast<int64_t>(corpus.chars.size());
  const int64_t planned = cfg.steps;
  Run run = make_run(vocab, cfg, planned);
  std::printf("model: %lld layers, dim %lld, %lld heads, context %lld, %lld parameters; batch %lld; %s\n",
              static_cast<long long>(cfg.layers), static_cast<long long>(cfg.dim), static_cast<long long>(cfg.heads),
              static_cast<long long>(cfg.context), static_cast<long long>(run.model->num_parameters()),
              static_cast<long long>(cfg.batch),
              cfg.precision == "fp16"   ? "float16 autocast + grad scaler"
              : cfg.precision == "f32" ? "float32"
                                       : "bfloat16 autocast");
  std::printf("device: %s%s%s\n", cfg.device.str().c_str(),
              cfg.device.is_cuda() ? (" (" + cuda::device_name(cfg.device.index()) + ")").c_str() : "",
              cfg.deterministic ? " (deterministic)" : "");

  const double initial_held_out = charlm::evaluate(*run.model, corpus, cfg);
  std::mt19937_64 rng(42);
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const example::ScratchDir scratch;
  const std::string ckpt = cfg.checkpoint.empty() ? scratch.file("train_charlm.ckpt.safetensors") : cfg.checkpoint;
  bool resumed = false;
  double loss_value = 0;
  int64_t step = 0;
  for (; step < cfg.steps && elapsed() < cfg.seconds; ++step) {
    auto [x, y] = charlm::batch(corpus, cfg, rng);
    run.opt->zero_grad();
    Tensor loss;
    {
      // Autocast: the matmuls run in the low dtype, cross_entropy in float32 (PyTorch's CPU lists).
      autocast::Guard ac({.device = cfg.device.type(), .dtype = cfg.low_dtype(), .enabled = cfg.autocast()});
      Tensor logits = run.model->forward(x);
      loss = F::cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}));
    }
    // With fp16 the loss is scaled before backward and the gradients unscaled before
    // the update, which is skipped when they overflow; otherwise these are plain calls.
    amp::backward(*run.scaler, loss);
    amp::step(*run.scaler, *run.opt);
    run.schedule->step();
    loss_value = loss.item<double>();
    example::require(std::isfinite(loss_value), "the loss of step " + std::to_string(step) + " is not finite");
    if (step % 25 == 0) {
      const double tok_s = static_cast<double>((step + 1) * cfg.batch * cfg.context) / elapsed();
      std::printf("step %5lld  loss %.3f  %.0f tokens/s  lr %.2e  %.0f s  %.0f MB in use",
                  static_cast<long long>(step), loss_value, tok_s, run.opt->lr(), elapsed(),
                  megabytes_in_use(cfg.device));
      if (run.scaler->is_enabled())
        std::printf("  scale %.0f  skipped %lld", run.scaler->current_scale(),
                    static_cast<long long>(run.scaler->skipped_steps()));
      std::printf("\n");
      std::fflush(stdout);
    }
    // Halfway through the budget: write a checkpoint, then continue from a run rebuilt from the file.
    if (!resumed && step > 0 && (elapsed() > cfg.seconds / 2 || step + 1 == cfg.steps / 2)) {
      amp::save_training_checkpoint(ckpt, *run.model, *run.opt, *run.scaler, run.schedule.get());
      const io::StateDict saved_rng = io::rng_state();
      Run restored = make_run(vocab, cfg, planned);
      amp::load_training_checkpoint(ckpt, *restored.model, *restored.opt, *restored.scaler, restored.schedule.get());
      // The reloaded objects hold exactly what was saved.
      const std::vector<std::pair<std::string, std::string>> differences = {
          {"model", example::state_difference(run.model->state_dict(), restored.model->state_dict())},
          {"optimizer", example::state_difference(run.opt->state_dict(), restored.opt->state_dict())},
          {"schedule", example::state_difference(run.schedule->state_dict(), restored.schedule->state_dict())},
          {"scaler", example::state_difference(run.scaler->state_dict(), restored.scaler->state_dict())},
          {"generator", example::state_difference(saved_rng, io::rng_state())}};
      for (const auto& [what, diff] : differences)
        example::require(diff.empty(), "the reloaded " + what + " differs from the saved one: " + diff);
      example::require(restored.schedule->current_step() == step + 1, "the reloaded schedule is at another step");
      run = std::move(restored);
      std::printf("checkpoint written to %s; training continues from the reloaded model, optimizer, schedule and "
                  "scaler\n",
                  ckpt.c_str());
      resumed = true;
    }
  }
  CharLM& model = *run.model;
  const double held_out = charlm::evaluate(model, corpus, cfg);
  std::printf("after %lld steps in %.0f s: train loss %.3f, held-out loss %.3f nats/char (from %.3f; unigram "
              "entropy %.3f)\n",
              static_cast<long long>(step), elapsed(), loss_value, held_out, initial_held_out, corpus.unigram_entropy);
  std::printf("sample:\n%s\n", charlm::sample(model, corpus, cfg, "The ", cfg.sample_chars).c_str());
  std::remove(ckpt.c_str());
  if (!cfg.save_params.empty()) {
    io::save_safetensors(cfg.save_params, model.state_dict());
    std::printf("parameters written to %s\n", cfg.save_params.c_str());
  }
  example::require(std::isfinite(held_out) && held_out < initial_held_out, "the held-out loss did not fall");
  example::require(resumed || step < 2, "the run never reached its checkpoint");
  return 0;
}

// Bad arguments, an unreadable text or a device that cannot run raise mixt::Error: say so, exit 1.
int main(int argc, char** argv) {
  try {
    return train_demo(argc, argv);
  } catch (const Error& e) {
    std::fprintf(stderr, "train_charlm: %s\n", e.what());
    return 1;
  }
}
