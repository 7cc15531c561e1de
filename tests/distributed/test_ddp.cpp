// DistributedDataParallel on N ranks against one process training on the
// concatenated batch (float64, so the only difference is the order of the
// gradient sums: compared at 1e-12 relative), gradient accumulation with
// no_sync, unused parameters, the scaler's overflow sync on both step paths,
// and checkpoints written by rank 0 and read at another world size.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>

#include <unistd.h>

#include <mixt/distributed/ddp.h>
#include <mixt/distributed/world.h>
#include <mixt/mixt.h>

using namespace mixt;
namespace F = mixt::nn::functional;

namespace {

constexpr int64_t kIn = 6, kHidden = 10, kOut = 3, kRowsPerRank = 4;

std::shared_ptr<nn::Sequential> make_mlp(uint64_t seed) {
  manual_seed(seed);
  auto m = std::make_shared<nn::Sequential>(nn::Linear(kIn, kHidden), nn::GELU(), nn::Linear(kHidden, kOut));
  m->to(kFloat64);
  return m;
}

// The global batch of step `step` (the same on every rank): rows for `ranks` ranks.
std::pair<Tensor, Tensor> global_batch(int step, int ranks) {
  Generator g;
  g.manual_seed(1000 + static_cast<uint64_t>(step));
  Tensor x = randn({ranks * kRowsPerRank, kIn}, TensorOptions{.dtype = kFloat64}, &g);
  Tensor y = randn({ranks * kRowsPerRank, kOut}, TensorOptions{.dtype = kFloat64}, &g);
  return {x, y};
}

Tensor rows_of(const Tensor& t, int rank) { return narrow(t, 0, rank * kRowsPerRank, kRowsPerRank); }

void require_close(const Tensor& a, const Tensor& b, double rtol) {
  const auto x = a.to(kFloat64).contiguous().to_vector<double>();
  const auto y = b.to(kFloat64).contiguous().to_vector<double>();
  REQUIRE(x.size() == y.size());
  for (size_t i = 0; i < x.size(); ++i) {
    INFO("element " << i << ": " << x[i] << " vs " << y[i]);
    REQUIRE(std::abs(x[i] - y[i]) <= rtol * std::max(1.0, std::abs(y[i])));
  }
}

void require_same_on_every_rank(dist::ProcessGroup& pg, const Tensor& t) {
  Tensor all = pg.all_gather(t.contiguous());
  for (int r = 1; r < pg.size(); ++r) REQUIRE(all.select(0, r).equal(all.select(0, 0)));
}

}  // namespace

TEST_CASE("construction copies rank 0's parameters to every rank") {
  auto pg = dist::world();
  auto model = make_mlp(7 + static_cast<uint64_t>(pg->rank()));  // different on every rank
  dist::DistributedDataParallel ddp(model, pg);
  auto reference = make_mlp(7);
  const auto got = model->parameters();
  const auto want = reference->parameters();
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i].equal(want[i]));
}

TEST_CASE("DDP training equals one process training on the concatenated batch") {
  auto pg = dist::world();
  const int n = pg->size();
  auto model = make_mlp(11);
  auto single = make_mlp(11);
  // Small buckets: several all-reduces per step, launched from the hooks during backward.
  dist::DistributedDataParallel ddp(model, pg, {.bucket_cap_bytes = 256});
  const auto buckets = ddp.bucket_parameter_names();
  REQUIRE(buckets.size() >= 3);
  REQUIRE(buckets.front().front() == "2.bias");  // reverse registration order
  REQUIRE(buckets.back().back() == "0.weight");

  optim::SGD opt(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::SGD opt_single(single->parameters(), {.lr = 0.1, .momentum = 0.9});
  for (int step = 0; step < 4; ++step) {
    auto [x, y] = global_batch(step, n);
    opt.zero_grad();
    F::mse_loss(ddp(rows_of(x, pg->rank())), rows_of(y, pg->rank())).backward();
    dist::optimizer_step(ddp, opt);
    REQUIRE(ddp.buckets_launched_in_backward() == static_cast<int64_t>(buckets.size()));

    opt_single.zero_grad();
    F::mse_loss(single->forward(x), y).backward();
    opt_single.step();
  }
  const auto got = model->parameters();
  const auto want = single->parameters();
  for (size_t i = 0; i < got.size(); ++i) {
    require_close(got[i], want[i], 1e-12);
    require_same_on_every_rank(*pg, got[i]);
  }
}

TEST_CASE("no_sync accumulation equals one big batch") {
  auto pg = dist::world();
  const int n = pg->size();
  auto model = make_mlp(3);
  auto single = make_mlp(3);
  dist::DistributedDataParallel ddp(model, pg);
  constexpr int kMicro = 3;
  for (int m = 0; m < kMicro; ++m) {
    auto [x, y] = global_batch(m, n);
    if (m < kMicro - 1) {
      auto guard = ddp.no_sync();
      F::mse_loss(ddp(rows_of(x, pg->rank())), rows_of(y, pg->rank())).backward();
    } else {
      F::mse_loss(ddp(rows_of(x, pg->rank())), rows_of(y, pg->rank())).backward();
    }
    F::mse_loss(single->forward(x), y).backward();
  }
  ddp.synchronize_gradients();
  const auto got = model->parameters();
  const auto want = single->parameters();
  for (size_t i = 0; i < got.size(); ++i) {
    require_close(got[i].grad(), want[i].grad(), 1e-12);
    require_same_on_every_rank(*pg, got[i].grad());
  }
}

TEST_CASE("a second backward before synchronisation is refused, naming the parameter") {
  auto pg = dist::world();
  auto model = make_mlp(5);
  dist::DistributedDataParallel ddp(model, pg);
  auto [x, y] = global_batch(0, pg->size());
  F::mse_loss(ddp(rows_of(x, pg->rank())), rows_of(y, pg->rank())).backward();
  REQUIRE_THROWS_WITH(F::mse_loss(ddp(rows_of(x, pg->rank())), rows_of(y, pg->rank())).backward(),
                      Catch::Contains("produced twice") && Catch::Contains("no_sync"));
  ddp.synchronize_gradients();  // every rank: the reducer starts a fresh iteration
}

namespace {

// Uses `extra` only on the ranks in `users`.
class Branchy : public nn::Module {
 public:
  explicit Branchy(bool use_extra) : use_extra_(use_extra) {
    manual_seed(21);
    body_ = register_module("body", nn::Linear(kIn, kOut));
    extra_ = register_module("extra", nn::Linear(kIn, kOut));
    to(kFloat64);
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = body_->forward(x);
    return use_extra_ ? add(y, extra_->forward(x)) : y;
  }
  std::shared_ptr<nn::Linear> body_, extra_;

 private:
  bool use_extra_;
};

}  // namespace

TEST_CASE("unused parameters: refused by name, or averaged as zeros with find_unused_parameters") {
  auto pg = dist::world();
  auto [x, y] = global_batch(0, pg->size());
  const Tensor xr = rows_of(x, pg->rank()), yr = rows_of(y, pg->rank());
  {
    auto model = std::make_shared<Branchy>(pg->rank() == 0);
    dist::DistributedDataParallel ddp(model, pg);
    F::mse_loss(ddp(xr), yr).backward();
    if (pg->size() == 1) {
      ddp.synchronize_gradients();  // rank 0 uses everything
    } else {
      REQUIRE_THROWS_WITH(ddp.synchronize_gradients(),
                          Catch::Contains(fmt::format("'extra.weight' (on 1 of {} ranks)", pg->size())) &&
                              Catch::Contains("find_unused_parameters"));
    }
  }
  auto model = std::make_shared<Branchy>(pg->rank() == 0);
  dist::DistributedDataParallel ddp(model, pg, {.find_unused_parameters = true});
  F::mse_loss(ddp(xr), yr).backward();
  ddp.synchronize_gradients();
  // extra's gradient: rank 0's, averaged with zeros from the others.
  auto rank0 = std::make_shared<Branchy>(true);
  F::mse_loss(rank0->forward(rows_of(x, 0)), rows_of(y, 0)).backward();
  require_close(model->extra_->weight().grad(), div(rank0->extra_->weight().grad(), Scalar(double(pg->size()))), 1e-12);
  require_same_on_every_rank(*pg, model->body_->weight().grad());
}

TEST_CASE("an Inf on one rank makes every rank skip the step and keep the same scale, on both step paths") {
  auto pg = dist::world();
  for (bool sync_free : {false, true}) {
    INFO("sync_free " << sync_free);
    auto model = make_mlp(9);
    dist::DistributedDataParallel ddp(model, pg);
    optim::SGD opt(model->parameters(), {.lr = 0.05});
    amp::GradScaler scaler({.initial_scale = 1024.0, .growth_interval = 1});
    auto step = [&]() -> bool {
      if (!sync_free) return dist::optimizer_step(ddp, opt, scaler);
      dist::optimizer_step_sync_free(ddp, opt, scaler);
      return !scaler.last_step_skipped();
    };
    for (int it = 0; it < 3; ++it) {
      auto [x, y] = global_batch(it, pg->size());
      opt.zero_grad();
      amp::backward(scaler, F::mse_loss(ddp(rows_of(x, pg->rank())), rows_of(y, pg->rank())));
      ddp.synchronize_gradients();
      const bool inject = it == 1;
      // After the gradients were averaged, only the last rank sees an Inf:
      // without the flag's all-reduce the ranks would disagree.
      if (inject && pg->rank() == pg->size() - 1) {
        Tensor g = model->parameters()[0].grad();
        autograd::NoGradGuard no_grad;
        select(reshape(g, {g.numel()}), 0, 0).fill_(Scalar(INFINITY));
      }
      const Tensor before = model->parameters()[0].detach().clone();
      const bool stepped = step();
      REQUIRE(stepped == !inject);
      if (inject) REQUIRE(model->parameters()[0].equal(before));
      require_same_on_every_rank(*pg, scaler.scale_tensor());
      for (const Tensor& p : model->parameters()) require_same_on_every_rank(*pg, p.detach());
    }
    // growth after two finite steps (interval 1), a backoff after the Inf: 1024 * 2 / 2 * 2.
    REQUIRE(scaler.current_scale() == 2048.0);
    REQUIRE(scaler.skipped_steps() == 1);
  }
}

TEST_CASE("a checkpoint written by rank 0 loads at any world size") {
  auto pg = dist::world();
  auto model = make_mlp(13);
  dist::DistributedDataParallel ddp(model, pg);
  optim::SGD opt(model->parameters(), {.lr = 0.1});
  auto [x, y] = global_batch(0, pg->size());
  F::mse_loss(ddp(rows_of(x, pg->rank())), rows_of(y, pg->rank())).backward();
  dist::optimizer_step(ddp, opt);

  // One file name for every rank: rank 0 picks it and broadcasts its length-free form (the pid).
  Tensor pid = full({1}, Scalar(int64_t(getpid())), TensorOptions{.dtype = kInt64});
  pg->broadcast(pid, 0);
  const auto path = std::filesystem::temp_directory_path() /
                    fmt::format("mixt-ddp-{}.safetensors", pid.to_vector<int64_t>()[0]);
  if (pg->rank() == 0) io::save_safetensors(path.string(), ddp.module().state_dict());
  pg->barrier();

  // Another world size: a one-process group, and a plain module.
  auto restored = make_mlp(99);
  restored->load_state_dict(io::load_safetensors(path.string()));
  dist::DistributedDataParallel alone(restored, dist::make_local_group());
  const auto got = restored->parameters();
  const auto want = model->parameters();
  for (size_t i = 0; i < got.size(); ++i) REQUIRE(got[i].equal(want[i]));
  pg->barrier();
  if (pg->rank() == 0) std::filesystem::remove(path);
}
