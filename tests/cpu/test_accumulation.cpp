// What the docs claim about accumulation, on inputs whose answer differs between a
// float32 accumulator and a double one (each test also shows, by simulating the
// float32 accumulator here, that its input can tell them apart):
// - docs/ops.md: floating reductions (sum, mean, prod, var, std, norm, logsumexp,
//   cumsum, cumprod) accumulate in double on the CPU and round once;
// - docs/autocast.md: softmax/log_softmax denominators and the statistics of
//   layer_norm and rms_norm accumulate in double and only the result is rounded;
// - docs/ops.md: narrow-float matmul operands are multiplied with float32
//   accumulation (never in their own dtype) and rounded once.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>
#include <vector>

#include <mixt/mixt.h>

#include "reference_nn.h"
#include "test_util.h"
#include "ulps.h"

using namespace mixt;
using namespace mixt::testing;
namespace F = mixt::nn::functional;
namespace nnf = mixt::nn::functional;

namespace {

using Vec = std::vector<double>;

// Sums in float32, in index order and pairwise (the two usual float32 accumulators).
float sum_f32_in_order(const Vec& v) {
  float s = 0;
  for (double x : v) s += static_cast<float>(x);
  return s;
}
float sum_f32_pairwise(const Vec& v, size_t b, size_t e) {
  if (e - b == 1) return static_cast<float>(v[b]);
  const size_t m = b + (e - b) / 2;
  return sum_f32_pairwise(v, b, m) + sum_f32_pairwise(v, m, e);
}

// [big x m, 1 x 3, -big x m]: the sum is 3 exactly, but m * big >= 2^25 swallows the ones in a
// float32 accumulator (in index order or pairwise). big and m for each dtype (all hold 3).
Vec cancelling(ScalarType dt) {
  const double big = dt == kFloat16 ? 65504 : dt == kFloat8_e4m3fn ? 448 : dt == kFloat8_e5m2 ? 57344 : 0x1p25;
  const auto m = static_cast<size_t>(std::ceil(0x1p26 / big));
  Vec v(m, big);
  v.insert(v.end(), {1, 1, 1});
  v.insert(v.end(), m, -big);
  return v;
}

// n values 1000 + u, u uniform in [0, 1) from a fixed seed, rounded to float32.
Vec offset_values(int n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(0, 1);
  Vec v(static_cast<size_t>(n));
  for (double& x : v) x = static_cast<float>(1000 + u(rng));
  return v;
}

// The dtypes the reductions take (the floating ones but float64, where double is the dtype).
const ScalarType kNarrowAndF32[] = {kFloat32, kBFloat16, kFloat16, kFloat8_e4m3fn, kFloat8_e5m2};

// True when got is the double value `exact` correctly rounded to `dt` (through float32 for the
// narrow floats, Note [Narrow float conversions]), allowing `work` double roundings at |exact|.
bool rounded_once(ScalarType dt, double got, double exact, double work = 0) {
  return within(dt, got, exact, {0.5, work, 0, kFloat64});
}

}  // namespace

TEST_CASE("sum, mean and cumsum accumulate in double, whatever the dtype", "[accumulation]") {
  for (ScalarType dt : kNarrowAndF32) {
    INFO(dtype_name(dt));
    const Vec v = cancelling(dt);
    // A float32 accumulator loses the ones: this input tells the two apart.
    CHECK(sum_f32_in_order(v) != 3.0f);
    CHECK(sum_f32_pairwise(v, 0, v.size()) != 3.0f);
    const Tensor x = make(v, dt);
    REQUIRE(values(x) == v);  // every value is exact in dt
    CHECK(sum(x).item<double>() == 3);
    CHECK(rounded_once(dt, mean(x).item<double>(), 3.0 / static_cast<double>(v.size())));
    // Rows of a [2, n] tensor and columns of its transpose (the other memory order).
    const Tensor two = stack({x, x}, 0);
    CHECK(values(sum(two, {1})) == Vec{3, 3});
    CHECK(values(sum(two.t().contiguous(), {0})) == Vec{3, 3});
    // cumsum's last output is the whole sum: a float32 running sum ends at 0.
    CHECK(values(cumsum(x, 0)).back() == 3);
  }
}

TEST_CASE("var and std accumulate in double (Welford) and round once", "[accumulation]") {
  // 100003 values 1000 + u, u uniform in [0, 1), each exact in float32 (17 bits below the point).
  const Vec v = offset_values(100003, 1);
  const double exact = ref::var({{100003}, v}, {}, 1.0).v[0];
  // Welford's recurrence in float32 (the kernel's, in float32) is off by many float32 ulps.
  float mean = 0, m2 = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const float x = static_cast<float>(v[i]), d = x - mean;
    mean += d / static_cast<float>(i + 1);
    m2 += d * (x - mean);
  }
  CHECK(std::abs(m2 / 100002.0 - exact) > 8 * ulp_of(kFloat32, exact));
  const Tensor x = make(v, kFloat32);
  CHECK(rounded_once(kFloat32, var(x).item<double>(), exact, 1e4));  // double roundings: far below float32's
  CHECK(rounded_once(kFloat32, mixt::std(x).item<double>(), std::sqrt(exact), 1e4));
}

TEST_CASE("norm, prod and logsumexp accumulate in double", "[accumulation]") {
  SECTION("norm: 2^13 and 4096 ones") {
    Vec v{0x1p13};
    v.insert(v.end(), 4096, 1.0);
    float ss = 0;
    for (double x : v) ss += static_cast<float>(x * x);
    CHECK(std::sqrt(ss) == 8192.0f);  // float32 squares in index order lose every one
    CHECK(rounded_once(kFloat32, norm(make(v, kFloat32)).item<double>(), std::sqrt(0x1p26 + 4096)));
  }
  SECTION("prod: 4096 factors just above 1") {
    Vec v;
    for (int i = 0; i < 4096; ++i) v.push_back(1 + 0x1p-20 * (1 + i % 7));
    float p = 1;
    double exact = 1;
    for (double x : v) p *= static_cast<float>(x), exact *= x;
    CHECK_FALSE(rounded_once(kFloat32, p, exact, 4096));  // float32 products drift
    CHECK(rounded_once(kFloat32, prod(make(v, kFloat32)).item<double>(), exact, 4096));
    CHECK(rounded_once(kFloat32, values(cumprod(make(v, kFloat32), 0)).back(), exact, 4096));
  }
  SECTION("logsumexp: 0 and 100000 values of -17") {
    Vec v{0.0};
    v.insert(v.end(), 100000, -17.0);
    float s = 0;
    for (double x : v) s += std::exp(static_cast<float>(x));
    CHECK(std::log(s) == 0.0f);  // each e^-17 is below half an ulp of 1 in float32
    const double exact = std::log1p(100000 * std::exp(-17.0));
    for (ScalarType dt : {kFloat32, kBFloat16, kFloat16}) {
      INFO(dtype_name(dt));
      CHECK(rounded_once(dt, logsumexp(make(v, dt), {0}).item<double>(), exact, 8));
    }
  }
}

TEST_CASE("softmax and log_softmax denominators accumulate in double", "[accumulation]") {
  // One 0 and 100000 values of -17 in a row: the denominator is 1.00414 in double, 1 in a float32
  // accumulator (in index order), so softmax(x)[0] would be exactly 1.
  Vec v{0.0};
  v.insert(v.end(), 100000, -17.0);
  const double z = 1 + 100000 * std::exp(-17.0);
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat16}) {
    INFO(dtype_name(dt));
    const Tensor x = make(v, dt);
    // The output is exp(0) * (1 / z) with 1 / z rounded to float (log_softmax: -log(z) rounded to float),
    // then rounded to the dtype: within 1.5 ulps.
    const double sm = values(nnf::softmax(x, 0))[0], lsm = values(nnf::log_softmax(x, 0))[0];
    CHECK(within(dt, sm, 1 / z, {1.5, 0}));
    CHECK(within(dt, lsm, -std::log(z), {1.5, 0}));
    CHECK(sm != 1.0);
  }
}

TEST_CASE("layer_norm and rms_norm statistics accumulate in double", "[accumulation]") {
  SECTION("layer_norm of values 1000 + u") {
    const Vec v = offset_values(4097, 2);
    float sum = 0;
    for (double x : v) sum += static_cast<float>(x);
    const double exact_mean = ref::mean({{4097}, v}).v[0];
    // A float32 sum is off by several float32 ulps of the mean (and y by as many ulps of x - mean).
    CHECK(std::abs(sum / 4097.0f - exact_mean) > 4 * ulp_of(kFloat32, exact_mean));
    const Tensor x = make(v, kFloat32, {1, 4097});
    OpCall c(OpId::layer_norm);
    c.push(x);
    c.attrs.get<attrs::LayerNorm>() = {{4097}, 1e-5};
    dispatch(c);
    const Vec want = ref::norm_rows(v, 4097, 1e-5, {}, {});
    const Vec got = values(c.out[0]);
    int bad = 0;
    for (size_t i = 0; i < v.size(); ++i) bad += !within(kFloat32, got[i], want[i], {0.5, 1e4, 2, kFloat64});
    CHECK(bad == 0);
    CHECK(rounded_once(kFloat32, c.out[1].item<double>(), exact_mean, 1e4));  // the mean statistic, in float32
    const double var = ref::var({{4097}, v}, {}, 0.0).v[0];
    CHECK(rounded_once(kFloat32, c.out[2].item<double>(), 1 / std::sqrt(var + 1e-5), 1e4));
  }
  SECTION("rms_norm of 2^13 and 4096 ones") {
    Vec v{0x1p13};
    v.insert(v.end(), 4096, 1.0);
    const Tensor x = make(v, kFloat32, {1, 4097});
    OpCall c(OpId::rms_norm);
    c.push(x);
    c.attrs.get<attrs::RmsNorm>() = {{4097}, 0.0};
    dispatch(c);
    const double rstd = 1 / std::sqrt((0x1p26 + 4096) / 4097);  // float32 squares would give 1 / sqrt(2^26 / 4097)
    CHECK(rounded_once(kFloat32, c.out[1].item<double>(), rstd, 8));
    CHECK(rounded_once(kFloat32, values(c.out[0])[0], 0x1p13 * rstd, 8));
  }
}

TEST_CASE("narrow-float products accumulate in float32, not in their own dtype", "[accumulation][matmul]") {
  // 1 + n * 2^-e = 1.5 with each 2^-e below half an ulp of 1 in the dtype: an accumulator of the
  // dtype stays at 1; float32 gets 1.5 exactly, which every dtype holds.
  struct Case {
    ScalarType dt;
    int e;
  };
  for (const Case& k : {Case{kBFloat16, 9}, Case{kFloat16, 12}, Case{kFloat8_e4m3fn, 5}, Case{kFloat8_e5m2, 4}}) {
    INFO(dtype_name(k.dt));
    const int64_t n = int64_t{1} << (k.e - 1);
    Vec a{1.0};
    a.insert(a.end(), static_cast<size_t>(n), std::ldexp(1.0, -k.e));
    const Tensor row = make(a, k.dt, {1, n + 1}), col = ones({n + 1, 1}, of(k.dt));
    REQUIRE(round_to(k.dt, 1 + std::ldexp(1.0, -k.e)) == 1.0);  // the dtype cannot hold one step
    CHECK(mm(row, col).item<double>() == 1.5);
    CHECK(bmm(row.unsqueeze(0), col.unsqueeze(0)).item<double>() == 1.5);
    CHECK(matmul(row.squeeze(0), col.squeeze(1)).item<double>() == 1.5);
    // addmm: 0.25 + 1.5, rounded once (1.75 is exact in every dtype here).
    const Tensor bias = full({1, 1}, 0.25, of(k.dt));
    CHECK(addmm(bias, row, col).item<double>() == 1.75);
    CHECK(F::linear(row, col.t()).item<double>() == 1.5);
    // out_dtype = float32 returns the float32 accumulator itself.
    CHECK(mm(row, col, kFloat32).item<double>() == 1.5);
  }
}
