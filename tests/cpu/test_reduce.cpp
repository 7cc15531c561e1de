// Reductions and scans on the CPU against references computed here in double:
// dims combinations, keepdim, negative dims, non-contiguous inputs, dtypes, NaN,
// empty and zero-size cases, errors, and tensors big enough to use every thread.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include <mixt/mixt.h>

#include "reference.h"
#include "test_util.h"
#include "ulps.h"

using namespace mixt;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

using testing::ref::numel_of;
using testing::ref::ravel;
using testing::ref::Ref;
using testing::ref::unravel;
using testing::ref::wrap_dims;

// Deterministic quarter-integer values in [-5, 5] (exact in float16 and bfloat16).
std::vector<double> quarters(int64_t n, int64_t seed = 1) {
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<double>((i * 7919 + seed * 104729) % 41 - 20) / 4.0;
  return v;
}

// A 0-dim tensor (options set field by field: TensorOptions has no default member initializer for device).
Tensor scalar_of(double v, ScalarType dtype) {
  TensorOptions o;
  o.dtype = dtype;
  return scalar_tensor(v, o);
}

Ref make_ref(const std::vector<int64_t>& sizes, std::vector<double> v) { return {sizes, std::move(v)}; }

// A float64 tensor holding ref's values.
Tensor tensor_of(const Ref& r, ScalarType dtype = kFloat64) {
  Tensor t = from_vector(r.v, Shape(r.sizes));
  return dtype == kFloat64 ? t : t.to(dtype);
}

// The shared references (tests/support/reference.h) under this file's names.
Ref permute_ref(const Ref& r, const std::vector<int64_t>& perm) { return testing::ref::permute(r, perm); }
Ref slice_ref(const Ref& r, int dim, int64_t start, int64_t end, int64_t step) {
  return testing::ref::slice(r, dim, start, end, step);
}
std::vector<int64_t> ref_out_sizes(const Ref& r, const std::vector<int64_t>& dims, bool keepdim) {
  return testing::ref::reduced_sizes(r.sizes, dims, keepdim);
}
template <class Acc>
std::vector<Acc> ref_reduce(const Ref& r, const std::vector<int64_t>& dims, Acc init,
                            const std::function<void(Acc&, double, int64_t)>& fold) {
  return testing::ref::reduce<Acc>(r, dims, init, fold);
}
std::vector<double> ref_sum(const Ref& r, const std::vector<int64_t>& dims) { return testing::ref::sum(r, dims).v; }

// Compares values with a relative and absolute tolerance; NaN matches NaN, inf matches inf.
// One assertion per tensor, naming the first mismatch.
void check_values(const Tensor& got, const std::vector<double>& expect, double rtol = 1e-12, double atol = 1e-12) {
  const auto g = got.to_vector<double>();
  REQUIRE(g.size() == expect.size());
  int64_t bad = -1;
  for (size_t i = 0; i < g.size() && bad < 0; ++i) {
    const double e = expect[i];
    const bool ok = std::isnan(e)   ? std::isnan(g[i])
                    : std::isinf(e) ? g[i] == e
                                    : std::abs(g[i] - e) <= atol + rtol * std::abs(e);
    if (!ok) bad = static_cast<int64_t>(i);
  }
  INFO("first mismatch at element " << bad << ": got " << (bad >= 0 ? g[bad] : 0.0) << ", expected "
                                     << (bad >= 0 ? expect[bad] : 0.0));
  CHECK(bad == -1);
}

// The value `v` as stored in `dtype` when a kernel rounds a double: through float32 for the narrow
// floats (Note [Narrow float conversions]), by the formats' definitions (tests/support/ulps.h).
double round_to(ScalarType dtype, double v) {
  return dtype == kFloat64 ? v : testing::round_to(dtype, testing::round_to(kFloat32, v));
}

std::vector<double> rounded(ScalarType dtype, std::vector<double> v) {
  for (double& x : v) x = round_to(dtype, x);
  return v;
}

const std::vector<std::vector<int64_t>> kDimSets = {{}, {0}, {1}, {2}, {-1}, {0, 2}, {-3, -1}, {2, 0, 1}, {1, 2}};

}  // namespace

TEST_CASE("sum, mean, prod, amax, amin over dims combinations", "[reduce]") {
  const Ref r = make_ref({3, 4, 5}, quarters(60));
  const Tensor t = tensor_of(r);
  for (const auto& dims : kDimSets) {
    for (bool keepdim : {false, true}) {
      INFO("dims " << Shape(dims).str() << " keepdim " << keepdim);
      const Shape out_sizes(ref_out_sizes(r, dims, keepdim));
      const auto n = static_cast<double>(r.v.size()) / static_cast<double>(numel_of(ref_out_sizes(r, dims, false)));
      Tensor s = sum(t, Shape(dims), keepdim);
      CHECK(s.sizes() == out_sizes);
      CHECK(s.dtype() == kFloat64);
      check_values(s, ref_sum(r, dims));
      std::vector<double> m = ref_sum(r, dims);
      for (double& x : m) x /= n;
      check_values(mean(t, Shape(dims), keepdim), m);
      check_values(prod(t, Shape(dims), keepdim),
                   ref_reduce<double>(r, dims, 1.0, [](double& a, double x, int64_t) { a *= x; }), 1e-12, 0);
      check_values(amax(t, Shape(dims), keepdim),
                   ref_reduce<double>(r, dims, -kInf, [](double& a, double x, int64_t) { a = std::max(a, x); }));
      check_values(amin(t, Shape(dims), keepdim),
                   ref_reduce<double>(r, dims, kInf, [](double& a, double x, int64_t) { a = std::min(a, x); }));
      CHECK(amax(t, Shape(dims), keepdim).sizes() == out_sizes);
    }
  }
}

TEST_CASE("reductions of non-contiguous inputs", "[reduce]") {
  const Ref base = make_ref({4, 5, 6}, quarters(120, 3));
  const Tensor t = tensor_of(base);
  SECTION("permuted") {
    const Tensor p = t.permute({2, 0, 1});
    const Ref pr = permute_ref(base, {2, 0, 1});
    REQUIRE_FALSE(p.is_contiguous());
    for (const auto& dims : kDimSets) {
      INFO("dims " << Shape(dims).str());
      check_values(sum(p, Shape(dims)), ref_sum(pr, dims));
      check_values(amax(p, Shape(dims), true),
                   ref_reduce<double>(pr, dims, -kInf, [](double& a, double x, int64_t) { a = std::max(a, x); }));
    }
  }
  SECTION("sliced with a step") {
    const Tensor s = t.slice(2, 1, 6, 2).slice(0, 1, 4, 1);
    const Ref sr = slice_ref(slice_ref(base, 2, 1, 6, 2), 0, 1, 4, 1);
    REQUIRE(s.sizes() == Shape(sr.sizes));
    for (const auto& dims : kDimSets) {
      INFO("dims " << Shape(dims).str());
      check_values(sum(s, Shape(dims), true), ref_sum(sr, dims));
      check_values(prod(s, Shape(dims)),
                   ref_reduce<double>(sr, dims, 1.0, [](double& a, double x, int64_t) { a *= x; }), 1e-12, 0);
    }
  }
  SECTION("expanded (stride 0)") {
    const Tensor row = from_vector(std::vector<double>{1.5, -2, 4});
    const Tensor e = row.expand({5, 3});
    check_values(sum(e, {0}), {7.5, -10, 20});
    check_values(sum(e, {1}), std::vector<double>(5, 3.5));
    check_values(sum(e), {17.5});
  }
  SECTION("0-dim tensors") {
    const Tensor z = scalar_of(2.5, kFloat64);
    check_values(sum(z), {2.5});
    check_values(sum(z, {0}), {2.5});
    check_values(sum(z, {-1}, true), {2.5});
    CHECK(sum(z, {0}, true).dim() == 0);
    check_values(amax(z), {2.5});
    CHECK_THROWS_AS(sum(z, {1}), Error);
  }
}

TEST_CASE("reductions across dtypes", "[reduce]") {
  const Ref r = make_ref({6, 7}, quarters(42, 5));
  for (ScalarType dt : {kFloat32, kFloat16, kBFloat16, kFloat8_e4m3fn, kFloat8_e5m2}) {
    INFO(dtype_name(dt));
    const Tensor t = tensor_of(r, dt);
    const Ref stored{r.sizes, t.to_vector<double>()};  // the inputs as the dtype holds them
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{}, {0}, {-1}}) {
      Tensor s = sum(t, Shape(dims));
      CHECK(s.dtype() == dt);
      check_values(s, rounded(dt, ref_sum(stored, dims)), 0, 0);
      std::vector<double> m = ref_sum(stored, dims);
      const double n = dims.empty() ? 42 : dims[0] == 0 ? 6 : 7;
      for (double& x : m) x /= n;
      check_values(mean(t, Shape(dims)), rounded(dt, m), 0, 0);
      check_values(amax(t, Shape(dims)),
                   ref_reduce<double>(stored, dims, -kInf, [](double& a, double x, int64_t) { a = std::max(a, x); }),
                   0, 0);
      CHECK(amin(t, Shape(dims)).dtype() == dt);
    }
    // Accumulation is wider than the dtype: 2048 + 1 + 1 ... stays exact before the final rounding.
    std::vector<double> v(65, 1.0);
    v[0] = 2048;
    check_values(sum(from_vector(v).to(dt)), {round_to(dt, round_to(dt, 2048) + 64)}, 0, 0);
  }
  SECTION("integers and bool sum to int64") {
    const Tensor i = tensor_of(make_ref({2, 3}, {1, -2, 3, 40, 5, -6}), kInt32);
    Tensor s = sum(i, {1});
    CHECK(s.dtype() == kInt64);
    CHECK(s.to_vector<int64_t>() == std::vector<int64_t>{2, 39});
    CHECK(prod(i).dtype() == kInt64);
    CHECK(prod(i).item<int64_t>() == 1 * -2 * 3 * 40 * 5 * -6);
    CHECK(amax(i, {0}).dtype() == kInt32);
    CHECK(amax(i, {0}).to_vector<int32_t>() == std::vector<int32_t>{40, 5, 3});
    CHECK(amin(i).item<int64_t>() == -6);
    CHECK(sum(i, {}, false, kInt32).dtype() == kInt32);
    CHECK(sum(i, {}, false, kInt32).item<int64_t>() == 41);
    Tensor sd = sum(i, {0}, false, kFloat64);
    CHECK(sd.dtype() == kFloat64);
    check_values(sd, {41, 3, -3});
    CHECK(mean(i, {}, false, kFloat32).dtype() == kFloat32);
    check_values(mean(i, {}, false, kFloat32), {41.0 / 6}, 1e-6);

    const Tensor b = from_vector(std::vector<bool>{true, false, true, true, false, true}, {2, 3});
    CHECK(sum(b).dtype() == kInt64);
    CHECK(sum(b).item<int64_t>() == 4);
    CHECK(sum(b, {0}).to_vector<int64_t>() == std::vector<int64_t>{2, 0, 2});
    CHECK(prod(b, {0}).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 1});
    CHECK(amax(b, {1}).dtype() == kBool);
    CHECK(amin(b, {1}).to_vector<bool>() == std::vector<bool>{false, false});
    // Integer sums wrap like int64 arithmetic.
    const Tensor big = from_vector(std::vector<int64_t>{std::numeric_limits<int64_t>::max(), 1});
    CHECK(sum(big).item<int64_t>() == std::numeric_limits<int64_t>::min());
  }
  SECTION("float dtype= converts the input first") {
    const Tensor f = from_vector(std::vector<float>{1.5f, 2.25f, -1.0f});
    Tensor s = sum(f, {}, false, kFloat64);
    CHECK(s.dtype() == kFloat64);
    check_values(s, {2.75});
    CHECK(sum(f, {}, false, kInt32).item<int64_t>() == 2);  // 1 + 2 - 1 after truncation
  }
}

TEST_CASE("NaN propagates through max-like reductions", "[reduce]") {
  const Tensor t = from_vector(std::vector<double>{1, kNaN, 3, 9, 2, kNaN, 4, 0, 7, 8, 9, 1}, {3, 4});
  check_values(amax(t, {1}), {kNaN, kNaN, 9});
  check_values(amin(t, {0}), {1, kNaN, 3, 0});
  check_values(sum(t, {1}), {kNaN, kNaN, 25});
  auto mx = max(t, 1);
  check_values(mx.values, {kNaN, kNaN, 9});
  CHECK(mx.indices.to_vector<int64_t>() == std::vector<int64_t>{1, 1, 2});
  CHECK(argmax(t).item<int64_t>() == 1);
  CHECK(argmin(t, 0).to_vector<int64_t>() == std::vector<int64_t>{0, 0, 0, 1});
  CHECK(std::isnan(max(t).item<double>()));
  const Tensor h = from_vector(std::vector<double>{1, 2, kNaN, kNaN}).to(kFloat16);
  CHECK(argmax(h).item<int64_t>() == 2);
  CHECK(std::isnan(amax(h).item<double>()));
  CHECK(all(from_vector(std::vector<double>{kNaN, 1})).item<bool>());
}

TEST_CASE("max and min with a dim, argmax and argmin", "[reduce]") {
  const Ref r = make_ref({3, 4, 5}, quarters(60, 7));  // 41 distinct values: many ties
  const Tensor t = tensor_of(r, kFloat32);
  for (int64_t dim : {0, 1, 2, -1, -2}) {
    for (bool keepdim : {false, true}) {
      INFO("dim " << dim << " keepdim " << keepdim);
      using P = std::pair<double, int64_t>;
      const auto first_max = [](P& a, double x, int64_t i) {
        if (a.second < 0 || x > a.first) a = {x, i};
      };
      const auto first_min = [](P& a, double x, int64_t i) {
        if (a.second < 0 || x < a.first) a = {x, i};
      };
      const auto emax = ref_reduce<P>(r, {dim}, {0.0, -1}, first_max);
      const auto emin = ref_reduce<P>(r, {dim}, {0.0, -1}, first_min);
      auto mx = max(t, dim, keepdim);
      auto mn = min(t, dim, keepdim);
      const Shape out_sizes(ref_out_sizes(r, {dim}, keepdim));
      CHECK(mx.values.sizes() == out_sizes);
      CHECK(mx.indices.sizes() == out_sizes);
      CHECK(mx.values.dtype() == kFloat32);
      CHECK(mx.indices.dtype() == kInt64);
      std::vector<double> vmax, vmin;
      std::vector<int64_t> imax, imin;
      for (const P& p : emax) vmax.push_back(p.first), imax.push_back(p.second);
      for (const P& p : emin) vmin.push_back(p.first), imin.push_back(p.second);
      check_values(mx.values, vmax);
      check_values(mn.values, vmin);
      CHECK(mx.indices.to_vector<int64_t>() == imax);
      CHECK(mn.indices.to_vector<int64_t>() == imin);
      CHECK(argmax(t, dim, keepdim).to_vector<int64_t>() == imax);
      CHECK(argmin(t, dim, keepdim).to_vector<int64_t>() == imin);
      CHECK(argmax(t, dim, keepdim).sizes() == out_sizes);
    }
  }
  // Flattened: logical order, also for a transposed input.
  const Tensor tt = t.permute({2, 1, 0});
  const Ref tr = permute_ref(make_ref(r.sizes, t.to_vector<double>()), {2, 1, 0});
  int64_t best = 0;
  for (int64_t i = 1; i < static_cast<int64_t>(tr.v.size()); ++i)
    if (tr.v[i] > tr.v[best]) best = i;
  CHECK(argmax(tt).item<int64_t>() == best);
  CHECK(argmax(tt).dim() == 0);
  CHECK(argmax(tt, std::nullopt, true).sizes() == Shape{1, 1, 1});
  CHECK(argmin(scalar_of(3.0, kFloat32)).item<int64_t>() == 0);
  auto ms = max(scalar_of(3.0, kFloat32), 0);
  CHECK(ms.values.item<double>() == 3.0);
  CHECK(ms.indices.item<int64_t>() == 0);
  // Integer and bool inputs.
  const Tensor i = from_vector(std::vector<int32_t>{3, 7, 7, -1, 7, 2}, {2, 3});
  CHECK(max(i, 1).indices.to_vector<int64_t>() == std::vector<int64_t>{1, 1});
  CHECK(max(i, 1).values.to_vector<int32_t>() == std::vector<int32_t>{7, 7});
  CHECK(argmin(i).item<int64_t>() == 3);
  const Tensor b = from_vector(std::vector<bool>{false, true, true, false}, {2, 2});
  CHECK(max(b, 0).indices.to_vector<int64_t>() == std::vector<int64_t>{1, 0});
}

TEST_CASE("var and std", "[reduce]") {
  const Ref r = make_ref({4, 6}, quarters(24, 11));
  const Tensor t = tensor_of(r);
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{}, {0}, {1}, {-1, 0}}) {
    for (double correction : {0.0, 1.0, 2.0}) {
      INFO("dims " << Shape(dims).str() << " correction " << correction);
      const auto s = ref_sum(r, dims);
      const auto outs = ref_out_sizes(r, dims, false);
      const double n = static_cast<double>(r.v.size()) / static_cast<double>(numel_of(outs));
      std::vector<double> mean_v = s;
      for (double& x : mean_v) x /= n;
      // Two-pass reference: squared deviations from each output's mean.
      std::vector<double> ss(mean_v.size(), 0.0);
      {
        const auto red = wrap_dims(dims, 2);
        for (int64_t i = 0; i < 24; ++i) {
          const auto idx = unravel(i, r.sizes);
          std::vector<int64_t> ki, ks;
          for (int d = 0; d < 2; ++d)
            if (std::find(red.begin(), red.end(), d) == red.end()) ki.push_back(idx[d]), ks.push_back(r.sizes[d]);
          const int64_t o = ravel(ki, ks);
          ss[o] += (r.v[i] - mean_v[o]) * (r.v[i] - mean_v[o]);
        }
      }
      std::vector<double> ev, es;
      for (double x : ss) ev.push_back(x / (n - correction)), es.push_back(std::sqrt(x / (n - correction)));
      check_values(var(t, Shape(dims), correction), ev, 1e-12);
      check_values(mixt::std(t, Shape(dims), correction, true), es, 1e-12);
      CHECK(mixt::std(t, Shape(dims), correction, true).sizes() == Shape(ref_out_sizes(r, dims, true)));
    }
  }
  // Too few elements: NaN when every deviation is 0 (0/0), inf otherwise (PyTorch's rule).
  const Tensor one = from_vector(std::vector<double>{3.0});
  CHECK(std::isnan(var(one).item<double>()));
  check_values(var(one, {}, 0.0), {0.0});
  check_values(var(from_vector(std::vector<double>{1, 3}), {}, 2.0), {kInf});
  CHECK(std::isnan(var(from_vector(std::vector<double>{})).item<double>()));
  // Narrow floats compute in double and round once.
  const Tensor h = from_vector(std::vector<double>{1, 2, 3, 4}).to(kBFloat16);
  CHECK(var(h).dtype() == kBFloat16);
  check_values(var(h), {round_to(kBFloat16, 5.0 / 3.0)}, 0, 0);
  check_values(mixt::std(h.to(kFloat8_e4m3fn)), {round_to(kFloat8_e4m3fn, std::sqrt(5.0 / 3.0))}, 0, 0);
  // Large offset: a naive sum-of-squares formula would lose everything.
  const Tensor off = from_vector(std::vector<double>{1e9 + 1, 1e9 + 2, 1e9 + 3});
  check_values(var(off), {1.0}, 1e-9);
}

TEST_CASE("norm for every p", "[reduce]") {
  const Ref r = make_ref({3, 5}, quarters(15, 13));
  const Tensor t = tensor_of(r);
  struct Case {
    double p;
    std::function<void(double&, double, int64_t)> fold;
    std::function<double(double)> finish;
    double init;
  };
  const std::vector<Case> cases = {
      {2.0, [](double& a, double x, int64_t) { a += x * x; }, [](double a) { return std::sqrt(a); }, 0.0},
      {1.0, [](double& a, double x, int64_t) { a += std::abs(x); }, [](double a) { return a; }, 0.0},
      {kInf, [](double& a, double x, int64_t) { a = std::max(a, std::abs(x)); }, [](double a) { return a; }, 0.0},
      {-kInf, [](double& a, double x, int64_t) { a = std::min(a, std::abs(x)); }, [](double a) { return a; }, kInf},
      {0.0, [](double& a, double x, int64_t) { a += x != 0 ? 1 : 0; }, [](double a) { return a; }, 0.0},
      {3.0, [](double& a, double x, int64_t) { a += std::pow(std::abs(x), 3); },
       [](double a) { return std::cbrt(a); }, 0.0},
      {0.5, [](double& a, double x, int64_t) { a += std::sqrt(std::abs(x)); }, [](double a) { return a * a; }, 0.0},
  };
  for (const Case& k : cases) {
    for (const std::vector<int64_t>& dims : {std::vector<int64_t>{}, {0}, {-1}}) {
      INFO("p " << k.p << " dims " << Shape(dims).str());
      auto e = ref_reduce<double>(r, dims, k.init, k.fold);
      for (double& x : e) x = k.finish(x);
      check_values(norm(t, k.p, Shape(dims)), e, 1e-12);
    }
  }
  const Tensor f = from_vector(std::vector<float>{3, -4});
  CHECK(norm(f).dtype() == kFloat32);
  check_values(norm(f), {5.0});
  CHECK(norm(f, 2.0, {}, false, kFloat64).dtype() == kFloat64);
  check_values(norm(f.to(kFloat16), 2.0, {0}, true), {5.0}, 0, 0);
  check_values(norm(from_vector(std::vector<double>{1, kNaN}), kInf), {kNaN});
  check_values(norm(from_vector(std::vector<double>{}), 2.0), {0.0});
  CHECK_THROWS_AS(norm(from_vector(std::vector<double>{}), kInf), Error);
  CHECK_THROWS_AS(norm(from_vector(std::vector<int32_t>{3, 4})), Error);
  CHECK_THROWS_AS(norm(f, 2.0, {}, false, kInt32), Error);
}

TEST_CASE("logsumexp is stable", "[reduce]") {
  const Ref r = make_ref({4, 5}, quarters(20, 17));
  const Tensor t = tensor_of(r);
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{}, {0}, {1}}) {
    auto e = ref_reduce<double>(r, dims, 0.0, [](double& a, double x, int64_t) { a += std::exp(x); });
    for (double& x : e) x = std::log(x);
    check_values(logsumexp(t, Shape(dims)), e, 1e-12);
  }
  check_values(logsumexp(from_vector(std::vector<double>{1000, 1000})), {1000 + std::log(2.0)}, 1e-15);
  check_values(logsumexp(from_vector(std::vector<double>{-1000, -1000, -1000})), {-1000 + std::log(3.0)}, 1e-15);
  check_values(logsumexp(from_vector(std::vector<double>{-kInf, -kInf})), {-kInf});
  check_values(logsumexp(from_vector(std::vector<double>{1, kInf})), {kInf});
  check_values(logsumexp(from_vector(std::vector<double>{1, kNaN})), {kNaN});
  check_values(logsumexp(from_vector(std::vector<double>{})), {-kInf});
  const Tensor i = from_vector(std::vector<int32_t>{0, 0}, {1, 2});
  CHECK(logsumexp(i, {1}).dtype() == kFloat32);
  check_values(logsumexp(i, {1}), {std::log(2.0)}, 1e-7);
  CHECK(logsumexp(from_vector(std::vector<float>{1, 2}).to(kFloat16)).dtype() == kFloat16);
}

TEST_CASE("all and any", "[reduce]") {
  const Tensor f = from_vector(std::vector<double>{1, 0, -0.0, 2, kNaN, 3}, {2, 3});
  CHECK(all(f).dtype() == kBool);
  CHECK_FALSE(all(f).item<bool>());
  CHECK(any(f).item<bool>());
  CHECK(all(f, {0}).to_vector<bool>() == std::vector<bool>{true, false, false});
  CHECK(any(f, {0}).to_vector<bool>() == std::vector<bool>{true, true, true});
  CHECK(any(f.slice(1, 1, 3), {1}, true).to_vector<bool>() == std::vector<bool>{false, true});
  CHECK(any(f.slice(1, 1, 3), {1}, true).sizes() == Shape{2, 1});
  const Tensor i = from_vector(std::vector<int32_t>{5, 0, 7, 8}, {2, 2});
  CHECK(all(i, {1}).to_vector<bool>() == std::vector<bool>{false, true});
  CHECK(all(i.to(kUInt8)).dtype() == kBool);
  const Tensor b = from_vector(std::vector<bool>{true, true, false}, {3});
  CHECK_FALSE(all(b).item<bool>());
  CHECK(all(b.slice(0, 0, 2)).item<bool>());
  CHECK(all(f.to(kFloat8_e5m2), {1}).to_vector<bool>() == std::vector<bool>{false, true});
}

TEST_CASE("empty and zero-size reductions", "[reduce]") {
  const Tensor e = from_vector(std::vector<float>{}, {0, 3});
  check_values(sum(e), {0.0});
  check_values(prod(e), {1.0});
  CHECK(std::isnan(mean(e).item<double>()));
  check_values(sum(e, {0}), {0, 0, 0});
  check_values(prod(e, {0}, true), {1, 1, 1});
  CHECK(prod(e, {0}, true).sizes() == Shape{1, 3});
  CHECK(sum(e, {1}).sizes() == Shape{0});
  CHECK(sum(e.to(kInt32)).item<int64_t>() == 0);
  CHECK(all(e).item<bool>());
  CHECK_FALSE(any(e).item<bool>());
  CHECK(all(e, {1}).sizes() == Shape{0});
  // max-like ops have no identity.
  CHECK_THROWS_AS(amax(e), Error);
  CHECK_THROWS_AS(amin(e, {0}), Error);
  CHECK_THROWS_AS(max(e), Error);
  CHECK_THROWS_AS(max(e, 0), Error);
  CHECK_THROWS_AS(argmax(e), Error);
  CHECK_THROWS_AS(argmin(e, 0), Error);
  // ... unless the reduced extent itself is not empty.
  CHECK(amax(e, {1}).sizes() == Shape{0});
  auto m = max(e, 1, true);
  CHECK(m.values.sizes() == Shape{0, 1});
  CHECK(m.indices.sizes() == Shape{0, 1});
  CHECK(argmax(e, 1).sizes() == Shape{0});
  CHECK(var(e, {1}).sizes() == Shape{0});
  check_values(var(e, {0}), {kNaN, kNaN, kNaN});
  check_values(logsumexp(e, {0}), {-kInf, -kInf, -kInf});
  check_values(norm(e, 2.0, {0}), {0, 0, 0});
}

TEST_CASE("reduction errors", "[reduce]") {
  const Tensor t = from_vector(std::vector<float>(6, 1.f), {2, 3});
  const Tensor i = from_vector(std::vector<int32_t>{1, 2}, {2});
  CHECK_THROWS_AS(sum(t, {0, 0}), Error);
  CHECK_THROWS_AS(sum(t, {1, -1}), Error);
  CHECK_THROWS_AS(sum(t, {2}), Error);
  CHECK_THROWS_AS(amax(t, {-3}), Error);
  CHECK_THROWS_AS(mean(i), Error);
  CHECK_THROWS_AS(mean(from_vector(std::vector<bool>{true})), Error);
  CHECK_THROWS_AS(mean(t, {}, false, kInt64), Error);
  CHECK_THROWS_AS(var(i), Error);
  CHECK_THROWS_AS(mixt::std(i), Error);
  CHECK_THROWS_AS(var(t, {0, -2}), Error);
  CHECK_THROWS_AS(max(t, 2), Error);
  CHECK_THROWS_AS(argmax(t, -3), Error);
  CHECK_THROWS_AS(argmax(from_vector(std::vector<bool>{true, false})), Error);
  CHECK_THROWS_AS(cumsum(t, 2), Error);
  CHECK_THROWS_AS(cumprod(t, -3), Error);
  try {
    amax(from_vector(std::vector<float>{}));
    FAIL("amax of an empty tensor must raise");
  } catch (const Error& err) {
    CHECK(err.op() == "amax");
    CHECK_THAT(err.message(), Catch::Contains("zero-size"));
  }
  try {
    argmax(from_vector(std::vector<bool>{true}));
    FAIL("argmax of bool must raise");
  } catch (const Error& err) {
    CHECK_THAT(std::string(err.what()), Catch::Contains("argmax") && Catch::Contains("bool"));
  }
}

TEST_CASE("a given output (out=) receives the result", "[reduce]") {
  const Tensor t = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  OpCall c(OpId::sum);
  c.push(t);
  c.attrs.get<attrs::Reduce>().dims = Shape{0};
  Tensor given = from_vector(std::vector<double>{0, 0});
  c.out[0] = given;
  dispatch(c);
  CHECK(c.out[0].is_same(given));
  check_values(given, {4, 6});
  OpCall bad(OpId::sum);
  bad.push(t);
  bad.out[0] = from_vector(std::vector<double>{0, 0, 0});
  CHECK_THROWS_AS(dispatch(bad), Error);
}

TEST_CASE("cumsum and cumprod", "[reduce][scan]") {
  const Ref r = make_ref({3, 4, 5}, quarters(60, 19));
  const Tensor t = tensor_of(r);
  // Reference scan along `dim` of a row-major Ref.
  auto ref_scan = [](const Ref& x, int dim, bool product) {
    std::vector<double> out(x.v.size());
    for (int64_t i = 0; i < static_cast<int64_t>(x.v.size()); ++i) {
      auto idx = unravel(i, x.sizes);
      if (idx[dim] == 0) {
        double acc = product ? 1.0 : 0.0;
        for (int64_t k = 0; k < x.sizes[dim]; ++k) {
          idx[dim] = k;
          const int64_t j = ravel(idx, x.sizes);
          acc = product ? acc * x.v[j] : acc + x.v[j];
          out[j] = acc;
        }
      }
    }
    return out;
  };
  for (int64_t dim : {0, 1, 2, -1}) {
    INFO("dim " << dim);
    const int d = static_cast<int>(dim < 0 ? dim + 3 : dim);
    Tensor cs = cumsum(t, dim);
    CHECK(cs.sizes() == t.sizes());
    check_values(cs, ref_scan(r, d, false));
    check_values(cumprod(t, dim), ref_scan(r, d, true), 1e-12, 0);
    const Tensor p = t.permute({1, 2, 0});
    const Ref pr = permute_ref(r, {1, 2, 0});
    check_values(cumsum(p, dim), ref_scan(pr, d, false));
    const Tensor s = t.slice(2, 0, 5, 2);
    check_values(cumsum(s, dim), ref_scan(slice_ref(r, 2, 0, 5, 2), d, false));
  }
  // Narrow floats: accumulate wide, round each output once.
  const Tensor h = t.to(kFloat16);
  const Ref hr{r.sizes, h.to_vector<double>()};
  CHECK(cumsum(h, 1).dtype() == kFloat16);
  check_values(cumsum(h, 1), rounded(kFloat16, ref_scan(hr, 1, false)), 0, 0);
  // Integers and bool give int64 unless dtype= says otherwise.
  const Tensor i = from_vector(std::vector<int32_t>{1, 2, 3, 4, 5, 6}, {2, 3});
  CHECK(cumsum(i, 1).dtype() == kInt64);
  CHECK(cumsum(i, 1).to_vector<int64_t>() == std::vector<int64_t>{1, 3, 6, 4, 9, 15});
  CHECK(cumprod(i, 0).to_vector<int64_t>() == std::vector<int64_t>{1, 2, 3, 4, 10, 18});
  CHECK(cumsum(i, 1, kInt32).dtype() == kInt32);
  CHECK(cumsum(i, 0, kFloat64).dtype() == kFloat64);
  check_values(cumsum(i, 0, kFloat64), {1, 2, 3, 5, 7, 9});
  const Tensor b = from_vector(std::vector<bool>{true, false, true});
  CHECK(cumsum(b, 0).to_vector<int64_t>() == std::vector<int64_t>{1, 1, 2});
  CHECK(cumprod(b, 0).to_vector<int64_t>() == std::vector<int64_t>{1, 0, 0});
  // NaN, 0-dim, zero-size.
  check_values(cumsum(from_vector(std::vector<double>{1, kNaN, 2}), 0), {1, kNaN, kNaN});
  const Tensor z = scalar_of(4.0, kFloat32);
  CHECK(cumsum(z, 0).dim() == 0);
  check_values(cumprod(z, -1), {4.0});
  const Tensor e = from_vector(std::vector<float>{}, {0, 3});
  CHECK(cumsum(e, 1).sizes() == Shape{0, 3});
  CHECK(cumsum(e.to(kInt32), 0).dtype() == kInt64);
}

TEST_CASE("big reductions use the parallel paths", "[reduce][big]") {
  const int64_t n = 300007;
  std::vector<double> v = quarters(n, 23);
  SECTION("full reductions") {
    const Tensor t = from_vector(v);
    double s = 0;
    for (double x : v) s += x;
    check_values(sum(t), {s}, 1e-12);
    check_values(sum(t.to(kFloat32)), {round_to(kFloat32, s)}, 0, 0);
    // Duplicate maxima on both sides of any thread split: the first one wins.
    std::vector<double> w = v;
    w[17] = 100, w[n / 2 + 3] = 100, w[n - 2] = 100;
    w[5] = -100, w[n - 5] = -100;
    const Tensor tw = from_vector(w).to(kFloat32);
    CHECK(argmax(tw).item<int64_t>() == 17);
    CHECK(argmin(tw).item<int64_t>() == 5);
    CHECK(max(tw, 0).indices.item<int64_t>() == 17);
    CHECK(amax(tw).item<double>() == 100);
    w[n / 2 + 10] = kNaN, w[n - 3] = kNaN;
    CHECK(argmax(from_vector(w)).item<int64_t>() == n / 2 + 10);
    CHECK(std::isnan(amin(from_vector(w)).item<double>()));
    double mean_v = s / static_cast<double>(n), ss = 0;
    for (double x : v) ss += (x - mean_v) * (x - mean_v);
    check_values(var(t), {ss / static_cast<double>(n - 1)}, 1e-12);
    check_values(mean(t), {mean_v}, 1e-12);
    double l1 = 0;
    for (double x : v) l1 += std::abs(x);
    check_values(norm(t, 1.0), {l1}, 1e-12);
    CHECK(any(t.to(kBool)).item<bool>());
    // A few large outputs: rows of a [2, n] tensor and columns of its transpose.
    std::vector<double> two(v);
    two.insert(two.end(), v.rbegin(), v.rend());
    const Tensor t2 = from_vector(two, {2, n});
    check_values(sum(t2, {1}), {s, s}, 1e-12);
    check_values(sum(t2.t(), {0}), {s, s}, 1e-12);
    auto mx = max(t2.t(), 0);
    CHECK(mx.indices.to_vector<int64_t>()[0] == argmax(t).item<int64_t>());
  }
  SECTION("per-row and per-column reductions") {
    const Ref r = make_ref({599, 500}, std::vector<double>(v.begin(), v.begin() + 599 * 500));
    const Tensor t = tensor_of(r, kFloat32);
    const Ref stored{r.sizes, t.to_vector<double>()};
    for (int64_t dim : {0, 1}) {
      INFO("dim " << dim);
      check_values(sum(t, {dim}), rounded(kFloat32, ref_sum(stored, {dim})), 0, 0);
      check_values(amax(t, {dim}),
                   ref_reduce<double>(stored, {dim}, -kInf, [](double& a, double x, int64_t) { a = std::max(a, x); }));
      using P = std::pair<double, int64_t>;
      const auto e = ref_reduce<P>(stored, {dim}, {0.0, -1}, [](P& a, double x, int64_t i) {
        if (a.second < 0 || x > a.first) a = {x, i};
      });
      std::vector<int64_t> ei;
      for (const P& p : e) ei.push_back(p.second);
      CHECK(argmax(t, dim).to_vector<int64_t>() == ei);
      // Same through a transposed view (the other memory order).
      check_values(sum(t.t(), {1 - dim}), rounded(kFloat32, ref_sum(stored, {dim})), 0, 0);
      CHECK(argmax(t.t(), 1 - dim).to_vector<int64_t>() == ei);
    }
    auto ev = ref_reduce<double>(stored, {1}, 0.0, [](double& a, double x, int64_t) { a += x * x; });
    for (double& x : ev) x = round_to(kFloat32, std::sqrt(x));
    check_values(norm(t, 2.0, {1}), ev, 0, 0);
    // Scans of a big tensor along both dims.
    auto col = std::vector<double>(stored.v.size());
    for (int64_t j = 0; j < 500; ++j) {
      double acc = 0;
      for (int64_t i = 0; i < 599; ++i) acc += stored.v[i * 500 + j], col[i * 500 + j] = round_to(kFloat32, acc);
    }
    check_values(cumsum(t, 0), col, 0, 0);
    auto row = std::vector<double>(stored.v.size());
    for (int64_t i = 0; i < 599; ++i) {
      double acc = 0;
      for (int64_t j = 0; j < 500; ++j) acc += stored.v[i * 500 + j], row[i * 500 + j] = round_to(kFloat32, acc);
    }
    check_values(cumsum(t, 1), row, 0, 0);
  }
}

TEST_CASE("dist, cdist, pdist, renorm and cross give the textbook values", "[reduce][distance]") {
  using testing::make;
  auto values = [](const Tensor& t) { return t.to(kFloat64).to_vector<double>(); };
  const Tensor origin = make({0, 0}, kFloat32, {2}), far = make({3, 4}, kFloat32, {2});
  CHECK(origin.dist(far).item<double>() == Approx(5.0));
  CHECK(origin.dist(far, 1.0).item<double>() == Approx(7.0));
  CHECK(origin.dist(far, kInf).item<double>() == Approx(4.0));
  const Tensor pts = make({0, 0, 3, 4, 6, 8}, kFloat64, {3, 2});
  CHECK(values(pdist(pts)) == std::vector<double>{5, 10, 5});
  CHECK(pdist(make({1, 2}, kFloat64, {1, 2})).sizes() == Shape{0});
  const Tensor d = cdist(pts, make({0, 0}, kFloat64, {1, 2}));
  CHECK(d.sizes() == Shape{3, 1});
  CHECK(values(d) == std::vector<double>{0, 5, 10});
  CHECK(cdist(ones({2, 1, 3, 4}), ones({5, 2, 4})).sizes() == Shape{2, 5, 3, 2});  // batch dims broadcast
  // Row 0 has norm 5 > 1: scaled by 1 / (5 + 1e-7); row 1 (norm 0.5) is kept.
  const std::vector<double> r = values(renorm(make({3, 4, 0.3, 0.4}, kFloat64, {2, 2}), 2.0, 0, 1.0));
  CHECK(r[0] == Approx(3 / (5 + 1e-7)).epsilon(1e-15));
  CHECK(r[2] == 0.3);
  CHECK(values(cross(make({1, 0, 0}, kInt64, {3}), make({0, 1, 0}, kInt64, {3}))) == std::vector<double>{0, 0, 1});
  // [2, 3] x [1, 3]: the rows broadcast; dim -1 holds the vectors.
  const Tensor rows = make({1, 0, 0, 0, 1, 0}, kFloat32, {2, 3}), z = make({0, 0, 1}, kFloat32, {1, 3});
  CHECK(values(cross(rows, z)) == std::vector<double>{0, -1, 0, 1, 0, 0});
  CHECK(values(cross(rows.t(), z.t(), 0)) == std::vector<double>{0, 1, -1, 0, 0, 0});
}

TEST_CASE("dist, cdist, pdist, renorm and cross refuse bad input, naming the op and shapes", "[reduce][distance]") {
  using testing::error_of;
  using Catch::Contains;
  CHECK_THAT(error_of([] { (void)cdist(ones({3}), ones({2, 3})); }), Contains("cdist") && Contains("[3]"));
  CHECK_THAT(error_of([] { (void)cdist(ones({2, 3}), ones({2, 4})); }), Contains("cdist") && Contains("[2, 4]"));
  CHECK_THAT(error_of([] { (void)cdist(ones({2, 2, 3}), ones({3, 2, 3})); }), Contains("cdist") && Contains("[3]"));
  CHECK_THAT(error_of([] { (void)cdist(ones({2, 3}), ones({2, 3}), -1.0); }), Contains("non-negative"));
  CHECK_THAT(error_of([] { (void)pdist(ones({2, 2, 3})); }), Contains("pdist") && Contains("[2, 2, 3]"));
  CHECK_THAT(error_of([] { (void)pdist(ones({2, 3}), -0.5); }), Contains("pdist") && Contains("non-negative"));
  CHECK_THAT(error_of([] { (void)ones({2}, {.dtype = kInt64}).dist(ones({2})); }), Contains("dist") && Contains("floating"));
  CHECK_THAT(error_of([] { (void)ones({2}).dist(ones({3})); }), Contains("dist") && Contains("[3]"));
  CHECK_THAT(error_of([] { (void)renorm(ones({2, 3}), 0.0, 0, 1.0); }), Contains("renorm") && Contains("positive"));
  CHECK_THAT(error_of([] { (void)renorm(ones({2, 3}), 2.0, 0, -1.0); }), Contains("maxnorm"));
  CHECK_THAT(error_of([] { (void)renorm(ones({3}), 2.0, 0, 1.0); }), Contains("renorm") && Contains("[3]"));
  CHECK_THAT(error_of([] { (void)renorm(ones({2, 3}), 2.0, 2, 1.0); }), Contains("out of range"));
  CHECK_THAT(error_of([] { (void)cross(ones({2, 3}), ones({2, 2})); }), Contains("cross") && Contains("[2, 2]"));
  CHECK_THAT(error_of([] { (void)cross(ones({2, 3}), ones({3})); }), Contains("cross") && Contains("[3]"));
  CHECK_THAT(error_of([] { (void)cross(ones({3}), ones({3}, {.dtype = kFloat64})); }), Contains("dtype"));
  CHECK_THAT(error_of([] { (void)cross(ones({3}, {.dtype = kBool}), ones({3}, {.dtype = kBool})); }), Contains("bool"));
}
