// Optimizers and the LR schedule: SGD / Adam / AdamW updates step by step against
// the formulas evaluated here in double (momentum, dampening, Nesterov, weight
// decay, bias correction, amsgrad), narrow parameters with float32 state, skipped
// parameters, groups, state-dict resume (bit-identical), errors, training a
// model, and WarmupCosine's values.
#include <catch2/catch.hpp>

#include <cmath>
#include <numbers>

#include <mixt/mixt.h>
#include <mixt/runtime/nn/modules.h>
#include <mixt/runtime/optim/optimizer.h>
#include <mixt/runtime/optim/schedule.h>

#include "reference_nn.h"
#include "test_util.h"
#include "ulps.h"

using namespace mixt;
using namespace mixt::testing;
using Catch::Contains;
using Vec = std::vector<double>;

namespace {

// The gradient of element i at step t (varying sign and magnitude).
double grad_at(size_t i, int t) { return std::sin(1.1 * static_cast<double>(i) + 0.7 * t) * (1.0 + 0.3 * t); }

Vec grads(size_t n, int t) {
  Vec g(n);
  for (size_t i = 0; i < n; ++i) g[i] = grad_at(i, t);
  return g;
}

const Vec kStart = {0.5, -1.25, 2.0, 0.0, -0.75, 1.5};

// A leaf parameter of `dt` holding kStart.
Tensor param(ScalarType dt = kFloat64) { return make(kStart, dt).set_requires_grad(true); }

void set_grad(const Tensor& p, int t) { Tensor(p).set_grad(make(grads(static_cast<size_t>(p.numel()), t), p.dtype())); }

void check_close(const Vec& got, const Vec& want, double rtol) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(rtol).margin(rtol));
}

// torch.optim.SGD's rule in double (the shared reference of tests/support/reference_nn.h).
struct SgdRef : testing::ref::SgdState {
  SgdRef(const optim::SGDOptions& o)
      : SgdState{{.lr = o.lr, .momentum = o.momentum, .dampening = o.dampening, .weight_decay = o.weight_decay,
                  .nesterov = o.nesterov}} {}
};

// Adam / AdamW in the textbook form: bias-corrected moments m_hat, v_hat (shared reference).
struct AdamRef : testing::ref::AdamState {
  AdamRef(const optim::AdamOptions& o, double wd, bool decoupled)
      : AdamState{{.lr = o.lr, .beta1 = o.betas[0], .beta2 = o.betas[1], .eps = o.eps, .weight_decay = wd,
                   .amsgrad = o.amsgrad, .decoupled = decoupled}} {}
};

// Runs `steps` steps of `opt` on `p` and of `ref` on a double copy, comparing after each.
template <class Ref>
void run_against(optim::Optimizer& opt, const Tensor& p, Ref& ref, int steps, double rtol) {
  Vec want = kStart;
  for (int t = 0; t < steps; ++t) {
    set_grad(p, t);
    opt.step();
    ref.step(want, grads(want.size(), t));
    INFO("step " << t);
    check_close(values(p), want, rtol);
  }
  CHECK(opt.step_count() == steps);
}

// A deep copy of a state dict (state_dict() tensors alias live state).
io::StateDict snapshot(const io::StateDict& sd) {
  io::StateDict out = sd;
  for (auto& [n, t] : out.tensors) t = t.clone();
  return out;
}

// Deterministic float32 values of `shape`.
Tensor input_of(const Shape& shape, double phase = 0.0) {
  Vec v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = std::cos(0.37 * static_cast<double>(i) + phase) * 1.5;
  return make(v, kFloat32, shape);
}

Tensor mse(const Tensor& pred, const Tensor& target) {
  const Tensor d = pred - target;
  return mean(d * d);
}

}  // namespace

TEST_CASE("SGD matches torch.optim.SGD's rules step by step", "[optim]") {
  const std::vector<optim::SGDOptions> cases = {
      {.lr = 0.1},
      {.lr = 0.05, .momentum = 0.9},
      {.lr = 0.05, .momentum = 0.8, .dampening = 0.3},
      {.lr = 0.02, .momentum = 0.9, .nesterov = true},
      {.lr = 0.1, .weight_decay = 0.05},
      {.lr = 0.03, .momentum = 0.7, .weight_decay = 0.1, .nesterov = true},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    INFO("case " << c);
    Tensor p = param();
    optim::SGD opt({p}, cases[c]);
    SgdRef ref{cases[c]};
    run_against(opt, p, ref, 5, 1e-12);
  }
}

TEST_CASE("Adam and AdamW match the bias-corrected formulas step by step", "[optim]") {
  struct Case {
    optim::AdamOptions o;
    bool decoupled;
  };
  const std::vector<Case> cases = {
      {{.lr = 0.01}, false},
      {{.lr = 0.05, .betas = {0.8, 0.99}, .eps = 1e-6}, false},
      {{.lr = 0.01, .weight_decay = 0.1}, false},
      {{.lr = 0.01, .amsgrad = true}, false},
      {{.lr = 0.02}, true},  // AdamW's default weight decay 1e-2
      {{.lr = 0.02, .betas = {0.9, 0.95}, .weight_decay = 0.2, .amsgrad = true}, true},
  };
  for (size_t c = 0; c < cases.size(); ++c) {
    INFO("case " << c);
    Tensor p = param();
    std::unique_ptr<optim::Optimizer> opt;
    if (cases[c].decoupled)
      opt = std::make_unique<optim::AdamW>(std::vector<Tensor>{p}, cases[c].o);
    else
      opt = std::make_unique<optim::Adam>(std::vector<Tensor>{p}, cases[c].o);
    const double wd = cases[c].o.weight_decay.value_or(cases[c].decoupled ? 1e-2 : 0.0);
    CHECK(*opt->param_groups()[0].weight_decay == wd);
    AdamRef ref{cases[c].o, wd, cases[c].decoupled};
    run_against(*opt, p, ref, 6, 1e-11);
  }
}

TEST_CASE("float32 and narrow parameters: float32 state, updates through a float32 copy", "[optim]") {
  {
    Tensor p = param(kFloat32);
    optim::AdamW opt({p}, {.lr = 0.01});
    AdamRef ref{{.lr = 0.01}, 1e-2, true};
    run_against(opt, p, ref, 4, 2e-6);
    CHECK(opt.state_dict().find("state.0.exp_avg")->dtype() == kFloat32);
  }
  for (ScalarType dt : {kBFloat16, kFloat16}) {
    INFO(dtype_name(dt));
    Tensor p = param(dt);
    optim::SGD opt({p}, {.lr = 0.1, .momentum = 0.9});
    SgdRef ref{{.lr = 0.1, .momentum = 0.9}};
    Vec want = values(p);
    for (int t = 0; t < 3; ++t) {
      set_grad(p, t);
      opt.step();
      ref.step(want, values(p.grad()));
      want = values(make(want, dt));  // the parameter is stored rounded each step
      // The same stored value, or its neighbour where the float32 update lay within float32 error of a
      // tie: one ulp of the dtype (0.008 near 1 in bfloat16, against updates of about 0.1).
      const Vec got = values(p);
      for (size_t i = 0; i < got.size(); ++i) {
        INFO("element " << i << ": got " << got[i] << ", want " << want[i]);
        CHECK(within(dt, got[i], want[i], {1, 0}));
      }
    }
    CHECK(p.dtype() == dt);
    CHECK(opt.state_dict().find("state.0.momentum_buffer")->dtype() == kFloat32);
  }
}

TEST_CASE("parameters without a gradient are skipped and keep their own step count", "[optim]") {
  Tensor a = param(), b = param();
  optim::Adam opt({a, b}, {.lr = 0.1});
  AdamRef ra{{.lr = 0.1}, 0.0, false}, rb{{.lr = 0.1}, 0.0, false};
  Vec wa = kStart, wb = kStart;
  set_grad(a, 0);
  opt.step();  // b has no gradient
  ra.step(wa, grads(6, 0));
  CHECK(values(b) == kStart);
  CHECK(opt.state_dict().find("state.1.exp_avg") == nullptr);
  set_grad(a, 1);
  set_grad(b, 1);
  opt.step();
  ra.step(wa, grads(6, 1));
  rb.step(wb, grads(6, 1));  // b's first update: bias correction of step 1
  check_close(values(a), wa, 1e-12);
  check_close(values(b), wb, 1e-12);
  const io::StateDict sd = opt.state_dict();
  REQUIRE(sd.find("state.0.step") != nullptr);
  CHECK(sd.find("state.0.step")->item<double>() == 2);
  CHECK(sd.find("state.1.step")->item<double>() == 1);
  CHECK(sd.metadata.at("step_count") == "2");
}

TEST_CASE("parameter groups: own lr and weight decay, defaults, set_lr", "[optim]") {
  Tensor a = param(), b = param(), c = param();
  optim::SGD opt({{.params = {a}, .lr = 0.1}, {.params = {b}, .weight_decay = 0.5}}, {.lr = 0.01});
  opt.add_param_group({.params = {c}, .lr = 0.2});
  REQUIRE(opt.param_groups().size() == 3);
  CHECK(opt.lr(0) == 0.1);
  CHECK(opt.lr(1) == 0.01);
  CHECK(*opt.param_groups()[1].weight_decay == 0.5);
  CHECK(*opt.param_groups()[2].weight_decay == 0.0);
  SgdRef ra{{.lr = 0.1}}, rb{{.lr = 0.01, .weight_decay = 0.5}}, rc{{.lr = 0.2}};
  Vec wa = kStart, wb = kStart, wc = kStart;
  for (int t = 0; t < 2; ++t) {
    for (const Tensor& p : {a, b, c}) set_grad(p, t);
    opt.step();
    ra.step(wa, grads(6, t));
    rb.step(wb, grads(6, t));
    rc.step(wc, grads(6, t));
  }
  check_close(values(a), wa, 1e-12);
  check_close(values(b), wb, 1e-12);
  check_close(values(c), wc, 1e-12);
  opt.set_lr(1, 0.3);
  CHECK(opt.lr(1) == 0.3);
  opt.set_lr(0.4);
  CHECK((opt.lr(0) == 0.4 && opt.lr(2) == 0.4));
  opt.zero_grad(false);
  CHECK(values(a.grad()) == Vec(6, 0.0));
  opt.zero_grad();
  CHECK_FALSE(a.grad().defined());
}

TEST_CASE("optimizer construction errors", "[optim]") {
  Tensor p = param();
  CHECK_THROWS_WITH(optim::SGD(std::vector<Tensor>{}), Contains("empty parameter list"));
  CHECK_THROWS_WITH(optim::SGD({p}, {.lr = -1}), Contains("learning rate") && Contains("-1"));
  CHECK_THROWS_WITH(optim::SGD({p}, {.momentum = -0.5}), Contains("momentum"));
  CHECK_THROWS_WITH(optim::SGD({p}, {.nesterov = true}), Contains("Nesterov"));
  CHECK_THROWS_WITH(optim::SGD({p, p}), Contains("more than one"));
  CHECK_THROWS_WITH(optim::SGD({{.params = {p}}, {.params = {p}}}), Contains("more than one"));
  CHECK_THROWS_WITH(optim::SGD({make({1, 2}, kInt64)}), Contains("floating-point") && Contains("int64"));
  CHECK_THROWS_WITH(optim::SGD({mul(p, 2.0)}), Contains("not a leaf"));
  CHECK_THROWS_WITH(optim::Adam({p}, {.betas = {0.9, 1.0}}), Contains("betas"));
  CHECK_THROWS_WITH(optim::AdamW({p}, {.eps = -1}), Contains("AdamW") && Contains("eps"));
  CHECK_THROWS_WITH(optim::AdamW({p}, {.weight_decay = -1}), Contains("weight decay"));
  optim::SGD opt({p});
  CHECK_THROWS_WITH(opt.lr(1), Contains("group 1"));
  CHECK_THROWS_WITH(opt.set_lr(-0.1), Contains("learning rate"));
  CHECK_THROWS_WITH(opt.add_param_group({.params = {p}}), Contains("more than one"));
}

TEST_CASE("state_dict round trip resumes bit-identically", "[optim]") {
  const Tensor x = input_of({8, 4}), y = input_of({8, 2}, 1.0);
  auto make_model = [] {
    manual_seed(1234);
    return nn::Sequential(nn::Linear(4, 8), nn::Tanh(), nn::Linear(8, 2));
  };
  auto train = [&](nn::Module& model, optim::Optimizer& opt, int steps) {
    for (int i = 0; i < steps; ++i) {
      opt.zero_grad();
      mse(model.forward(x), y).backward();
      opt.step();
    }
  };
  auto make_opts = [](nn::Module& m) {
    std::vector<std::unique_ptr<optim::Optimizer>> v;
    v.push_back(std::make_unique<optim::AdamW>(m.parameters(), optim::AdamWOptions{.lr = 0.01, .amsgrad = true}));
    v.push_back(std::make_unique<optim::SGD>(m.parameters(), optim::SGDOptions{.lr = 0.05, .momentum = 0.9}));
    return v;
  };
  for (size_t k = 0; k < 2; ++k) {
    INFO("optimizer " << k);
    nn::Sequential straight = make_model();
    auto opt_a = std::move(make_opts(straight)[k]);
    train(straight, *opt_a, 6);

    nn::Sequential first = make_model();
    auto opt_b = std::move(make_opts(first)[k]);
    train(first, *opt_b, 3);
    const io::StateDict model_sd = snapshot(first.state_dict()), opt_sd = snapshot(opt_b->state_dict());
    train(first, *opt_b, 2);  // diverges from the saved state: loading must bring it back

    nn::Sequential resumed(nn::Linear(4, 8), nn::Tanh(), nn::Linear(8, 2));
    auto opt_c = std::move(make_opts(resumed)[k]);
    resumed.load_state_dict(model_sd);
    opt_c->load_state_dict(opt_sd);
    CHECK(opt_c->step_count() == 3);
    train(resumed, *opt_c, 3);
    for (size_t i = 0; i < straight.parameters().size(); ++i)
      CHECK(values(resumed.parameters()[i]) == values(straight.parameters()[i]));
  }
}

TEST_CASE("optimizer state_dict contents and load errors", "[optim]") {
  Tensor p = param(), q = make({1, 2}, kFloat64).set_requires_grad(true);
  optim::Adam opt({{.params = {p}}, {.params = {q}, .lr = 0.5}}, {.lr = 0.01, .betas = {0.8, 0.9}});
  set_grad(p, 0);
  set_grad(q, 0);
  opt.step();
  const io::StateDict sd = snapshot(opt.state_dict());
  CHECK(sd.metadata.at("type") == "Adam");
  CHECK(sd.metadata.at("param_groups") == "2");
  CHECK(sd.metadata.at("param_groups.1.lr") == "0.5");
  CHECK(sd.metadata.at("options.beta1") == "0.8");
  CHECK(sd.metadata.at("options.amsgrad") == "false");
  CHECK(sd.find("state.1.exp_avg_sq")->sizes() == Shape{2});

  // Loading restores hyperparameters and group settings.
  Tensor p2 = param(), q2 = make({1, 2}, kFloat64).set_requires_grad(true);
  optim::Adam other({{.params = {p2}}, {.params = {q2}}}, {.lr = 0.3});
  other.load_state_dict(sd);
  CHECK(other.options().betas[0] == 0.8);
  CHECK(other.lr(1) == 0.5);
  CHECK(other.lr(0) == 0.01);

  auto fails = [&](const io::StateDict& bad, const std::string& what) {
    Tensor p3 = param(), q3 = make({1, 2}, kFloat64).set_requires_grad(true);
    optim::Adam fresh({{.params = {p3}}, {.params = {q3}}}, {.lr = 0.3});
    CHECK_THROWS_WITH(fresh.load_state_dict(bad), Contains(what));
    CHECK(fresh.step_count() == 0);  // nothing changed
    CHECK(fresh.lr(0) == 0.3);
  };
  struct BadMeta {
    std::string key, value, error;
  };
  const std::vector<BadMeta> bad_meta = {{"type", "SGD", "SGD optimizer"},
                                         {"param_groups", "1", "1 parameter groups"},
                                         {"param_groups.1.params", "2", "group 1 has 2 parameters"},
                                         {"param_groups.0.lr", "fast", "not a number"},
                                         {"options.amsgrad", "maybe", "not a bool"}};
  for (const BadMeta& b : bad_meta) {
    io::StateDict bad = sd;
    bad.metadata[b.key] = b.value;
    fails(bad, b.error);
  }
  io::StateDict bad = sd;
  bad.metadata.erase("options.eps");
  fails(bad, "'options.eps'");
  bad = sd;
  bad.set("state.1.exp_avg", zeros({3}, of(kFloat64)));
  fails(bad, "'state.1.exp_avg' is float64[3]");
  bad = sd;
  bad.set("state.7.exp_avg", zeros({2}, of(kFloat64)));
  fails(bad, "names parameter 7");
  bad = sd;
  bad.set("extra", zeros({2}, of(kFloat64)));
  fails(bad, "unexpected tensor 'extra'");
  CHECK_THROWS_WITH(optim::SGD({param()}).load_state_dict(sd), Contains("Adam"));
}

TEST_CASE("optimizers follow a module converted in place after their creation", "[optim]") {
  nn::Linear lin(3, 2);
  optim::Adam opt(lin.parameters(), {.lr = 0.01});
  const Tensor x = input_of({4, 3}).to(kFloat32);
  lin.forward(x).sum().backward();
  opt.step();
  lin.to(kFloat64);
  const Vec before = values(lin.weight());
  opt.zero_grad();
  lin.forward(x.to(kFloat64)).sum().backward();
  opt.step();
  CHECK(lin.weight().dtype() == kFloat64);
  CHECK(values(lin.weight()) != before);
  CHECK(opt.state_dict().find("state.0.exp_avg")->dtype() == kFloat64);
}

TEST_CASE("a small model trains: the loss falls with SGD and with AdamW", "[optim]") {
  // Targets from a fixed linear map plus a nonlinearity the MLP can fit.
  const Tensor x = input_of({32, 3});
  const Tensor y = tanh(matmul(x, make({0.5, -1.0, 0.25, 1.5, 0.3, -0.7}, kFloat32, {3, 2})));
  for (int k = 0; k < 2; ++k) {
    INFO((k == 0 ? "SGD" : "AdamW"));
    manual_seed(7);
    nn::Sequential model(nn::Linear(3, 16), nn::GELU(), nn::Linear(16, 2));
    std::unique_ptr<optim::Optimizer> opt;
    if (k == 0)
      opt = std::make_unique<optim::SGD>(model.parameters(), optim::SGDOptions{.lr = 0.1, .momentum = 0.9});
    else
      opt = std::make_unique<optim::AdamW>(model.parameters(), optim::AdamWOptions{.lr = 0.02});
    double first = 0, last = 0;
    for (int i = 0; i < 200; ++i) {
      opt->zero_grad();
      Tensor loss = mse(model.forward(x), y);
      loss.backward();
      opt->step();
      (i == 0 ? first : last) = loss.item<double>();
    }
    CHECK(last < 0.02 * first);
  }
}

TEST_CASE("WarmupCosine: linear warmup, cosine decay, floor, groups", "[optim]") {
  Tensor a = param(), b = param();
  optim::SGD opt({{.params = {a}, .lr = 0.1}, {.params = {b}, .lr = 1.0}});
  optim::WarmupCosine sched(opt, /*warmup_steps=*/4, /*total_steps=*/12, /*min_lr_ratio=*/0.1);
  CHECK(opt.lr(0) == 0.0);  // step 0 of the warmup
  CHECK(sched.lr_at(2) == Approx(0.05));
  CHECK(sched.lr_at(4) == Approx(0.1));
  CHECK(sched.lr_at(8) == Approx(0.1 * (0.1 + 0.9 * 0.5)));
  CHECK(sched.lr_at(6, 1) == Approx(0.1 + 0.9 * 0.5 * (1 + std::cos(std::numbers::pi * 0.25))));
  CHECK(sched.lr_at(12) == Approx(0.01));
  CHECK(sched.lr_at(500) == Approx(0.01));
  for (int s = 1; s <= 13; ++s) {
    sched.step();
    CHECK(opt.lr(0) == Approx(sched.lr_at(s)));
    CHECK(opt.lr(1) == Approx(sched.lr_at(s, 1)));
  }
  CHECK(sched.current_step() == 13);
  CHECK(sched.lr_at(3) == Approx(0.075));  // pure: unaffected by stepping

  optim::WarmupCosine none(opt, 0, 10);
  CHECK(none.lr_at(0) == Approx(opt.lr(0)));
  CHECK(none.lr_at(10) == 0.0);

  const io::StateDict sd = sched.state_dict();
  Tensor c = param();
  optim::SGD opt2({{.params = {c}, .lr = 0.1}, {.params = {param()}, .lr = 1.0}});
  opt2.set_lr(0.5);  // base lrs are restored from the state dict
  optim::WarmupCosine resumed(opt2, 4, 12, 0.1);
  resumed.load_state_dict(sd);
  CHECK(resumed.current_step() == 13);
  CHECK(opt2.lr(0) == Approx(0.01));
  CHECK(opt2.lr(1) == Approx(0.1));
  CHECK(resumed.lr_at(4, 1) == Approx(1.0));
  optim::WarmupCosine other(opt2, 5, 12, 0.1);
  CHECK_THROWS_WITH(other.load_state_dict(sd), Contains("warmup_steps") && Contains("4") && Contains("5"));
  CHECK(other.current_step() == 0);
  io::StateDict bad = sd;
  bad.metadata.erase("base_lr.1");
  CHECK_THROWS_WITH(resumed.load_state_dict(bad), Contains("'base_lr.1'"));
  optim::SGD single({param()});
  optim::WarmupCosine fewer(single, 4, 12, 0.1);
  CHECK_THROWS_WITH(fewer.load_state_dict(sd), Contains("unexpected entry 'base_lr.1'"));

  CHECK_THROWS_WITH(optim::WarmupCosine(opt, 5, 4), Contains("warmup_steps"));
  CHECK_THROWS_WITH(optim::WarmupCosine(opt, 0, 0), Contains("total_steps"));
  CHECK_THROWS_WITH(optim::WarmupCosine(opt, 1, 4, 1.5), Contains("min_lr_ratio"));
  CHECK_THROWS_WITH(sched.lr_at(-1), Contains("negative"));
  CHECK_THROWS_WITH(sched.lr_at(1, 2), Contains("group 2"));
}

TEST_CASE("the training loop of DESIGN.md section 9 compiles and learns", "[optim]") {
  manual_seed(3);
  nn::Sequential model(nn::Linear(512, 512), nn::GELU(), nn::Linear(512, 10));
  model.to(Device::cpu());
  optim::AdamW opt(model.parameters(), {.lr = 3e-4});
  const Tensor x = randn({16, 512});
  const Tensor y = randint(0, 10, {16});
  double first = 0, last = 0;
  for (int i = 0; i < 5; ++i) {
    opt.zero_grad();
    Tensor loss = nn::functional::cross_entropy(model.forward(x), y);
    loss.backward();
    opt.step();
    (i == 0 ? first : last) = loss.item<double>();
  }
  CHECK(last < first);
  CHECK(opt.step_count() == 5);
}

namespace {

// The same optimizers with the fused multi-tensor kernels turned off: the base
// class then runs the composite update() per parameter, the reference.
template <class Base, class Options>
struct Composite : Base {
  Composite(std::vector<Tensor> params, Options o) : Base(std::move(params), o) {}

 protected:
  bool fused_update(const optim::ParamGroup&, std::span<optim::Optimizer::ParamState* const>, std::span<const Tensor>,
                    std::span<const Tensor>, const Tensor&) override {
    return false;
  }
};

}  // namespace

TEST_CASE("fused steps give the composite updates' bits; predicated steps skip everything", "[optim][fused]") {
  for (ScalarType dt : {kFloat32, kFloat64}) {
    for (int kind = 0; kind < 5; ++kind) {
      INFO(dtype_name(dt) << " optimizer " << kind);
      Tensor a = make(kStart, dt).set_requires_grad(true), b = make(kStart, dt).set_requires_grad(true);
      std::unique_ptr<optim::Optimizer> fused, composite;
      const optim::AdamOptions adam{.lr = 0.05, .weight_decay = 0.1, .amsgrad = kind == 1};
      const optim::SGDOptions sgd{.lr = 0.05, .momentum = 0.9, .dampening = kind == 3 ? 0.3 : 0.0,
                                  .weight_decay = 0.1, .nesterov = kind == 4};
      if (kind == 0 || kind == 1) {
        fused = std::make_unique<optim::Adam>(std::vector<Tensor>{a}, adam);
        composite = std::make_unique<Composite<optim::Adam, optim::AdamOptions>>(std::vector<Tensor>{b}, adam);
      } else if (kind == 2) {
        fused = std::make_unique<optim::AdamW>(std::vector<Tensor>{a}, adam);
        composite = std::make_unique<Composite<optim::AdamW, optim::AdamOptions>>(std::vector<Tensor>{b}, adam);
      } else {
        fused = std::make_unique<optim::SGD>(std::vector<Tensor>{a}, sgd);
        composite = std::make_unique<Composite<optim::SGD, optim::SGDOptions>>(std::vector<Tensor>{b}, sgd);
      }
      const Tensor skip = full({}, 1.0, {.dtype = kFloat32}), go = zeros({}, {.dtype = kFloat32});
      for (int t = 0; t < 6; ++t) {
        set_grad(a, t);
        set_grad(b, t);
        if (t == 2) {  // a predicated step with the flag set changes nothing, on either path
          const Vec before = values(a);
          fused->step_predicated(skip);
          composite->step_predicated(skip);
          CHECK(values(a) == before);
          CHECK(values(b) == before);
        }
        if (t % 2) {
          fused->step_predicated(go);
          composite->step_predicated(go);
        } else {
          fused->step();
          composite->step();
        }
        CHECK(values(a) == values(b));
      }
      const io::StateDict fa = fused->state_dict(), ca = composite->state_dict();
      REQUIRE(fa.tensors.size() == ca.tensors.size());
      for (size_t i = 0; i < fa.tensors.size(); ++i) {
        CHECK(fa.tensors[i].first == ca.tensors[i].first);
        CHECK(values(fa.tensors[i].second) == values(ca.tensors[i].second));
      }
      CHECK(fa.find("state.0.step")->item<double>() == 6);
    }
  }
}

TEST_CASE("a corrupt step counter in an optimizer state dict raises", "[optim]") {
  Tensor p = param();
  optim::Adam opt({p}, {.lr = 0.1});
  set_grad(p, 0);
  opt.step();
  const io::StateDict good = opt.state_dict();
  for (double bad : {-1.0, 2.5, kNan, 1e300}) {
    INFO("step " << bad);
    io::StateDict sd = good;
    sd.set("state.0.step", full({}, bad, {.dtype = kFloat64}));
    CHECK_THROWS_WITH(opt.load_state_dict(sd), Contains("state.0.step") && Contains("integer"));
  }
  optim::Adam fresh({param()}, {.lr = 0.1});
  fresh.load_state_dict(good);
  CHECK(fresh.state_dict().find("state.0.step")->item<double>() == 1);
}

TEST_CASE("constructors refuse non-finite hyperparameters", "[optim]") {
  Tensor p = param();
  for (double bad : {kNan, kInf}) {
    INFO("value " << bad);
    CHECK_THROWS_WITH(optim::SGD({p}, {.lr = bad}), Contains("learning rate"));
    CHECK_THROWS_WITH(optim::SGD({p}, {.weight_decay = bad}), Contains("weight decay"));
    CHECK_THROWS_WITH(optim::SGD({p}, {.momentum = bad}), Contains("momentum"));
    CHECK_THROWS_WITH(optim::SGD({p}, {.dampening = bad}), Contains("dampening"));
    CHECK_THROWS_WITH(optim::Adam({p}, {.eps = bad}), Contains("eps"));
    CHECK_THROWS_WITH(optim::Adam({p}, {.betas = {bad, 0.9}}), Contains("betas"));
    optim::SGD opt({p}, {.lr = 0.1});
    CHECK_THROWS_WITH(opt.set_lr(bad), Contains("learning rate"));
    CHECK(opt.lr() == 0.1);
  }
}

namespace {

// An Adam over two parameters (groups of one) after one step, and its state dict.
struct AdamFixture {
  Tensor p = param(), q = make({1, 2}, kFloat64).set_requires_grad(true);
  optim::Adam opt{{{.params = {p}}, {.params = {q}, .lr = 0.5}}, {.lr = 0.01, .betas = {0.8, 0.9}}};
  io::StateDict sd;
  AdamFixture() {
    set_grad(p, 0);
    set_grad(q, 0);
    opt.step();
    sd = snapshot(opt.state_dict());
  }
};

// Loading `bad` into a fresh Adam raises `what` and changes nothing at all.
void check_refused(const io::StateDict& bad, const std::string& what) {
  Tensor p = param(), q = make({1, 2}, kFloat64).set_requires_grad(true);
  optim::Adam fresh({{.params = {p}}, {.params = {q}}}, {.lr = 0.3, .betas = {0.7, 0.6}, .eps = 1e-6});
  const io::StateDict before = snapshot(fresh.state_dict());
  CHECK_THROWS_WITH(fresh.load_state_dict(bad), Contains(what));
  const io::StateDict after = fresh.state_dict();
  CHECK(after.metadata == before.metadata);  // step count, lrs, every hyperparameter
  CHECK(after.tensors.empty());
  // A refused load leaves a working optimizer: a step keeps the parameters finite.
  set_grad(p, 1);
  fresh.step();
  for (double v : values(p)) CHECK(std::isfinite(v));
}

}  // namespace

TEST_CASE("optimizer loads apply the constructor's rules to every setting", "[optim]") {
  const AdamFixture f;
  struct Bad {
    std::string key, value, error;
  };
  const std::vector<Bad> cases = {
      {"param_groups.0.lr", "nan", "learning rate"},     {"param_groups.1.lr", "inf", "learning rate"},
      {"param_groups.0.lr", "-1", "learning rate"},      {"param_groups.0.weight_decay", "-0.5", "weight decay"},
      {"param_groups.1.weight_decay", "nan", "weight decay"},
      {"options.beta1", "1.5", "betas"},                 {"options.beta2", "-0.1", "betas"},
      {"options.beta1", "nan", "betas"},                 {"options.beta2", "1", "betas"},
      {"options.eps", "-1", "eps"},                      {"options.eps", "nan", "eps"},
      {"options.eps", "inf", "eps"},                     {"step_count", "-3", "step_count"},
      {"step_count", "2.5", "step_count"},               {"options.beta3", "0.5", "unexpected entry 'options.beta3'"},
  };
  for (const Bad& b : cases) {
    INFO(b.key << " = " << b.value);
    io::StateDict bad = f.sd;
    bad.metadata[b.key] = b.value;
    check_refused(bad, b.error);
  }
  // SGD's own rules, through the same functions as its constructor.
  Tensor w = param();
  optim::SGD sgd({w}, {.lr = 0.1, .momentum = 0.9});
  set_grad(w, 0);
  sgd.step();
  const io::StateDict good = snapshot(sgd.state_dict());
  for (const Bad& b : std::vector<Bad>{{"options.momentum", "-1", "momentum"},
                                       {"options.momentum", "nan", "momentum"},
                                       {"options.dampening", "inf", "dampening"},
                                       {"options.nesterov", "true", "Nesterov"}}) {
    INFO(b.key << " = " << b.value);
    io::StateDict bad = good;
    bad.metadata[b.key] = b.value;
    if (b.key == "options.nesterov") bad.metadata["options.dampening"] = "0.5";
    optim::SGD fresh({param()}, {.lr = 0.2});
    CHECK_THROWS_WITH(fresh.load_state_dict(bad), Contains(b.error));
    CHECK(fresh.lr() == 0.2);
    CHECK(fresh.options().momentum == 0.0);
    CHECK(fresh.state_dict().tensors.empty());
  }
}

TEST_CASE("optimizer loads refuse unknown, missing and malformed state", "[optim]") {
  const AdamFixture f;
  auto without = [&](const std::string& key) {
    io::StateDict out = f.sd;
    const size_t i = out.tensors.index_of(key);
    REQUIRE(i != io::NamedTensorList::npos);
    out.tensors.erase(out.tensors.begin() + static_cast<std::ptrdiff_t>(i));
    REQUIRE(out.tensors.size() + 1 == f.sd.tensors.size());
    return out;
  };
  check_refused(without("state.1.exp_avg_sq"), "parameter 1 has no 'exp_avg_sq'");
  check_refused(without("state.0.step"), "parameter 0 has no 'step'");
  auto with = [&](const std::string& key, const Tensor& t) {
    io::StateDict out = f.sd;
    out.set(key, t);
    return out;
  };
  check_refused(with("state.0.max_exp_avg_sq", zeros({6}, of(kFloat64))), "no state named 'max_exp_avg_sq'");
  check_refused(with("state.1.momentum_buffer", zeros({2}, of(kFloat64))), "no state named 'momentum_buffer'");
  check_refused(with("state.1.exp_avg", zeros({2}, of(kInt64))), "'state.1.exp_avg' is int64[2]");
  check_refused(with("state.0.step", full({}, kInf, of(kFloat32))), "'state.0.step' must be an integer");
  check_refused(with("state.0.step", full({}, -2, of(kInt64))), "'state.0.step' must be an integer");
  check_refused(with("state.0.step", ones({2}, of(kFloat64))), "'state.0.step' must be a one-element");
  check_refused(with("state.x.exp_avg", zeros({6}, of(kFloat64))), "malformed state key 'state.x.exp_avg'");
  io::StateDict twice = f.sd;
  twice.tensors.emplace_back("state.0.exp_avg", zeros({6}, of(kFloat64)));  // a second entry of that name
  check_refused(twice, "two tensors named 'state.0.exp_avg'");
  // An integer step tensor counting updates is read exactly.
  io::StateDict int_step = f.sd;
  int_step.set("state.0.step", full({}, 1, of(kInt64)));
  Tensor p = param(), q = make({1, 2}, kFloat64).set_requires_grad(true);
  optim::Adam fresh({{.params = {p}}, {.params = {q}}}, {});
  fresh.load_state_dict(int_step);
  CHECK(fresh.state_dict().find("state.0.step")->item<double>() == 1);
}

TEST_CASE("WarmupCosine loads refuse steps and base lrs that are not valid", "[optim]") {
  optim::SGD opt({param()}, {.lr = 0.1});
  optim::WarmupCosine sched(opt, 2, 10);
  for (int i = 0; i < 3; ++i) sched.step();
  const io::StateDict good = sched.state_dict();
  struct Bad {
    std::string key, value, error;
  };
  const std::vector<Bad> cases = {{"step", "inf", "not an integer"},      {"step", "nan", "not an integer"},
                                  {"step", "1e300", "not an integer"},    {"step", "-1", ">= 0"},
                                  {"step", "2.5", "not an integer"},      {"step", "", "not an integer"},
                                  {"step", "99999999999999999999", "not an integer"},
                                  {"base_lr.0", "inf", "learning rate"},  {"base_lr.0", "nan", "learning rate"},
                                  {"base_lr.0", "-0.1", "learning rate"}, {"extra", "1", "unexpected entry 'extra'"}};
  for (const Bad& b : cases) {
    INFO(b.key << " = '" << b.value << "'");
    io::StateDict bad = good;
    bad.metadata[b.key] = b.value;
    optim::SGD fresh_opt({param()}, {.lr = 0.2});
    optim::WarmupCosine fresh(fresh_opt, 2, 10);
    CHECK_THROWS_WITH(fresh.load_state_dict(bad), Contains(b.error));
    CHECK(fresh.current_step() == 0);
    CHECK(fresh_opt.lr() == 0.0);  // step 0 of the warmup, as constructed
    CHECK(fresh.lr_at(2) == Approx(0.2));
  }
}
