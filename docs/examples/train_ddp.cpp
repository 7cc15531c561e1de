// The training demo's language model under DistributedDataParallel, autocast
// and the grad scaler, on every rank of an MPI job:
//
//   mpirun -np 2 train_ddp [--steps N] [--precision bf16|fp16] [--accumulate K]
//
// Each rank draws its own windows of the text (its shard of the global batch),
// accumulates K micro-batches (the first K-1 under no_sync), and steps through
// dist::optimizer_step, which averages the gradients and makes every rank take
// or skip the same steps. Started alone it trains as a world of one process.
//
// It checks what it shows and exits with 1 otherwise: every loss is finite, the
// held-out loss falls, the replicas stay identical, and the checkpoint rank 0
// writes loads into a model outside the job.
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include <mixt/distributed/ddp.h>
#include <mixt/distributed/world.h>
#include <mixt/mixt.h>

#include "charlm.h"
#include "example_support.h"

using namespace mixt;
namespace F = mixt::nn::functional;

namespace {

struct Config : charlm::ModelSize {
  int64_t steps = 60;
  int64_t accumulate = 2;
  std::string precision = "bf16";
};

Config parse(int argc, char** argv) {
  Config c;
  c.batch = 8;  // per rank and micro-batch
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--steps")) c.steps = std::atoll(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--accumulate")) c.accumulate = std::max<int64_t>(1, std::atoll(argv[i + 1]));
    else if (!std::strcmp(argv[i], "--precision")) c.precision = argv[i + 1];
    else throw Error("train_ddp", std::string("unknown option ") + argv[i]);
  }
  return c;
}

// The mean of `value` over the ranks.
double mean_over_ranks(dist::ProcessGroup& pg, double value) {
  Tensor t = full({1}, Scalar(value), TensorOptions{.dtype = kFloat64});
  pg.all_reduce(t, dist::ReduceOp::Avg);
  return t.item<double>();
}

}  // namespace

int main(int argc, char** argv) {
  auto world = dist::init();
  const int rank = world->rank();
  const Config cfg = parse(argc, argv);
  const charlm::Corpus corpus = charlm::load(charlm::kDefaultText);
  const ScalarType low = cfg.precision == "fp16" ? kFloat16 : kBFloat16;

  // Each rank builds its model; DDP copies rank 0's parameters to the others.
  manual_seed(static_cast<uint64_t>(rank));
  auto model = std::make_shared<charlm::CharLM>(static_cast<int64_t>(corpus.chars.size()), cfg);
  dist::DistributedDataParallel ddp(model, world);
  optim::AdamW opt(model->parameters(), {.lr = 3e-3, .weight_decay = 0.01});
  amp::GradScaler scaler({.enabled = low == kFloat16});
  if (rank == 0)
    std::printf("%d ranks (%s backend), %lld parameters in %zu gradient buckets, %s autocast, %lld x %lld "
                "windows per rank and step\n",
                world->size(), world->backend().c_str(), static_cast<long long>(model->num_parameters()),
                ddp.bucket_parameter_names().size(), dtype_name(low).data(), static_cast<long long>(cfg.accumulate),
                static_cast<long long>(cfg.batch));

  const double initial = charlm::evaluate(*model, corpus, cfg);
  std::mt19937_64 rng(100 + static_cast<uint64_t>(rank));  // this rank's shard of the data
  double loss_value = 0;
  for (int64_t step = 0; step < cfg.steps; ++step) {
    opt.zero_grad();
    double step_loss = 0;
    for (int64_t micro = 0; micro < cfg.accumulate; ++micro) {
      auto [x, y] = charlm::batch(corpus, cfg, rng);
      Tensor loss;
      {
        autocast::Guard ac({.device = DeviceType::CPU, .dtype = low});
        Tensor logits = ddp(x);
        loss = F::cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}));
      }
      // The last micro-batch's backward starts the all-reduces; the others only accumulate.
      if (micro + 1 < cfg.accumulate) {
        auto local = ddp.no_sync();
        amp::backward(scaler, div(loss, Scalar(double(cfg.accumulate))));
      } else {
        amp::backward(scaler, div(loss, Scalar(double(cfg.accumulate))));
      }
      step_loss += loss.item<double>() / static_cast<double>(cfg.accumulate);
    }
    dist::optimizer_step(ddp, opt, scaler);
    loss_value = mean_over_ranks(*world, step_loss);
    example::require(std::isfinite(loss_value), "the loss of step " + std::to_string(step) + " is not finite");
    if (rank == 0 && step % 10 == 0) {
      std::printf("step %4lld  loss %.3f (mean over ranks)", static_cast<long long>(step), loss_value);
      if (scaler.is_enabled()) std::printf("  scale %.0f", scaler.current_scale());
      std::printf("\n");
      std::fflush(stdout);
    }
  }

  // The replicas are identical: every rank holds rank 0's parameters.
  for (const auto& [name, p] : model->named_parameters()) {
    Tensor copy = p.detach().clone();
    world->broadcast(copy, 0);
    example::require(copy.equal(p.detach()), "rank " + std::to_string(rank) + " diverged at " + name);
  }
  const double held_out = charlm::evaluate(*model, corpus, cfg);
  if (rank == 0)
    std::printf("after %lld steps: train loss %.3f, held-out loss %.3f (from %.3f); replicas identical\n",
                static_cast<long long>(cfg.steps), loss_value, held_out, initial);
  example::require(held_out < initial, "the held-out loss did not fall");

  // Rank 0 writes the checkpoint (the replicas are equal); it loads into a model
  // outside the job, at any world size.
  if (rank == 0) {
    const example::ScratchDir scratch;
    const std::string path = scratch.file("train_ddp.safetensors");
    io::save_safetensors(path, model->state_dict());
    charlm::CharLM restored(static_cast<int64_t>(corpus.chars.size()), cfg);
    restored.load_state_dict(io::load_safetensors(path));
    example::require(example::state_difference(restored.state_dict(), model->state_dict()).empty(),
                     "the checkpoint differs from the model");
    std::printf("checkpoint written by rank 0 and loaded into a fresh model\n");
  }
  world->barrier();
  dist::finalize();
  return 0;
}
