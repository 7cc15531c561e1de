// DistributedDataParallel over the NCCL backend, one GPU per rank: an NCCL group
// bootstrapped through the world group (MPI under mpirun, the local group alone),
// DDP training on CUDA tensors against one process training on the concatenated
// batch, no_sync accumulation, unused parameters, the scaler's overflow sync on
// both step paths; and the stream order of the backend: collectives and DDP under
// a cuda::StreamGuard, the sync-free step leaving its work queued (no host wait),
// the signature buffer's first write after the work of the stream it was
// allocated on, and a rank that never touches cuda:0 unless it uses it. Rank r
// uses cuda:(r % device count). MIXT_EMULATED_ASYNC=deferred on the emulated
// device turns a missing stream wait into a wrong result. Own main (no Catch2):
// each rank prints its groups and "test_ddp_nccl: N checks, M failures"; exits
// 77 (meson: SKIP) without a usable GPU (gpu_skip.h), 1 on a failure.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <mixt/distributed/ddp.h>
#include <mixt/distributed/nccl/nccl_group.h>
#include <mixt/distributed/world.h>
#include <mixt/mixt.h>

#if defined(MIXT_CUDA_EMULATED)
#include <mixt/kernels/cuda/emulated/emulator.h>
#endif

#include "gpu_checks.h"
#include "gpu_skip.h"

using namespace mixt;
using testing::expect;
using testing::g_checks;
using testing::g_failures;
using testing::group;
namespace F = mixt::nn::functional;

namespace {

constexpr int64_t kIn = 6, kHidden = 10, kOut = 3, kRowsPerRank = 4;
const dist::GroupOptions kOptions{.timeout = std::chrono::seconds(60)};

Device g_dev;  // this rank's GPU

// True on the emulated device in deferred mode, where a missing wait shows.
bool deferred() {
#if defined(MIXT_CUDA_EMULATED)
  return cuda::emulated::settings().async == cuda::emulated::AsyncMode::Deferred;
#else
  return false;
#endif
}

// Checks that `f` raises mixt::Error whose text contains every needle.
void expect_error(const std::string& what, const std::vector<std::string>& needles, const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    for (const std::string& n : needles)
      expect(std::string(e.what()).find(n) != std::string::npos,
             what + ": the error does not say '" + n + "': " + e.what());
    return;
  }
  expect(false, what + ": expected mixt::Error");
}

// |a - b| <= rtol * max(1, |b|) elementwise (any devices).
void expect_close(const Tensor& a, const Tensor& b, double rtol, const std::string& what) {
  const auto x = a.detach().to(kFloat64).cpu().contiguous().to_vector<double>();
  const auto y = b.detach().to(kFloat64).cpu().contiguous().to_vector<double>();
  if (x.size() != y.size()) return expect(false, what + ": sizes differ");
  for (size_t i = 0; i < x.size(); ++i) {
    if (!(std::abs(x[i] - y[i]) <= rtol * std::max(1.0, std::abs(y[i])))) {
      return expect(
          false, what + ": element " + std::to_string(i) + ": " + std::to_string(x[i]) + " vs " + std::to_string(y[i]));
    }
  }
  expect(true, what);
}

void expect_same_on_every_rank(dist::ProcessGroup& pg, const Tensor& t, const std::string& what) {
  const Tensor all = pg.all_gather(t.detach().contiguous()).cpu();
  bool same = true;
  for (int r = 1; r < pg.size(); ++r) same = same && all.select(0, r).equal(all.select(0, 0));
  expect(same, what + ": the ranks hold different values");
}

std::shared_ptr<nn::Sequential> make_mlp(uint64_t seed) {
  manual_seed(seed);
  auto m = std::make_shared<nn::Sequential>(nn::Linear(kIn, kHidden), nn::GELU(), nn::Linear(kHidden, kOut));
  m->to(g_dev, kFloat64);
  return m;
}

// The global batch of step `step` (the same on every rank), on this rank's GPU.
std::pair<Tensor, Tensor> global_batch(int step, int ranks) {
  Generator g;
  g.manual_seed(1000 + static_cast<uint64_t>(step));
  Tensor x = randn({ranks * kRowsPerRank, kIn}, TensorOptions{.dtype = kFloat64}, &g);
  Tensor y = randn({ranks * kRowsPerRank, kOut}, TensorOptions{.dtype = kFloat64}, &g);
  return {x.to(g_dev), y.to(g_dev)};
}

Tensor rows_of(const Tensor& t, int rank) { return narrow(t, 0, rank * kRowsPerRank, kRowsPerRank); }

// ---- the backend's own stream order ----

// A rank on cuda:1 makes its NCCL group, runs a collective and destroys a group
// without ever making cuda:0 current (on a GPU: no context, no memory there).
dist::ProcessGroupPtr make_group_off_device_zero(dist::ProcessGroup& world) {
#if defined(MIXT_CUDA_EMULATED)
  const bool check = g_dev.index() != 0;
  if (check) expect(!cuda::emulated::context_created(0), "(precondition) no context on cuda:0 before the group");
#endif
  auto pg = dist::make_nccl_group(world, g_dev.index(), kOptions);
  Tensor t = full({3}, 1.0, TensorOptions{.dtype = kFloat32, .device = g_dev});
  pg->all_reduce(t, dist::ReduceOp::Sum);
  expect(t.cpu().equal(full({3}, static_cast<double>(world.size()), TensorOptions{.dtype = kFloat32})),
         "all_reduce(sum) of ones");
  dist::make_nccl_group(world, g_dev.index(), kOptions)->destroy();
#if defined(MIXT_CUDA_EMULATED)
  if (check)
    expect(!cuda::emulated::context_created(0),
           "a rank on " + g_dev.str() + " made, used and destroyed NCCL groups without touching cuda:0");
#endif
  return pg;
}

// The signature buffer reuses the block of a freed tensor that a queued kernel
// still reads: the exchange may write it only after that kernel ran.
void signature_buffer_after_its_stream(dist::ProcessGroup& world) {
  const TensorOptions f32{.dtype = kFloat32, .device = g_dev};
  Tensor x = full({128}, 3.0, f32);  // 512 bytes: the block the signature buffer gets
  cuda::synchronize();
  const void* block = x.data_ptr();
  Tensor y = mul(x, 2.0);  // queued on the current stream (deferred: not run yet)
  x = Tensor();            // freed: at once reusable by allocations on this stream
  auto pg = dist::make_nccl_group(world, g_dev.index(), kOptions);
#if defined(MIXT_CUDA_EMULATED)
  // (The same allocator on a GPU; checked where the test was shown to fail.)
  Tensor probe = empty({128}, f32);
  expect(probe.data_ptr() != block, "(precondition) the group's buffers took the freed block");
#else
  (void)block;
#endif
  Tensor t = full({4}, 1.0, f32);
  pg->all_reduce(t, dist::ReduceOp::Sum);  // the first signature exchange
  expect(y.cpu().equal(full({128}, 6.0, TensorOptions{.dtype = kFloat32})),
         "a kernel queued before the group was made read its input, not the signatures");
  pg->destroy();
}

// Collectives on tensors written by kernels queued on a non-default current stream.
void collectives_under_stream_guard(dist::ProcessGroup& pg) {
  const cuda::Stream side = cuda::create_stream(g_dev);
  cuda::StreamGuard guard(side);
  const TensorOptions f32{.dtype = kFloat32, .device = g_dev};
  const int n = pg.size(), r = pg.rank();
  Tensor t = full({1000}, static_cast<double>(r + 1), f32);
  pg.all_reduce(t, dist::ReduceOp::Sum);
  expect(t.cpu().equal(full({1000}, n * (n + 1) / 2.0, TensorOptions{.dtype = kFloat32})),
         "all_reduce(sum) of what a kernel on the current stream wrote");
  Tensor in = mul(full({7}, 1.0, f32), 1000.0 + r);
  const Tensor out = pg.all_gather(in).cpu();
  bool ok = true;
  for (int q = 0; q < n; ++q)
    ok = ok && out.select(0, q).equal(full({7}, 1000.0 + q, TensorOptions{.dtype = kFloat32}));
  expect(ok, "all_gather of what a kernel on the current stream wrote");
  // An asynchronous all_reduce of a non-contiguous view: the result is written back on the current stream.
  Tensor m = full({4, 6}, static_cast<double>(r + 1), f32).t();
  pg.all_reduce_async(m, dist::ReduceOp::Max)->wait();
  expect(m.cpu().equal(full({6, 4}, static_cast<double>(n), TensorOptions{.dtype = kFloat32})),
         "all_reduce(max) into a transposed view");
}

// ---- DistributedDataParallel ----

void ddp_equals_one_process(const dist::ProcessGroupPtr& pg, bool side_stream) {
  std::optional<cuda::StreamGuard> guard;
  if (side_stream) guard.emplace(cuda::create_stream(g_dev));
  const int n = pg->size();
  auto model = make_mlp(11);
  auto single = make_mlp(11);
  // Small buckets: several all-reduces per step, launched from the hooks during backward.
  dist::DistributedDataParallel ddp(model, pg, {.bucket_cap_bytes = 256});
  const auto buckets = ddp.bucket_parameter_names();
  expect(buckets.size() >= 3, "several buckets");
  optim::SGD opt(model->parameters(), {.lr = 0.1, .momentum = 0.9});
  optim::SGD opt_single(single->parameters(), {.lr = 0.1, .momentum = 0.9});
  for (int step = 0; step < 3; ++step) {
    auto [x, y] = global_batch(step, n);
    opt.zero_grad();
    F::mse_loss(ddp(rows_of(x, pg->rank())), rows_of(y, pg->rank())).backward();
    dist::optimizer_step(ddp, opt);
    expect(ddp.buckets_launched_in_backward() == static_cast<int64_t>(buckets.size()),
           "every bucket launched during backward");
    opt_single.zero_grad();
    F::mse_loss(single->forward(x), y).backward();
    opt_single.step();
  }
  const auto got = model->parameters();
  const auto want = single->parameters();
  for (size_t i = 0; i < got.size(); ++i) {
    expect_close(got[i], want[i], 1e-10, "parameter " + std::to_string(i) + " after 3 steps");
    expect_same_on_every_rank(*pg, got[i], "parameter " + std::to_string(i));
  }
}

void no_sync_accumulation(const dist::ProcessGroupPtr& pg) {
  const int n = pg->size();
  auto model = make_mlp(3);
  auto single = make_mlp(3);
  dist::DistributedDataParallel ddp(model, pg);
  constexpr int kMicro = 3;
  for (int m = 0; m < kMicro; ++m) {
    auto [x, y] = global_batch(m, n);
    if (m < kMicro - 1) {
      auto no_sync = ddp.no_sync();
      F::mse_loss(ddp(rows_of(x, pg->rank())), rows_of(y, pg->rank())).backward();
    } else {
      F::mse_loss(ddp(rows_of(x, pg->rank())), rows_of(y, pg->rank())).backward();
    }
    F::mse_loss(single->forward(x), y).backward();
  }
  ddp.synchronize_gradients();
  const auto got = model->parameters();
  const auto want = single->parameters();
  for (size_t i = 0; i < got.size(); ++i)
    expect_close(got[i].grad(), want[i].grad(), 1e-10, "accumulated gradient " + std::to_string(i));
}

// Uses `extra` only when asked to.
class Branchy : public nn::Module {
 public:
  explicit Branchy(bool use_extra) : use_extra_(use_extra) {
    manual_seed(21);
    body_ = register_module("body", nn::Linear(kIn, kOut));
    extra_ = register_module("extra", nn::Linear(kIn, kOut));
    to(g_dev, kFloat64);
  }
  Tensor forward(const Tensor& x) override {
    Tensor y = body_->forward(x);
    return use_extra_ ? add(y, extra_->forward(x)) : y;
  }
  std::shared_ptr<nn::Linear> body_, extra_;

 private:
  bool use_extra_;
};

void unused_parameters(const dist::ProcessGroupPtr& pg) {
  auto [x, y] = global_batch(0, pg->size());
  const Tensor xr = rows_of(x, pg->rank()), yr = rows_of(y, pg->rank());
  {
    auto model = std::make_shared<Branchy>(pg->rank() == 0);
    dist::DistributedDataParallel ddp(model, pg);
    F::mse_loss(ddp(xr), yr).backward();
    if (pg->size() == 1) {
      ddp.synchronize_gradients();
    } else {
      expect_error("a parameter used on one rank",
                   {fmt::format("'extra.weight' (on 1 of {} ranks)", pg->size()), "find_unused_parameters"},
                   [&] { ddp.synchronize_gradients(); });
    }
    // The refusal ended the iteration on every rank: the next one starts fresh.
    F::mse_loss(ddp(xr), yr).backward();  // (model still skips extra on ranks > 0)
    if (pg->size() == 1)
      ddp.synchronize_gradients();
    else
      expect_error("the next iteration is refused the same way", {"'extra.weight'"},
                   [&] { ddp.synchronize_gradients(); });
  }
  auto model = std::make_shared<Branchy>(pg->rank() == 0);
  dist::DistributedDataParallel ddp(model, pg, {.find_unused_parameters = true});
  F::mse_loss(ddp(xr), yr).backward();
  ddp.synchronize_gradients();
  auto rank0 = std::make_shared<Branchy>(true);
  F::mse_loss(rank0->forward(rows_of(x, 0)), rows_of(y, 0)).backward();
  expect_close(model->extra_->weight().grad(), div(rank0->extra_->weight().grad(), Scalar(double(pg->size()))), 1e-10,
               "extra's gradient: rank 0's averaged with zeros");
  expect_same_on_every_rank(*pg, model->body_->weight().grad(), "body's gradient");
}

void overflow_sync(const dist::ProcessGroupPtr& pg) {
  for (bool sync_free : {false, true}) {
    const std::string path = sync_free ? "sync-free step: " : "step: ";
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
      // After the averaging, only the last rank sees an Inf.
      if (inject && pg->rank() == pg->size() - 1) {
        Tensor g = model->parameters()[0].grad();
        autograd::NoGradGuard no_grad;
        select(reshape(g, {g.numel()}), 0, 0).fill_(Scalar(INFINITY));
      }
      const Tensor before = model->parameters()[0].detach().clone();
      const bool stepped = step();
      expect(stepped == !inject, path + "iteration " + std::to_string(it) + (inject ? " skipped" : " stepped"));
      if (inject) expect(model->parameters()[0].detach().equal(before), path + "the skipped step left the parameter");
      expect_same_on_every_rank(*pg, scaler.scale_tensor(), path + "scale");
      for (const Tensor& p : model->parameters()) expect_same_on_every_rank(*pg, p, path + "parameters");
    }
    expect(scaler.current_scale() == 2048.0, path + "scale 1024 * 2 / 2 * 2");
    expect(scaler.skipped_steps() == 1, path + "one skipped step");
  }
}

// The sync-free step with the flag reduced over NCCL queues its work and returns:
// a marker recorded on the current stream before it has not run afterwards.
void sync_free_step_leaves_work_queued(const dist::ProcessGroupPtr& pg) {
  auto model = make_mlp(17);
  optim::SGD opt(model->parameters(), {.lr = 0.05});
  amp::GradScaler scaler({.initial_scale = 1024.0});
  dist::sync_overflow_flags(scaler, pg);
  auto [x, y] = global_batch(0, pg->size());
  amp::backward(scaler, F::mse_loss(model->forward(rows_of(x, pg->rank())), rows_of(y, pg->rank())));
  const Tensor before = model->parameters()[0].detach().clone();
  cuda::synchronize();
  cuda::Event marker;
  marker.record(cuda::current_stream(g_dev));
  scaler.step_sync_free(opt);
  scaler.update();
  const bool ran = marker.query();
  if (deferred()) expect(!ran, "nothing waited for the work queued before the sync-free step (no host wait)");
  expect(!scaler.last_step_skipped(), "the finite step was taken");
  expect(!model->parameters()[0].detach().equal(before), "the parameter moved");
  // An Inf on the last rank: every rank skips, still without a host wait.
  opt.zero_grad();
  amp::backward(scaler, F::mse_loss(model->forward(rows_of(x, pg->rank())), rows_of(y, pg->rank())));
  if (pg->rank() == pg->size() - 1) {
    Tensor g = model->parameters()[1].grad();
    autograd::NoGradGuard no_grad;
    select(reshape(g, {g.numel()}), 0, 0).fill_(Scalar(NAN));
  }
  const Tensor kept = model->parameters()[0].detach().clone();
  cuda::synchronize();
  marker.record(cuda::current_stream(g_dev));
  scaler.step_sync_free(opt);
  scaler.update();
  const bool ran_again = marker.query();
  if (deferred()) expect(!ran_again, "the skipped sync-free step did not wait either");
  expect(scaler.last_step_skipped(), "every rank skipped the step with a NaN on the last rank");
  expect(model->parameters()[0].detach().equal(kept), "the skipped step left the parameter");
  expect(scaler.current_scale() == 512.0, "the scale backed off once");
}

}  // namespace

int main() {
  auto world = dist::init({.group = kOptions});
  const int rank = world->rank();
  int status = testing::cuda_unavailable_status("test_ddp_nccl");
  if (status < 0 && !cuda::is_emulated() && world->size() > cuda::device_count()) {
    // NCCL takes one GPU per rank of a communicator.
    std::printf("SKIP: test_ddp_nccl: %d ranks on %d GPU(s)\n", world->size(), cuda::device_count());
    status = 77;
  }
  if (status < 0) {
    g_dev = Device::cuda(rank % cuda::device_count());
    std::printf("rank %d of %d on %s%s\n", rank, world->size(), g_dev.str().c_str(), deferred() ? " (deferred)" : "");
    dist::ProcessGroupPtr pg;
    group("NCCL groups never touch cuda:0 on a rank that does not use it",
          [&] { pg = make_group_off_device_zero(*world); });
    if (pg) {
      group("the signature buffer waits for the stream it came from",
            [&] { signature_buffer_after_its_stream(*world); });
      group("collectives under a StreamGuard", [&] { collectives_under_stream_guard(*pg); });
      group("DDP equals one process training", [&] { ddp_equals_one_process(pg, false); });
      group("DDP under a StreamGuard", [&] { ddp_equals_one_process(pg, true); });
      group("no_sync accumulation", [&] { no_sync_accumulation(pg); });
      group("unused parameters", [&] { unused_parameters(pg); });
      group("an Inf on one rank: every rank skips", [&] { overflow_sync(pg); });
      group("the sync-free step over NCCL leaves its work queued", [&] { sync_free_step_leaves_work_queued(pg); });
      pg->destroy();
    }
    std::printf("test_ddp_nccl: %d checks, %d failures (rank %d)\n", g_checks, g_failures, rank);
    status = g_failures == 0 ? 0 : 1;
  }
  dist::finalize();
  return status;
}
