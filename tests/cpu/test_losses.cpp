// The losses (cross_entropy, nll_loss, mse, l1, smooth_l1, huber, binary cross
// entropy with probabilities and with logits, kl_div) against references
// computed here in double, for every reduction and option, in float32, float64,
// float16 and bfloat16; their input validation; and their gradients (closed
// forms and central finite differences in float64).
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>

#include <mixt/mixt.h>

#include "reference_nn.h"
#include "test_util.h"

using namespace mixt;
using namespace mixt::testing;
using Catch::Contains;
namespace nnf = mixt::nn::functional;
using nnf::Reduction;

namespace {

const ScalarType kTested[] = {kFloat32, kFloat64, kFloat16, kBFloat16};
const Reduction kReductions[] = {Reduction::None, Reduction::Mean, Reduction::Sum};
using Vec = std::vector<double>;

// Deterministic values in [lo, hi].
Tensor spread(const Shape& s, ScalarType dt, double lo, double hi, double phase = 0.0) {
  Vec v(static_cast<size_t>(s.numel()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = lo + (hi - lo) * (0.5 + 0.5 * std::sin(2.3 * static_cast<double>(i) + phase));
  return make(v, dt, s);
}

Vec vals(const Tensor& t) { return t.to(kFloat64).to_vector<double>(); }

testing::ref::Reduce as_reduce(Reduction r) {
  return r == Reduction::None ? testing::ref::Reduce::None
         : r == Reduction::Mean ? testing::ref::Reduce::Mean
                                : testing::ref::Reduce::Sum;
}

// Reduces per-element reference losses like the op (mean divides by `denominator`).
Vec reduce_ref(const Vec& per, Reduction r, double denominator) {
  return testing::ref::reduce_loss({{static_cast<int64_t>(per.size())}, per}, as_reduce(r), denominator).v;
}

// Checks a loss against its reference in the tolerance of the result's dtype (times `scale`).
void check_loss(const Tensor& got, const Vec& want, double scale = 4.0) {
  const Vec g = vals(got);
  REQUIRE(g.size() == want.size());
  Tol tol = tol_for(got.dtype());
  for (size_t i = 0; i < g.size(); ++i) {
    INFO(dtype_name(got.dtype()) << " element " << i << ": got " << g[i] << ", want " << want[i]);
    CHECK(close(g[i], want[i], {tol.rtol * scale, tol.atol * scale + tol.rtol * scale * 0.1}));
  }
}

// Cross entropy of logits laid out [N, C, D] against class indices [N, D], reduced by `r`: the shared
// reference of tests/support/reference_nn.h (PyTorch's formulas).
Vec ce_ref(const Vec& x, int64_t N, int64_t C, int64_t D, const std::vector<int64_t>& t, const Vec& w, int64_t ignore,
           double ls, Reduction r, bool already_log = false) {
  return testing::ref::cross_entropy({{N, C, D}, x}, {{N, D}, Vec(t.begin(), t.end())}, w, ignore, as_reduce(r), ls,
                                     already_log)
      .v;
}

// d/dx_j of sum(f(x) * w) by central differences (x float64, one input).
Vec numeric_grad(const std::function<Tensor(const Tensor&)>& f, const Tensor& x, const Tensor& w) {
  autograd::NoGradGuard no_grad;
  Vec base = vals(x), out(base.size());
  for (size_t j = 0; j < base.size(); ++j) {
    const double keep = base[j];
    base[j] = keep + 1e-6;
    const double up = sum(mul(f(from_vector(base, x.sizes())), w)).item<double>();
    base[j] = keep - 1e-6;
    const double down = sum(mul(f(from_vector(base, x.sizes())), w)).item<double>();
    base[j] = keep;
    out[j] = (up - down) / 2e-6;
  }
  return out;
}

// Checks autograd's gradient of sum(f(x) * w) with respect to x against central differences.
void check_grad_of(const std::function<Tensor(const Tensor&)>& f, const Tensor& x0) {
  Tensor x = x0.to(kFloat64).clone();
  x.set_requires_grad(true);
  const Tensor y = f(x);
  const Tensor w = spread(y.sizes(), kFloat64, -1, 1, 0.4);
  const Vec got = vals(autograd::grad({sum(mul(y, w))}, {x})[0]), want = numeric_grad(f, x.detach(), w);
  for (size_t j = 0; j < got.size(); ++j) {
    INFO("d/dx[" << j << "]: analytic " << got[j] << ", numeric " << want[j]);
    CHECK(std::abs(got[j] - want[j]) <= 1e-6 + 1e-5 * std::abs(want[j]));
  }
}

}  // namespace

// ---------------------------------------------------------------- cross_entropy / nll_loss

TEST_CASE("cross_entropy with class indices: reductions, weights, ignore_index, label smoothing", "[losses][ce]") {
  const std::vector<int64_t> t{2, 0, 4, 1, 3, 0};
  const Vec w{0.5, 2.0, 1.0, 1.5, 0.25};
  for (ScalarType dt : kTested)
    for (ScalarType tdt : {kInt64, kInt32, kUInt8})
      for (Reduction r : kReductions) {
        const Tensor logits = spread({6, 5}, dt, -3, 3), target = make({2, 0, 4, 1, 3, 0}, tdt);
        const Vec x = vals(logits);
        const Tensor y = nnf::cross_entropy(logits, target, {}, -100, r);
        CHECK(y.dtype() == dt);
        check_loss(y, ce_ref(x, 6, 5, 1, t, {}, -100, 0.0, r));
        // Weighted, ignoring class 0, smoothed.
        check_loss(nnf::cross_entropy(logits, target, make(w, dt), 0, r, 0.2), ce_ref(x, 6, 5, 1, t, w, 0, 0.2, r));
        check_loss(nnf::cross_entropy(logits, target, {}, 4, r, 0.3), ce_ref(x, 6, 5, 1, t, {}, 4, 0.3, r));
      }
}

TEST_CASE("cross_entropy takes [C] logits and [N, C, d...] logits", "[losses][ce]") {
  for (ScalarType dt : kTested) {
    const Tensor one = spread({5}, dt, -2, 2);
    const Tensor y1 = nnf::cross_entropy(one, make({3}, kInt64).view(Shape{}));
    CHECK(y1.dim() == 0);
    check_loss(y1, ce_ref(vals(one), 1, 5, 1, {3}, {}, -100, 0, Reduction::None));
    const Tensor sp = spread({2, 3, 2, 2}, dt, -3, 3, 0.5);
    const std::vector<int64_t> t{0, 2, 1, 1, 2, 2, 0, 1};
    const Tensor target = make({0, 2, 1, 1, 2, 2, 0, 1}, kInt64, {2, 2, 2});
    const Tensor y = nnf::cross_entropy(sp, target, make({1, 2, 3}, dt), 1, Reduction::None, 0.1);
    CHECK(y.sizes() == Shape{2, 2, 2});
    check_loss(y, ce_ref(vals(sp), 2, 3, 4, t, {1, 2, 3}, 1, 0.1, Reduction::None));
    check_loss(nnf::cross_entropy(sp, target, make({1, 2, 3}, dt), 1, Reduction::Mean, 0.1),
               ce_ref(vals(sp), 2, 3, 4, t, {1, 2, 3}, 1, 0.1, Reduction::Mean));
  }
}

TEST_CASE("cross_entropy with probability targets (and smoothing, weights)", "[losses][ce]") {
  for (ScalarType dt : kTested)
    for (Reduction r : kReductions) {
      const Tensor logits = spread({3, 4, 2}, dt, -3, 3), probs = spread({3, 4, 2}, dt, 0, 1, 1.3);
      const Vec w{1.0, 0.5, 2.0, 1.5};
      const Tensor y = nnf::cross_entropy(logits, probs, make(w, dt), -100, r, 0.1);
      CHECK(y.dtype() == dt);
      // The mean divides by the number of samples, not the weights.
      check_loss(y, testing::ref::cross_entropy_probs({{3, 4, 2}, vals(logits)}, {{3, 4, 2}, vals(probs)}, w,
                                                      as_reduce(r), 0.1)
                        .v);
    }
}

TEST_CASE("cross_entropy and nll_loss give NaN when every target is ignored (mean)", "[losses][ce]") {
  const Tensor logits = spread({2, 3}, kFloat32, -1, 1), t = make({-100, -100}, kInt64);
  CHECK(std::isnan(nnf::cross_entropy(logits, t).item<double>()));
  CHECK(nnf::cross_entropy(logits, t, {}, -100, Reduction::Sum).item<double>() == 0.0);
  CHECK(std::isnan(nnf::nll_loss(logits, t).item<double>()));
}

TEST_CASE("nll_loss picks -w[t] * input[t] with PyTorch's weighted mean", "[losses][nll]") {
  const std::vector<int64_t> t{1, 3, 3, 0};
  const Vec w{2.0, 0.5, 1.0, 3.0};
  for (ScalarType dt : kTested)
    for (Reduction r : kReductions) {
      const Tensor lp = spread({4, 4}, dt, -3, -0.1);
      const Tensor y = nnf::nll_loss(lp, make({1, 3, 3, 0}, kInt32), make(w, dt), 0, r);
      CHECK(y.dtype() == dt);
      check_loss(y, ce_ref(vals(lp), 4, 4, 1, t, w, 0, 0.0, r, /*already_log=*/true));
    }
}

TEST_CASE("class-index losses validate targets, weights and options", "[losses][ce][errors]") {
  const Tensor x = spread({3, 4}, kFloat32, -1, 1);
  CHECK_THAT(error_of([&] {
               nnf::cross_entropy(x, make({0, 7, 1}, kInt64));
             }),
             Contains("cross_entropy") && Contains("target 7 is out of bounds"));
  CHECK_THAT(error_of([&] {
               nnf::nll_loss(x, make({0, -3, 1}, kInt64));
             }),
             Contains("nll_loss") && Contains("target -3"));
  CHECK(std::isfinite(nnf::nll_loss(x, make({0, -3, 1}, kInt64), {}, -3).item<double>()));
  CHECK_THAT(error_of([&] { nnf::cross_entropy(x, make({0, 1}, kInt64)); }), Contains("[3]") && Contains("[2]"));
  CHECK_THAT(error_of([&] { nnf::cross_entropy(x, make({0, 1, 1}, kBool)); }), Contains("integer"));
  CHECK_THAT(error_of([&] { nnf::nll_loss(x, make({0, 1, 1}, kFloat32)); }), Contains("integer dtype"));
  CHECK_THAT(error_of([&] { nnf::cross_entropy(x, spread({3, 5}, kFloat32, 0, 1)); }), Contains("probability targets"));
  CHECK_THAT(error_of([&] {
               nnf::cross_entropy(x, make({0, 1, 1}, kInt64), ones({5}));
             }),
             Contains("class weight") && Contains("[4]"));
  CHECK_THAT(error_of([&] {
               nnf::cross_entropy(x, make({0, 1, 1}, kInt64), {}, -100, Reduction::Mean, 1.5);
             }),
             Contains("label_smoothing"));
  CHECK_THAT(error_of([&] {
               nnf::cross_entropy(x, make({0, 1, 1}, kInt64), {}, -100, static_cast<Reduction>(4));
             }),
             Contains("reduction"));
  CHECK_THAT(error_of([&] { nnf::cross_entropy(scalar0(1.0), make({0}, kInt64)); }), Contains("0-D"));
  CHECK_THAT(error_of([&] { nnf::cross_entropy(make({1, 2}, kInt64), make({0}, kInt64)); }), Contains("int64"));
}

// ---------------------------------------------------------------- regression losses

TEST_CASE("mse, l1, smooth_l1 and huber losses match the reference for every reduction", "[losses][pair]") {
  for (ScalarType dt : kTested)
    for (Reduction r : kReductions) {
      const Tensor a = spread({3, 4}, dt, -2, 2), b = spread({4}, dt, -2, 2, 0.7);  // broadcast
      const Vec av = vals(a), bv = vals(b);
      Vec mse(12), l1(12), sl1(12), hub(12);
      for (size_t i = 0; i < 12; ++i) {
        const double d = std::abs(av[i] - bv[i % 4]);
        mse[i] = d * d;
        l1[i] = d;
        sl1[i] = d < 0.8 ? 0.5 * d * d / 0.8 : d - 0.4;
        hub[i] = d < 1.2 ? 0.5 * d * d : 1.2 * (d - 0.6);
      }
      check_loss(nnf::mse_loss(a, b, r), reduce_ref(mse, r, 12));
      check_loss(nnf::l1_loss(a, b, r), reduce_ref(l1, r, 12));
      check_loss(nnf::smooth_l1_loss(a, b, r, 0.8), reduce_ref(sl1, r, 12));
      check_loss(nnf::huber_loss(a, b, r, 1.2), reduce_ref(hub, r, 12));
      check_loss(nnf::smooth_l1_loss(a, b, r, 0.0), reduce_ref(l1, r, 12));  // beta 0: l1
      CHECK(nnf::huber_loss(a, b, r).dtype() == dt);
    }
  CHECK(nnf::mse_loss(ones({2}, of(kFloat16)), ones({2}, of(kFloat32))).dtype() == kFloat32);
  CHECK(std::isnan(nnf::mse_loss(zeros({0}), zeros({0})).item<double>()));
}

TEST_CASE("regression losses reject bad inputs and options", "[losses][pair][errors]") {
  const Tensor a = ones({2, 3});
  CHECK_THAT(error_of([&] { nnf::mse_loss(a, ones({2, 4})); }), Contains("mse_loss"));
  CHECK_THAT(error_of([&] {
               nnf::l1_loss(make({1, 2}, kInt64), make({1, 2}, kInt64));
             }),
             Contains("l1_loss") && Contains("int64"));
  CHECK_THAT(error_of([&] { nnf::smooth_l1_loss(a, a, Reduction::Mean, -1.0); }), Contains("beta"));
  CHECK_THAT(error_of([&] { nnf::huber_loss(a, a, Reduction::Mean, 0.0); }), Contains("delta"));
  CHECK_THAT(error_of([&] { nnf::mse_loss(a, a, static_cast<Reduction>(-1)); }), Contains("reduction"));
}

// ---------------------------------------------------------------- binary cross entropy and kl_div

TEST_CASE("binary_cross_entropy matches the reference, clamping the logs at -100", "[losses][bce]") {
  for (ScalarType dt : kTested)
    for (Reduction r : kReductions) {
      const Tensor p = spread({3, 4}, dt, 0.02, 0.98), y = spread({3, 4}, dt, 0, 1, 2.1),
                   w = spread({4}, dt, 0.5, 2, 0.3);
      const Vec pv = vals(p), yv = vals(y), wv = vals(w);
      Vec per(12);
      for (size_t i = 0; i < 12; ++i)
        per[i] = -wv[i % 4] * (yv[i] * std::log(pv[i]) + (1 - yv[i]) * std::log1p(-pv[i]));
      const Tensor loss = nnf::binary_cross_entropy(p, y, w, r);
      CHECK(loss.dtype() == dt);
      check_loss(loss, reduce_ref(per, r, 12));
    }
  const Tensor edge =
      nnf::binary_cross_entropy(make({0, 1, 0, 1}, kFloat32), make({1, 0, 0, 1}, kFloat32), {}, Reduction::None);
  CHECK(vals(edge) == Vec{100, 100, 0, 0});
}

TEST_CASE("binary_cross_entropy_with_logits is stable and applies weight and pos_weight", "[losses][bce]") {
  for (ScalarType dt : kTested)
    for (Reduction r : kReductions) {
      const Tensor x = spread({3, 4}, dt, -6, 6), y = spread({3, 4}, dt, 0, 1, 2.1);
      const Tensor w = spread({4}, dt, 0.5, 2, 0.3), pw = spread({4}, dt, 0.5, 3, 1.7);
      const Vec xv = vals(x), yv = vals(y), wv = vals(w), pwv = vals(pw);
      Vec per(12);
      for (size_t i = 0; i < 12; ++i) {
        const double log_sig = -(std::max(-xv[i], 0.0) + std::log1p(std::exp(-std::abs(xv[i]))));  // log sigmoid(x)
        const double log_1m = -(std::max(xv[i], 0.0) + std::log1p(std::exp(-std::abs(xv[i]))));  // log(1 - sigmoid(x))
        per[i] = -wv[i % 4] * (pwv[i % 4] * yv[i] * log_sig + (1 - yv[i]) * log_1m);
      }
      const Tensor loss = nnf::binary_cross_entropy_with_logits(x, y, w, pw, r);
      CHECK(loss.dtype() == dt);
      check_loss(loss, reduce_ref(per, r, 12));
    }
  const Tensor big = nnf::binary_cross_entropy_with_logits(make({1000, -1000, 30}, kFloat32), make({0, 1, 1}, kFloat32),
                                                           {}, {}, Reduction::None);
  check_loss(big, {1000, 1000, std::log1p(std::exp(-30.0))}, 1.0);
}

TEST_CASE("binary cross entropies reject bad inputs", "[losses][bce][errors]") {
  const Tensor p = make({0.2, 0.7}, kFloat32);
  CHECK_THAT(error_of([&] {
               nnf::binary_cross_entropy(make({0.2, 1.5}, kFloat32), p);
             }),
             Contains("binary_cross_entropy") && Contains("between 0 and 1"));
  CHECK_THAT(error_of([&] { nnf::binary_cross_entropy(make({0.2, kNan}, kFloat32), p); }), Contains("between 0 and 1"));
  CHECK_THAT(error_of([&] { nnf::binary_cross_entropy(p, make({1}, kFloat32)); }), Contains("target size"));
  CHECK_THAT(error_of([&] { nnf::binary_cross_entropy(p, p, ones({3})); }), Contains("weight"));
  CHECK_THAT(error_of([&] { nnf::binary_cross_entropy_with_logits(p, ones({2, 2})); }), Contains("target size"));
  CHECK_THAT(error_of([&] { nnf::binary_cross_entropy_with_logits(p, p, {}, ones({2}, of(kInt32))); }),
             Contains("pos_weight"));
  CHECK_THAT(error_of([&] { nnf::binary_cross_entropy_with_logits(p, make({1, 0}, kInt64)); }), Contains("int64"));
}

TEST_CASE("kl_div matches the reference in both target modes", "[losses][kl]") {
  for (ScalarType dt : kTested)
    for (Reduction r : kReductions) {
      const Tensor in = spread({3, 4}, dt, -3, -0.1), t = spread({3, 4}, dt, 0, 1, 0.8),
                   lt = spread({3, 4}, dt, -3, 0, 0.8);
      const Vec x = vals(in), tv = vals(t), ltv = vals(lt);
      Vec plain(12), logt(12);
      for (size_t i = 0; i < 12; ++i) {
        plain[i] = tv[i] == 0 ? 0.0 : tv[i] * (std::log(tv[i]) - x[i]);
        logt[i] = std::exp(ltv[i]) * (ltv[i] - x[i]);
      }
      check_loss(nnf::kl_div(in, t, r), reduce_ref(plain, r, 12));
      check_loss(nnf::kl_div(in, lt, r, true), reduce_ref(logt, r, 12));
    }
  CHECK(vals(nnf::kl_div(make({-1, -2}, kFloat32), make({0, 0}, kFloat32), Reduction::None)) == Vec{0, 0});
  CHECK_THAT(error_of([] { nnf::kl_div(make({1}, kInt32), make({1}, kInt32)); }), Contains("kl_div"));
}

// ---------------------------------------------------------------- gradients

TEST_CASE("cross_entropy's gradient is (softmax - onehot) * w[t] / sum(w[t])", "[losses][grad]") {
  Tensor logits = spread({3, 4}, kFloat64, -2, 2);
  logits.set_requires_grad(true);
  const Vec w{1.0, 2.0, 0.5, 1.5};
  const std::vector<int64_t> t{3, 0, 2};
  const Tensor loss = nnf::cross_entropy(logits, make({3, 0, 2}, kInt64), make(w, kFloat64));
  const Vec g = vals(autograd::grad({loss}, {logits})[0]), x = vals(logits.detach());
  const double den = w[3] + w[0] + w[2];
  for (int n = 0; n < 3; ++n) {
    double z = 0;
    for (int c = 0; c < 4; ++c) z += std::exp(x[n * 4 + c]);
    for (int c = 0; c < 4; ++c) {
      const double want = (std::exp(x[n * 4 + c]) / z - (c == t[n] ? 1.0 : 0.0)) * w[t[n]] / den;
      CHECK(g[n * 4 + c] == Approx(want).epsilon(1e-12).margin(1e-14));
    }
  }
}

TEST_CASE("bce_with_logits and mse gradients have their closed forms", "[losses][grad]") {
  Tensor x = spread({2, 3}, kFloat64, -30, 30);
  x.set_requires_grad(true);
  const Tensor y = spread({2, 3}, kFloat64, 0, 1, 0.5);
  const Vec g = vals(autograd::grad({nnf::binary_cross_entropy_with_logits(x, y, {}, {}, Reduction::Sum)}, {x})[0]);
  const Vec xv = vals(x.detach()), yv = vals(y);
  for (size_t i = 0; i < 6; ++i) CHECK(g[i] == Approx(1 / (1 + std::exp(-xv[i])) - yv[i]).margin(1e-12));
  const Vec gm = vals(autograd::grad({nnf::mse_loss(x, y)}, {x})[0]);
  for (size_t i = 0; i < 6; ++i) CHECK(gm[i] == Approx(2 * (xv[i] - yv[i]) / 6).epsilon(1e-12));
}

TEST_CASE("every loss's gradient matches finite differences in float64", "[losses][grad]") {
  const Tensor logits = spread({3, 4, 2}, kFloat64, -2, 2), probs = spread({3, 4, 2}, kFloat64, 0.05, 0.95, 1.1);
  const Tensor targets = make({0, 3, 1, 1, 2, -1}, kInt64, {3, 2}), w = spread({4}, kFloat64, 0.5, 2, 0.2);
  for (Reduction r : kReductions) {
    check_grad_of([&](const Tensor& x) { return nnf::cross_entropy(x, targets, w, -1, r, 0.15); }, logits);
    check_grad_of([&](const Tensor& wt) { return nnf::cross_entropy(logits, targets, wt, -1, r, 0.15); }, w);
    check_grad_of([&](const Tensor& x) { return nnf::cross_entropy(x, probs, w, -1, r, 0.1); }, logits);
    check_grad_of([&](const Tensor& p) { return nnf::cross_entropy(logits, p, {}, -1, r); }, probs);
    check_grad_of([&](const Tensor& x) { return nnf::nll_loss(x, targets, w, -1, r); }, logits);
    check_grad_of([&](const Tensor& x) { return nnf::mse_loss(x, probs, r); }, logits);
    check_grad_of([&](const Tensor& x) { return nnf::l1_loss(x, probs, r); }, logits);
    check_grad_of([&](const Tensor& x) { return nnf::smooth_l1_loss(x, probs, r, 0.6); }, logits);
    check_grad_of([&](const Tensor& x) { return nnf::huber_loss(probs, x, r, 0.7); }, logits);
    check_grad_of(
        [&](const Tensor& p) {
          return nnf::binary_cross_entropy(p, spread({3, 4, 2}, kFloat64, 0, 1), {}, r);
        },
        probs);
    check_grad_of([&](const Tensor& x) { return nnf::binary_cross_entropy_with_logits(x, probs, probs, {}, r); },
                  logits);
    check_grad_of([&](const Tensor& pw) { return nnf::binary_cross_entropy_with_logits(logits, probs, {}, pw, r); },
                  spread({2}, kFloat64, 0.5, 2));
    check_grad_of([&](const Tensor& x) { return nnf::kl_div(x, probs, r); }, logits);
    check_grad_of([&](const Tensor& t) { return nnf::kl_div(logits, t, r, true); }, logits);
  }
}

TEST_CASE("the margin and Poisson losses give PyTorch's documented values", "[losses][margin]") {
  const Tensor scores = make({0.1, 0.2, 0.4, 0.8}, kFloat64, {1, 4});
  // torch.nn.MultiLabelMarginLoss's example: targets 3 and 0 (the -1 ends the list).
  CHECK(nnf::multilabel_margin_loss(scores, make({3, 0, -1, 1}, kInt64, {1, 4})).item<double>() == Approx(0.85));
  // torch.nn.MultiMarginLoss's example: ((1 - 0.7) + (1 - 0.6) + (1 - 0.4)) / 4.
  CHECK(nnf::multi_margin_loss(scores, make({3}, kInt64, {1})).item<double>() == Approx(0.325));
  CHECK(nnf::multi_margin_loss(scores, make({3}, kInt64, {1}), 2).item<double>() == Approx((0.09 + 0.16 + 0.36) / 4));
  CHECK(nnf::poisson_nll_loss(make({0.0}, kFloat64, {1}), make({1.0}, kFloat64, {1})).item<double>() == Approx(1.0));
  CHECK(nnf::soft_margin_loss(make({0.0}, kFloat64, {1}), make({1.0}, kFloat64, {1})).item<double>() ==
        Approx(std::log(2.0)));
  const Tensor hinge = nnf::hinge_embedding_loss(make({0.3, 0.2}, kFloat64, {2}), make({1, -1}, kInt64, {2}), 1.0,
                                                 Reduction::None);
  CHECK(vals(hinge) == Vec{0.3, 0.8});
  CHECK(nnf::margin_ranking_loss(make({1.0}, kFloat64, {1}), make({2.0}, kFloat64, {1}), make({1.0}, kFloat64, {1}))
            .item<double>() == Approx(1.0));
  // Equal rows: 1 - cos = 0 for target 1; max(0, cos - 0.5) = 0.5 for target -1.
  const Tensor rows = make({1, 2, 3, -1, 0, 2}, kFloat64, {2, 3});
  const Tensor cos = nnf::cosine_embedding_loss(rows, rows, make({1, -1}, kInt64, {2}), 0.5, Reduction::None);
  CHECK(vals(cos)[0] == Approx(0.0).margin(1e-12));
  CHECK(vals(cos)[1] == Approx(0.5));
  // d(a, p) = 1, d(a, n) = 3 (eps 0): max(0, 1 - 3 + 2.5); with swap, d(p, n) = 2 is used.
  const Tensor a = make({0, 0}, kFloat64, {1, 2}), p = make({1, 0}, kFloat64, {1, 2}), n = make({3, 0}, kFloat64, {1, 2});
  CHECK(nnf::triplet_margin_loss(a, p, n, 2.5, 2.0, 0.0).item<double>() == Approx(0.5));
  CHECK(nnf::triplet_margin_loss(a, p, n, 2.5, 2.0, 0.0, true).item<double>() == Approx(1.5));
}

TEST_CASE("the margin and Poisson losses refuse what PyTorch refuses, naming the op and shapes", "[losses][errors]") {
  const Tensor x = ones({2, 4});
  const Tensor labels = make({0, 1}, kInt64, {2});
  CHECK_THAT(error_of([&] { nnf::multilabel_margin_loss(x, labels); }),
             Contains("multilabel_margin_loss") && Contains("[2, 4]") && Contains("[2]"));
  CHECK_THAT(error_of([&] { nnf::multilabel_margin_loss(x, make({0, 4, -1, 0, 1, 2, 3, -1}, kInt64, {2, 4})); }),
             Contains("out of bounds"));
  CHECK_THAT(error_of([&] { nnf::multilabel_margin_loss(x, ones({2, 4})); }), Contains("integer"));
  CHECK_THAT(error_of([&] { nnf::multi_margin_loss(x, labels, 3); }), Contains("p == 1 and p == 2"));
  CHECK_THAT(error_of([&] { nnf::multi_margin_loss(x, make({0, 1, 2}, kInt64, {3})); }),
             Contains("multi_margin_loss") && Contains("[3]"));
  CHECK_THAT(error_of([&] { nnf::multi_margin_loss(x, make({0, 4}, kInt64, {2})); }), Contains("out of bounds"));
  CHECK_THAT(error_of([&] { nnf::multi_margin_loss(x, labels, 1, 1.0, ones({3})); }),
             Contains("weight") && Contains("[3]"));
  CHECK_THAT(error_of([&] { nnf::multi_margin_loss(ones({2, 2, 2}), labels); }), Contains("[2, 2, 2]"));
  CHECK_THAT(error_of([&] { nnf::cosine_embedding_loss(x, x, ones({2, 1})); }),
             Contains("cosine_embedding_loss") && Contains("[2, 1]"));
  CHECK_THAT(error_of([&] { nnf::cosine_embedding_loss(ones({4}), ones({4}), ones({2})); }), Contains("[4]"));
  CHECK_THAT(error_of([&] { nnf::margin_ranking_loss(x, x, ones({2})); }),
             Contains("margin_ranking_loss") && Contains("[2]"));
  CHECK_THAT(error_of([&] { nnf::triplet_margin_loss(x, x, ones({4})); }),
             Contains("triplet_margin_loss") && Contains("[4]"));
  CHECK_THAT(error_of([&] { nnf::triplet_margin_loss(x, x, x, 1.0, -1.0); }), Contains("non-negative"));
  CHECK_THAT(error_of([&] { nnf::hinge_embedding_loss(ones({2}, {.dtype = kInt64}), ones({2})); }),
             Contains("hinge_embedding_loss") && Contains("floating"));
  CHECK_THAT(error_of([&] { nnf::poisson_nll_loss(x, ones({3})); }), Contains("poisson_nll_loss") && Contains("[3]"));
  CHECK_THAT(error_of([&] { nnf::soft_margin_loss(x, x, static_cast<Reduction>(7)); }), Contains("reduction"));
}
