// The grad scaler: scale trajectories against PyTorch's rule, Inf/NaN
// injection, hysteresis, floor and ceiling, the state machine, accumulation,
// the sync-free step, the flag reducer, fp16 underflow recovery, and a run
// resumed bit-identically from a training checkpoint.
#include <cmath>
#include <cstdio>

#include <catch2/catch.hpp>

#include <mixt/mixt.h>

#include "test_util.h"

using namespace mixt;
using namespace mixt::testing;
using Catch::Contains;
namespace F = mixt::nn::functional;

namespace {

// PyTorch's _amp_update_scale_ on host numbers (float32 scale, exact-equality growth).
struct TorchScaleRule {
  float scale;
  int32_t tracker = 0;
  double growth, backoff;
  int64_t interval;
  void update(bool found_inf) {
    if (found_inf) {
      scale = static_cast<float>(static_cast<double>(scale) * backoff);
      tracker = 0;
      return;
    }
    if (tracker + 1 == interval) {
      const auto next = static_cast<float>(static_cast<double>(scale) * growth);
      if (std::isfinite(next)) scale = next;
      tracker = 0;
    } else {
      ++tracker;
    }
  }
};

// A few parameters whose gradients the test sets directly.
struct Params {
  std::vector<Tensor> p;
  explicit Params(int n, int64_t size = 5) {
    for (int i = 0; i < n; ++i) p.push_back(full({size}, 1.0 + i, {.dtype = kFloat32, .requires_grad = true}));
  }
  // Gradients = scale * (i + 1) * 0.5, with `poison` written into element 0 of parameter `which`.
  void set_grads(double scale, int which = -1, double poison = 0) {
    for (size_t i = 0; i < p.size(); ++i) {
      Tensor g = full(p[i].sizes(), scale * 0.5 * static_cast<double>(i + 1), {.dtype = kFloat32});
      if (static_cast<int>(i) == which) g.select(0, 0).fill_(poison);
      p[i].set_grad(g);
    }
  }
};

amp::GradScalerOptions torch_like(double init, double growth, double backoff, int64_t interval) {
  return {.initial_scale = init, .growth_factor = growth, .backoff_factor = backoff, .growth_interval = interval,
          .min_scale = 0.0, .max_scale = std::numeric_limits<double>::infinity()};
}

}  // namespace

TEST_CASE("scale trajectories follow PyTorch's rule step by step", "[amp][scaler]") {
  struct Pattern {
    double init, growth, backoff;
    int64_t interval;
    std::vector<int> overflows;  // 1 = a non-finite gradient on that step
  };
  const std::vector<Pattern> patterns = {
      {65536, 2.0, 0.5, 3, {0, 0, 0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0}},
      {1000, 3.0, 0.3, 2, {1, 0, 0, 0, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0}},    // odd factors
      {7, 1.7, 0.9, 1, {0, 0, 1, 0, 0, 0, 1, 1, 0}},                      // growth every finite step
      {1e38, 2.0, 0.5, 1, {0, 0, 0, 1, 0, 0}},                            // never grows to Inf
  };
  for (const Pattern& pat : patterns) {
    INFO("init " << pat.init << " growth " << pat.growth << " backoff " << pat.backoff << " interval " << pat.interval);
    Params ps(3);
    optim::SGD opt(ps.p, {.lr = 0.1});
    amp::GradScaler scaler(torch_like(pat.init, pat.growth, pat.backoff, pat.interval));
    TorchScaleRule ref{static_cast<float>(pat.init), 0, pat.growth, pat.backoff, pat.interval};
    scaler.scale(scalar0(1.0));  // creates the scale on the CPU
    for (size_t s = 0; s < pat.overflows.size(); ++s) {
      INFO("step " << s);
      const bool overflow = pat.overflows[s] != 0;
      const double scale = scaler.current_scale();
      CHECK(scale == static_cast<double>(ref.scale));
      ps.set_grads(scale, overflow ? 1 : -1, kInf);
      const std::vector<double> before = values(ps.p[0]);
      const bool stepped = scaler.step(opt);
      CHECK(stepped == !overflow);
      CHECK((values(ps.p[0]) == before) == overflow);  // skipped steps leave the parameters alone
      if (!overflow) CHECK(values(ps.p[2].grad())[1] == Approx(1.5));  // unscaled
      scaler.update();
      ref.update(overflow);
      const amp::ScalerState st = scaler.state();
      CHECK(st.scale == static_cast<double>(ref.scale));
      CHECK(st.growth_tracker == ref.tracker);
    }
    int64_t skipped = 0;
    for (int o : pat.overflows) skipped += o;
    CHECK(scaler.skipped_steps() == skipped);
  }
}

TEST_CASE("Inf and NaN in one gradient among many are found; the others are still unscaled", "[amp][scaler]") {
  for (double poison : {kInf, -kInf, kNan}) {
    for (int which : {0, 17, 49}) {
      INFO("poison " << poison << " in parameter " << which);
      Params ps(50, 7);
      optim::Adam opt(ps.p, {.lr = 0.1});
      amp::GradScaler scaler;
      scaler.scale(scalar0(1.0));
      ps.set_grads(65536.0, which, poison);
      scaler.unscale(opt);
      CHECK(scaler.last_step_skipped() == false);  // nothing decided yet
      CHECK_FALSE(scaler.step(opt));
      CHECK(values(ps.p[which == 0 ? 1 : 0].grad())[0] == Approx(0.5 * (which == 0 ? 2 : 1)));
      CHECK(values(ps.p[5]) == std::vector<double>(7, 6.0));
      scaler.update();
      CHECK(scaler.current_scale() == 32768.0);
      CHECK(scaler.last_step_skipped());
    }
  }
}

TEST_CASE("unscaling float16 and bfloat16 gradients in one call", "[amp][scaler]") {
  Tensor a = full({3}, 1024.0, {.dtype = kFloat16}), b = full({2, 2}, 1024.0, {.dtype = kBFloat16});
  Tensor c = full({4}, 3.0, {.dtype = kFloat32});
  Tensor found = zeros({}, {.dtype = kFloat32});
  amp::unscale_check_({{a, b, c}}, found, full({}, 1.0 / 1024, {.dtype = kFloat32}));
  CHECK(values(a) == std::vector<double>(3, 1.0));
  CHECK(values(b) == std::vector<double>(4, 1.0));
  CHECK(values(c)[0] == Approx(3.0 / 1024));
  CHECK(found.item<float>() == 0.0f);
  Tensor h = make({1, 65504}, kFloat16);
  amp::unscale_check_({{h}}, found, full({}, 1.0, {.dtype = kFloat32}));
  CHECK(found.item<float>() == 0.0f);  // the largest float16 is finite
  h.select(0, 0).fill_(kInf);
  amp::unscale_check_({{h}}, found, full({}, 1.0, {.dtype = kFloat32}));
  CHECK(found.item<float>() == 1.0f);
  Tensor bad = make({1}, kInt32);
  CHECK_THROWS_WITH(amp::unscale_check_({{bad}}, found, full({}, 1.0, {.dtype = kFloat32})),
                    Contains("amp_unscale_check_") && Contains("int32"));
  CHECK_THROWS_WITH(amp::unscale_check_({{c}}, found, full({2}, 1.0, {.dtype = kFloat32})), Contains("inv_scale"));
  // An expanded gradient is refused before any gradient is modified.
  Tensor dense = full({4}, 8.0, {.dtype = kFloat32}), expanded = full({1}, 8.0, {.dtype = kFloat32}).expand({4});
  CHECK_THROWS_WITH(amp::unscale_check_({{dense, expanded}}, found, full({}, 0.5, {.dtype = kFloat32})),
                    Contains("amp_unscale_check_") && Contains("expanded"));
  CHECK(values(dense) == std::vector<double>(4, 8.0));
}

TEST_CASE("the scale update op refuses an invalid rule", "[amp][scaler]") {
  Tensor scale = full({}, 1024.0, {.dtype = kFloat32}), found = zeros({}, {.dtype = kFloat32});
  Tensor growth = zeros({}, {.dtype = kInt32}), hyst = full({}, 1, {.dtype = kInt32});
  Tensor skipped = zeros({}, {.dtype = kInt64}), floor = zeros({}, {.dtype = kInt64});
  for (amp::ScaleRule bad : {amp::ScaleRule{.growth_interval = 0}, amp::ScaleRule{.hysteresis = 0},
                             amp::ScaleRule{.backoff_factor = -0.5}, amp::ScaleRule{.min_scale = 8, .max_scale = 4},
                             amp::ScaleRule{.growth_factor = kNan}})
    CHECK_THROWS_WITH(amp::update_scale_(scale, growth, hyst, found, skipped, floor, bad),
                      Contains("amp_update_scale_") && Contains("invalid rule"));
  CHECK(scale.item<double>() == 1024.0);
  CHECK_NOTHROW(amp::update_scale_(scale, growth, hyst, found, skipped, floor, {.max_scale = kInf}));  // valid
  CHECK(growth.item<int64_t>() == 1);
}

TEST_CASE("hysteresis, floor actions and ceiling", "[amp][scaler]") {
  Params ps(2);
  optim::SGD opt(ps.p, {.lr = 0.1});
  auto iterate = [&](amp::GradScaler& s, bool overflow) {
    ps.set_grads(s.current_scale(), overflow ? 0 : -1, kNan);
    const bool stepped = s.step(opt);
    s.update();
    return stepped;
  };
  SECTION("hysteresis tolerates overflows before backing off") {
    amp::GradScaler s({.initial_scale = 1024, .growth_interval = 100, .hysteresis = 3});
    s.scale(scalar0(1));
    CHECK_FALSE(iterate(s, true));
    CHECK_FALSE(iterate(s, true));
    CHECK(s.current_scale() == 1024);  // two overflows absorbed (the steps are still skipped)
    CHECK(s.state().hysteresis_tracker == 1);
    CHECK_FALSE(iterate(s, true));
    CHECK(s.current_scale() == 512);
    CHECK(iterate(s, false));
    CHECK_FALSE(iterate(s, true));
    CHECK(s.current_scale() == 256);  // the budget refills only at a growth
    CHECK(s.skipped_steps() == 4);
  }
  SECTION("consecutive hysteresis refills after every finite step") {
    amp::GradScaler s({.initial_scale = 1024, .growth_interval = 100, .hysteresis = 2, .consecutive_hysteresis = true});
    s.scale(scalar0(1));
    for (int i = 0; i < 3; ++i) {
      CHECK_FALSE(iterate(s, true));
      CHECK(iterate(s, false));
    }
    CHECK(s.current_scale() == 1024);
  }
  SECTION("the ceiling stops growth") {
    amp::GradScaler s({.initial_scale = 1024, .growth_interval = 1, .max_scale = 3000});
    s.scale(scalar0(1));
    iterate(s, false);
    CHECK(s.current_scale() == 2048);
    iterate(s, false);
    CHECK(s.current_scale() == 3000);
    iterate(s, false);
    CHECK(s.current_scale() == 3000);
  }
  SECTION("at the floor: raise (the default)") {
    amp::GradScaler s({.initial_scale = 4, .min_scale = 2});
    s.scale(scalar0(1));
    iterate(s, true);
    CHECK(s.current_scale() == 2);
    CHECK_THROWS_WITH(iterate(s, true), Contains("min_scale") && Contains("KeepSkip"));
  }
  SECTION("at the floor: keep skipping, or report") {
    amp::GradScaler keep({.initial_scale = 4, .min_scale = 2, .floor_action = amp::FloorAction::KeepSkip});
    keep.scale(scalar0(1));
    for (int i = 0; i < 4; ++i) CHECK_FALSE(iterate(keep, true));
    CHECK(keep.current_scale() == 2);
    CHECK(keep.state().floor_hits == 3);
    int reports = 0;
    amp::GradScaler report({.initial_scale = 4, .min_scale = 2, .floor_action = amp::FloorAction::Report,
                            .on_floor = [&](double scale) {
                              CHECK(scale == 2);
                              ++reports;
                            }});
    report.scale(scalar0(1));
    for (int i = 0; i < 4; ++i) iterate(report, true);
    CHECK(reports == 3);
    CHECK(iterate(report, false));
  }
}

TEST_CASE("the per-optimizer state machine and bad options raise", "[amp][scaler]") {
  Params ps(2);
  optim::SGD opt(ps.p, {.lr = 0.1});
  amp::GradScaler s;
  CHECK_THROWS_WITH(s.unscale(opt), Contains("scale(loss)"));
  s.scale(scalar0(1));
  ps.set_grads(1);
  CHECK(s.stage(opt) == amp::OptimizerStage::Ready);
  s.unscale(opt);
  CHECK(s.stage(opt) == amp::OptimizerStage::Unscaled);
  CHECK_THROWS_WITH(s.unscale(opt), Contains("already been called"));
  CHECK(s.step(opt));
  CHECK(s.stage(opt) == amp::OptimizerStage::Stepped);
  CHECK_THROWS_WITH(s.unscale(opt), Contains("after step()"));
  CHECK_THROWS_WITH(s.step(opt), Contains("already been called since the last update()"));
  s.update();
  CHECK(s.stage(opt) == amp::OptimizerStage::Ready);
  CHECK_THROWS_WITH(s.update(), Contains("no inf checks"));
  CHECK_THROWS_WITH(amp::GradScaler({.growth_factor = 1.0}), Contains("growth_factor"));
  CHECK_THROWS_WITH(amp::GradScaler({.backoff_factor = 1.0}), Contains("backoff_factor"));
  CHECK_THROWS_WITH(amp::GradScaler({.growth_interval = 0}), Contains("growth_interval"));
  CHECK_THROWS_WITH(amp::GradScaler({.hysteresis = 0}), Contains("hysteresis"));
  CHECK_THROWS_WITH(amp::GradScaler({.min_scale = 8, .max_scale = 4}), Contains("min_scale"));
  CHECK_THROWS_WITH(amp::GradScaler({.floor_action = amp::FloorAction::Report}), Contains("on_floor"));
  s.update(512.0);
  CHECK(s.current_scale() == 512);
  // The defaults are PyTorch's (and the seed's), with a floor of 1 and no ceiling.
  const amp::GradScalerOptions d;
  CHECK((d.initial_scale == 65536 && d.growth_factor == 2 && d.backoff_factor == 0.5 && d.growth_interval == 2000));
  CHECK((d.enabled && d.hysteresis == 1 && d.min_scale == 1 && std::isinf(d.max_scale)));
}

TEST_CASE("gradient accumulation unscales once per window; disabled is a pass-through", "[amp][scaler]") {
  manual_seed(5);
  nn::Linear lin(4, 3);
  Tensor x = randn({4, 6, 4});
  auto window = [&](amp::GradScaler& s, optim::Optimizer& opt) {
    opt.zero_grad();
    for (int m = 0; m < 4; ++m) amp::backward(s, F::mse_loss(lin.forward(x.select(0, m)), zeros({6, 3})));
    s.unscale(opt);
    return lin.parameters()[0].grad().clone();
  };
  optim::SGD opt(lin.parameters(), {.lr = 0.0});
  amp::GradScaler on({.initial_scale = 1024});
  amp::GradScaler off({.enabled = false});
  const Tensor scaled = window(on, opt);
  CHECK(amp::step(on, opt));
  const Tensor plain = window(off, opt);
  CHECK(off.scale(x).is_same(x));
  CHECK(off.current_scale() == 1.0);
  CHECK(amp::step(off, opt));
  const auto a = values(scaled), b = values(plain);
  for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).epsilon(1e-6));
  CHECK(off.state_dict().metadata.at("enabled") == "false");
}

TEST_CASE("the sync-free step takes the same decisions as the bool step", "[amp][scaler]") {
  for (bool adam : {false, true}) {
    INFO((adam ? "Adam" : "SGD momentum"));
    Params a(4), b(4);
    auto make_opt = [&](Params& ps) -> std::unique_ptr<optim::Optimizer> {
      if (adam) return std::make_unique<optim::AdamW>(ps.p, optim::AdamWOptions{.lr = 0.05});
      return std::make_unique<optim::SGD>(ps.p, optim::SGDOptions{.lr = 0.05, .momentum = 0.9});
    };
    auto oa = make_opt(a), ob = make_opt(b);
    amp::GradScaler sa({.initial_scale = 256, .growth_interval = 2}), sb({.initial_scale = 256, .growth_interval = 2});
    sa.scale(scalar0(1));
    sb.scale(scalar0(1));
    const std::vector<int> overflows = {1, 0, 0, 1, 0, 0, 0, 1, 1, 0};
    for (size_t s = 0; s < overflows.size(); ++s) {
      a.set_grads(sa.current_scale(), overflows[s] ? 2 : -1, kInf);
      b.set_grads(sb.current_scale(), overflows[s] ? 2 : -1, kInf);
      const bool stepped = sa.step(*oa);
      sb.step_sync_free(*ob);
      CHECK(sb.last_step_skipped() == !stepped);
      sa.update();
      sb.update();
      for (size_t i = 0; i < a.p.size(); ++i) CHECK(values(a.p[i]) == values(b.p[i]));
    }
    CHECK(sa.state().scale == sb.state().scale);
    CHECK(sb.skipped_steps() == 4);
    // A skipped sync-free step leaves the step counters alone too.
    CHECK(ob->state_dict().find(adam ? "state.0.step" : "state.0.step")->item<double>() == 6);
  }
}

TEST_CASE("the flag reducer makes every rank skip the same steps", "[amp][scaler]") {
  Params ps(2);
  optim::SGD opt(ps.p, {.lr = 0.1});
  amp::GradScaler s;
  bool other_rank_overflowed = true;
  int calls = 0;
  s.set_flag_reducer([&](Tensor& found_inf) {  // a stand-in for all_reduce(max)
    ++calls;
    if (other_rank_overflowed) found_inf.fill_(1.0);
  });
  s.scale(scalar0(1));
  ps.set_grads(s.current_scale());
  CHECK_FALSE(s.step(opt));  // finite here, but another rank overflowed
  s.update();
  CHECK(s.current_scale() == 32768);
  other_rank_overflowed = false;
  ps.set_grads(s.current_scale());
  CHECK(s.step(opt));
  s.update();
  CHECK(calls == 2);  // once per iteration
}

TEST_CASE("float16 training on the CPU: gradients underflow without the scaler and survive with it", "[amp][fp16]") {
  manual_seed(11);
  nn::Linear lin(16, 16, /*bias=*/false);
  const Tensor x = randn({64, 16});
  // A heavily down-weighted loss: its gradient at the float16 output of the
  // linear layer (~2e-9) is below float16's smallest subnormal (6e-8).
  auto loss_of = [&] { return mul(F::mse_loss(lin.forward(x), zeros({64, 16})), 1e-6); };
  const Tensor w = lin.parameters()[0];
  auto grad_under = [&](amp::GradScaler* scaler, bool fp16) {
    optim::SGD opt(lin.parameters(), {.lr = 0.0});
    opt.zero_grad();
    Tensor loss;
    {
      autocast::Guard g({.device = DeviceType::CPU, .dtype = kFloat16, .enabled = fp16});
      loss = loss_of();
    }
    if (scaler) {
      amp::backward(*scaler, loss);
      scaler->unscale(opt);
      CHECK(scaler->step(opt));
      scaler->update();
    } else {
      loss.backward();
    }
    return w.grad().clone();
  };
  const Tensor reference = grad_under(nullptr, false);
  const Tensor unscaled = grad_under(nullptr, true);
  amp::GradScaler scaler;
  const Tensor scaled = grad_under(&scaler, true);
  auto zero_fraction = [](const Tensor& g) {
    const auto v = values(g);
    return static_cast<double>(std::count(v.begin(), v.end(), 0.0)) / static_cast<double>(v.size());
  };
  auto relative_error = [&](const Tensor& g) {
    return max(abs(sub(g, reference))).item<double>() / max(abs(reference)).item<double>();
  };
  INFO("zero fraction unscaled " << zero_fraction(unscaled) << ", scaled " << zero_fraction(scaled));
  INFO("relative error unscaled " << relative_error(unscaled) << ", scaled " << relative_error(scaled));
  CHECK(zero_fraction(reference) == 0.0);
  CHECK(zero_fraction(unscaled) == 1.0);  // every weight gradient lost
  CHECK(relative_error(unscaled) == 1.0);
  CHECK(zero_fraction(scaled) == 0.0);  // all recovered
  CHECK(relative_error(scaled) < 2e-3);
}

namespace {

struct Run {
  std::unique_ptr<nn::Sequential> model;
  std::unique_ptr<optim::AdamW> opt;
  std::unique_ptr<optim::WarmupCosine> schedule;
  std::unique_ptr<amp::GradScaler> scaler;
  bool sync_free = false;
};

Run make_run(bool sync_free) {
  manual_seed(21);
  Run r;
  // Dropout draws from the default generator, which the training checkpoint carries.
  r.model = std::make_unique<nn::Sequential>(nn::Linear(6, 16), nn::GELU(), nn::Dropout(0.2), nn::LayerNorm(Shape{16}),
                                             nn::Linear(16, 3));
  r.opt = std::make_unique<optim::AdamW>(r.model->parameters(), optim::AdamWOptions{.lr = 1e-2});
  r.schedule = std::make_unique<optim::WarmupCosine>(*r.opt, 3, 20, 0.1);
  r.scaler = std::make_unique<amp::GradScaler>(amp::GradScalerOptions{.initial_scale = 1024, .growth_interval = 3});
  r.sync_free = sync_free;
  return r;
}

// Step `i`: fp16 autocast forward, scaled backward, scaler step; steps 4 and 9 overflow.
void train_step(Run& r, int64_t i) {
  Generator g(500 + static_cast<uint64_t>(i));
  Tensor x = randn({8, 6}, {}, &g);
  if (i == 4 || i == 9) x.select(0, 0).select(0, 0).fill_(1e30);
  const Tensor y = randint(0, 3, {8}, {}, &g);
  r.opt->zero_grad();
  Tensor loss;
  {
    autocast::Guard ac({.device = DeviceType::CPU, .dtype = kFloat16});
    loss = F::cross_entropy(r.model->forward(x), y);
  }
  amp::backward(*r.scaler, loss);
  if (r.sync_free)
    r.scaler->step_sync_free(*r.opt);
  else
    r.scaler->step(*r.opt);
  r.scaler->update();
  r.schedule->step();
}

}  // namespace

TEST_CASE("a run with dropout resumed from a training checkpoint is bit-identical, scaler included",
          "[amp][checkpoint]") {
  for (bool sync_free : {false, true}) {
    INFO((sync_free ? "sync-free" : "bool step"));
    const std::string path = std::string("test_grad_scaler_") + (sync_free ? "sf" : "b") + ".safetensors";
    Run straight = make_run(sync_free);
    for (int64_t i = 0; i < 12; ++i) train_step(straight, i);
    CHECK(straight.scaler->skipped_steps() == 2);

    Run first = make_run(sync_free);
    for (int64_t i = 0; i < 6; ++i) train_step(first, i);
    amp::save_training_checkpoint(path, *first.model, *first.opt, *first.scaler, first.schedule.get(),
                                  {{"run", io::StateDict{{}, {{"step", "6"}}}}});
    Run resumed = make_run(sync_free);  // fresh objects, other initial values
    for (Tensor p : resumed.model->parameters()) {
      autograd::NoGradGuard ng;
      p.fill_(0.5);
    }
    const amp::ResumeReport rep = amp::load_training_checkpoint(path, *resumed.model, *resumed.opt, *resumed.scaler,
                                                                resumed.schedule.get());
    CHECK(rep.policy_matches);
    REQUIRE(rep.extra.size() == 1);
    CHECK(rep.extra[0].second.metadata.at("step") == "6");
    CHECK(resumed.scaler->state().scale == first.scaler->state().scale);
    for (int64_t i = 6; i < 12; ++i) train_step(resumed, i);
    const auto a = straight.model->parameters(), b = resumed.model->parameters();
    for (size_t k = 0; k < a.size(); ++k) CHECK(values(a[k]) == values(b[k]));
    const amp::ScalerState sa = straight.scaler->state(), sb = resumed.scaler->state();
    CHECK(sa.scale == sb.scale);
    CHECK(sa.growth_tracker == sb.growth_tracker);
    CHECK(sa.skipped_steps == sb.skipped_steps);

    // Resuming under another precision policy is reported.
    autocast::set_policy(DeviceType::CUDA, OpId::mm, autocast::Policy::LowerF32Out);
    Run other = make_run(sync_free);
    const amp::ResumeReport changed = amp::load_training_checkpoint(path, *other.model, *other.opt, *other.scaler,
                                                                    other.schedule.get(), /*quiet=*/true);
    autocast::reset_policies();
    CHECK_FALSE(changed.policy_matches);
    CHECK_THAT(changed.saved_fingerprint,
               Contains("tables=v" + std::to_string(autocast::kPolicyTableVersion)) && Contains("changed=none"));
    CHECK_THAT(amp::precision_fingerprint(), Contains("cpu=off:bfloat16"));
    std::remove(path.c_str());
  }
}

TEST_CASE("scaler state dicts round trip and bad ones raise", "[amp][checkpoint]") {
  amp::GradScaler s({.initial_scale = 2048, .growth_factor = 4, .growth_interval = 7, .hysteresis = 2});
  s.load_state({.scale = 96, .growth_tracker = 3, .hysteresis_tracker = 1, .skipped_steps = 9, .floor_hits = 0});
  const io::StateDict sd = s.state_dict();
  amp::GradScaler t;
  t.load_state_dict(sd);
  CHECK(t.state().scale == 96);
  CHECK(t.state().growth_tracker == 3);
  CHECK(t.state().skipped_steps == 9);
  CHECK(t.options().growth_factor == 4);
  CHECK(t.options().growth_interval == 7);
  CHECK_THROWS_WITH(t.load_state_dict(io::StateDict{}), Contains("not a grad scaler state dict"));
  io::StateDict broken = sd;
  broken.tensors.clear();
  CHECK_THROWS_WITH(t.load_state_dict(broken), Contains("scale"));
  CHECK_THROWS_WITH(t.load_state({.scale = -1}), Contains("positive"));
  // Corrupt numbers raise instead of reaching an out-of-range conversion.
  io::StateDict huge = sd;
  huge.metadata["growth_interval"] = "1e30";
  CHECK_THROWS_WITH(t.load_state_dict(huge), Contains("growth_interval") && Contains("integer"));
  io::StateDict nan_tracker = sd;
  nan_tracker.set("growth_tracker", full({}, kNan, {.dtype = kFloat64}));
  CHECK_THROWS_WITH(t.load_state_dict(nan_tracker), Contains("growth_tracker"));
  io::StateDict fractional = sd;
  fractional.set("skipped_steps", full({}, 2.5, {.dtype = kFloat64}));
  CHECK_THROWS_WITH(t.load_state_dict(fractional), Contains("skipped_steps"));
  CHECK(t.state().scale == 96);  // nothing changed by the refused loads
}

TEST_CASE("scaler states that do not fit float32 or the counters are refused and change nothing", "[amp][checkpoint]") {
  const amp::GradScalerOptions opts{.initial_scale = 2048, .growth_interval = 7, .hysteresis = 2, .min_scale = 1.0,
                                    .max_scale = 1e6};
  amp::GradScaler s(opts);
  const amp::ScalerState good{.scale = 96, .growth_tracker = 3, .hysteresis_tracker = 1, .skipped_steps = 9};
  s.load_state(good);
  const io::StateDict sd = s.state_dict();
  auto unchanged = [&](const amp::GradScaler& t) {
    const amp::ScalerState now = t.state();
    CHECK(now.scale == 96);
    CHECK(now.growth_tracker == 3);
    CHECK(now.hysteresis_tracker == 1);
    CHECK(now.skipped_steps == 9);
    CHECK(t.options().growth_interval == 7);
    CHECK(t.options().max_scale == 1e6);
  };
  struct Bad {
    amp::ScalerState state;
    std::string error, dict_error = "";  // dict_error: load_state_dict's, when it differs
  };
  const double two40 = std::ldexp(1.0, 40);
  const std::vector<Bad> bad_states = {
      {{.scale = 1e300}, "positive and finite in float32"},  // Inf in float32
      {{.scale = 1e-50}, "positive and finite in float32"},  // 0 in float32
      {{.scale = 0.5}, "outside [min_scale 1"},
      {{.scale = 2e6}, "outside [min_scale 1"},
      {{.scale = 96, .growth_tracker = int64_t{1} << 40}, "growth_tracker 1099511627776"},
      {{.scale = 96, .growth_tracker = 7}, "growth_tracker 7"},
      {{.scale = 96, .hysteresis_tracker = 3}, "hysteresis_tracker 3"},
      {{.scale = 96, .skipped_steps = -1}, "counters", "'skipped_steps' must be an integer"},
  };
  for (const Bad& b : bad_states) {
    INFO(b.error);
    CHECK_THROWS_WITH(s.load_state(b.state), Contains(b.error));
    unchanged(s);
    io::StateDict bad = sd;
    bad.set("scale", full({}, b.state.scale, {.dtype = kFloat64}));
    bad.set("growth_tracker", full({}, static_cast<double>(b.state.growth_tracker), {.dtype = kFloat64}));
    bad.set("hysteresis_tracker", full({}, b.state.hysteresis_tracker, {.dtype = kInt64}));
    bad.set("skipped_steps", full({}, b.state.skipped_steps, {.dtype = kInt64}));
    CHECK_THROWS_WITH(s.load_state_dict(bad), Contains(b.dict_error.empty() ? b.error : b.dict_error));
    unchanged(s);
  }
  io::StateDict bad = sd;
  bad.set("growth_tracker", full({}, two40, {.dtype = kFloat32}));  // 2^40 would have become 0 in int32
  CHECK_THROWS_WITH(s.load_state_dict(bad), Contains("growth_tracker"));
  bad = sd;
  bad.metadata["max_scale"] = "50";  // the saved scale 96 lies above the saved ceiling
  CHECK_THROWS_WITH(s.load_state_dict(bad), Contains("outside"));
  bad = sd;
  bad.metadata["growth_factor"] = "inf";
  CHECK_THROWS_WITH(s.load_state_dict(bad), Contains("growth_factor"));
  bad = sd;
  bad.metadata["backoff_factor"] = "nan";
  CHECK_THROWS_WITH(s.load_state_dict(bad), Contains("backoff_factor"));
  bad = sd;
  bad.set("extra", zeros({}));
  CHECK_THROWS_WITH(s.load_state_dict(bad), Contains("unexpected tensor 'extra'"));
  bad = sd;
  bad.tensors.emplace_back("scale", full({}, 128.0, {.dtype = kFloat64}));
  CHECK_THROWS_WITH(s.load_state_dict(bad), Contains("two tensors named 'scale'"));
  unchanged(s);

  // The constructor and update(new_scale) use the same rule.
  CHECK_THROWS_WITH(amp::GradScaler({.initial_scale = 1e300}), Contains("initial_scale"));
  CHECK_THROWS_WITH(amp::GradScaler({.initial_scale = 1e-50, .min_scale = 0}), Contains("initial_scale"));
  CHECK_THROWS_WITH(s.update(1e300), Contains("float32"));
  CHECK_THROWS_WITH(s.update(2e6), Contains("max_scale"));
  unchanged(s);
}

TEST_CASE("a training checkpoint whose scaler part does not fit leaves the model unchanged", "[amp][checkpoint]") {
  const std::string path = "test_grad_scaler_unfit.safetensors";
  Run saved = make_run(false);
  for (int64_t i = 0; i < 2; ++i) train_step(saved, i);
  io::StateDict scaler = saved.scaler->state_dict();
  scaler.set("scale", full({}, 1e300, {.dtype = kFloat64}));
  io::StateDict precision;
  precision.metadata["fingerprint"] = amp::precision_fingerprint();
  io::save_checkpoint(path, io::CheckpointParts{{"model", saved.model->state_dict()},
                                                {"optim", saved.opt->state_dict()},
                                                {"schedule", saved.schedule->state_dict()},
                                                {"rng", io::rng_state()},
                                                {"scaler", scaler},
                                                {"precision", precision}});
  Run r = make_run(false);
  std::vector<std::vector<float>> before;
  for (const Tensor& p : r.model->parameters()) before.push_back(p.to_vector<float>());
  CHECK_THROWS_WITH(amp::load_training_checkpoint(path, *r.model, *r.opt, *r.scaler, r.schedule.get()),
                    Contains("scale"));
  for (size_t k = 0; k < before.size(); ++k) CHECK(r.model->parameters()[k].to_vector<float>() == before[k]);
  CHECK(r.opt->step_count() == 0);
  CHECK(r.schedule->current_step() == 0);
  CHECK(r.scaler->current_scale() == 1024);
  std::remove(path.c_str());
}
