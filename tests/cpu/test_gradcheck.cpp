// Finite-difference gradient checks in float64 for every differentiable op,
// driven by the op-case table: analytic gradients from autograd::grad against
// central differences of sum(op(inputs) * w) for a fixed random w. Cases whose result
// is not float64 are not compared and not counted; casts have their own check.
#include <cmath>
#include <sstream>

#include <catch2/catch.hpp>

#include <mixt/runtime/autograd/function.h>

#include "op_case_builder.h"

using namespace mixt;
using namespace mixt::testing;

namespace {

// sum(run(inputs) * w) in float64, without recording.
double objective(const OpCase& c, const std::vector<Tensor>& inputs, const Tensor& w) {
  autograd::NoGradGuard no_grad;
  return sum(mul(c.run(inputs, kFloat64, Device::cpu()).to(kFloat64), w)).item<double>();
}

// The outcome of one case: whether gradients were compared at all, and the first
// disagreement ("" when none).
struct Outcome {
  bool compared = false;
  std::string failure;
};

// Compares the analytic and numeric gradients of `c` (when its result is float64).
Outcome check_case(const OpCase& c) {
  CaseInputs ci = c.make(kFloat64);
  std::vector<Tensor> leaves;
  std::vector<size_t> diff;
  for (size_t i = 0; i < ci.in.size(); ++i) {
    Tensor t = ci.in[i].clone();
    if (((ci.data >> i) & 1u) && is_floating(t.dtype())) {
      t.set_requires_grad(true);
      diff.push_back(i);
    }
    leaves.push_back(t);
  }
  if (diff.empty()) return {};
  const Tensor out = c.run(leaves, kFloat64, Device::cpu());
  // Differences are only meaningful on float64 results (not e.g. to(float32) or indices:
  // the casts have their own test below).
  if (out.dtype() != kFloat64) return {};
  if (!out.requires_grad()) return {true, c.label + ": the result does not require grad"};
  const Tensor w = data(kFloat64, out.sizes(), -1, 1, 99);
  const Tensor loss = sum(mul(out, w));
  std::vector<Tensor> wrt;
  for (size_t i : diff) wrt.push_back(leaves[i]);
  const std::vector<Tensor> analytic = autograd::grad({loss}, wrt, {}, false, /*allow_unused=*/true);

  const double eps = 1e-6;
  for (size_t k = 0; k < diff.size(); ++k) {
    const size_t i = diff[k];
    const std::vector<double> base = leaves[i].to_vector<double>();
    const std::vector<double> got =
        analytic[k].defined() ? analytic[k].to_vector<double>() : std::vector<double>(base.size(), 0.0);
    for (size_t j = 0; j < base.size(); ++j) {
      std::vector<Tensor> probe = leaves;
      std::vector<double> v = base;
      v[j] = base[j] + eps;
      probe[i] = from_vector(v, leaves[i].sizes());
      const double up = objective(c, probe, w);
      v[j] = base[j] - eps;
      probe[i] = from_vector(v, leaves[i].sizes());
      const double down = objective(c, probe, w);
      const double numeric = (up - down) / (2 * eps);
      if (std::abs(got[j] - numeric) > 1e-6 + 1e-4 * std::abs(numeric)) {
        std::ostringstream why;
        why << c.label << ": d/d input " << i << "[" << j << "] analytic " << got[j] << ", numeric " << numeric;
        return {true, why.str()};
      }
    }
  }
  return {true, ""};
}

}  // namespace

TEST_CASE("every differentiable op's gradient matches finite differences in float64", "[gradcheck]") {
  std::vector<std::string> failures, not_compared;
  int checked = 0;
  for (const OpCase& c : op_cases()) {
    if (!op_entry(c.op).has(op_flags::Diff) || c.check || !dtypes::contains(c.cpu_dtypes, kFloat64)) continue;
    try {
      const Outcome r = check_case(c);
      if (!r.failure.empty()) failures.push_back(r.failure);
      // Only cases whose gradients were compared count.
      if (r.compared) ++checked;
      else not_compared.push_back(c.label);
    } catch (const std::exception& e) {
      failures.push_back(c.label + ": raised " + e.what());
    }
  }
  std::string all, skipped;
  for (const auto& f : failures) all += "\n  " + f;
  for (const auto& n : not_compared) skipped += " " + n;
  INFO(checked << " cases checked (not compared, result not float64:" << skipped << "); failures:" << all);
  CHECK(failures.empty());
  CHECK(checked > 100);
}

TEST_CASE("every differentiable op has a backward formula or is composite", "[gradcheck]") {
  std::vector<std::string> missing;
  for (int i = 0; i < kNumBuiltinOps; ++i) {
    const OpEntry& e = op_entry(static_cast<OpId>(i));
    if (!e.has(op_flags::Diff) || e.has(op_flags::Composite)) continue;
    if (!autograd::derivative_for(static_cast<OpId>(i))) missing.push_back(std::string(e.schema.name));
  }
  std::string all;
  for (const auto& m : missing) all += " " + m;
  INFO("no backward formula:" << all);
  CHECK(missing.empty());
}

TEST_CASE("casts pass gradients back in the source dtype: finite differences through to()", "[gradcheck]") {
  // Inputs are multiples of 1/16 in [-2, 2] and the step is 1/4, so x and x +- step are
  // exact in every dtype here and the central difference of sum(w * to(x)) is w itself.
  // The analytic gradient is w rounded to the target dtype, then to the source dtype.
  const double step = 0.25;
  const struct {
    ScalarType from, to;
    double rel;  // relative rounding of w through the narrower dtype
  } casts[] = {{kFloat64, kFloat32, 0x1p-24}, {kFloat32, kFloat64, 0x1p-24}, {kFloat64, kBFloat16, 0x1p-8},
               {kBFloat16, kFloat32, 0x1p-8}, {kFloat32, kFloat16, 0x1p-11}};
  for (const auto& k : casts) {
    INFO(dtype_name(k.from) << " -> " << dtype_name(k.to));
    std::vector<double> v;
    for (int i = 0; i < 12; ++i) v.push_back((i * 7 % 65 - 32) / 16.0);
    const Tensor w = data(kFloat64, {12}, -1, 1, 7);
    Tensor x = from_vector(v).to(k.from).set_requires_grad(true);
    const Tensor y = x.to(k.to);
    REQUIRE(y.dtype() == k.to);
    const Tensor g = autograd::grad({sum(mul(y.to(kFloat64), w))}, {x})[0];
    CHECK(g.dtype() == k.from);
    const auto got = g.to_vector<double>(), wv = w.to_vector<double>();
    auto objective = [&](const std::vector<double>& at) {
      return sum(mul(from_vector(at).to(k.from).to(k.to).to(kFloat64), w)).item<double>();
    };
    for (size_t j = 0; j < v.size(); ++j) {
      std::vector<double> up = v, down = v;
      up[j] += step;
      down[j] -= step;
      const double numeric = (objective(up) - objective(down)) / (2 * step);
      CHECK(numeric == Approx(wv[j]).margin(1e-13));  // the sums cancel to w_j up to their rounding
      CHECK(std::abs(got[j] - wv[j]) <= k.rel * std::abs(wv[j]));
    }
  }
}
