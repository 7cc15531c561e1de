// uniform_, normal_, random_ (and rand/randn/randint): Philox against its published
// known-answer vectors, reproducibility from (seed, offset), the element formula
// recomputed here from philox::generate, statistics of many draws (5 standard errors),
// range bounds, and errors.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

#include <catch2/catch.hpp>

#include <mixt/mixt.h>

#include "test_util.h"
#include <mixt/runtime/philox.h>

using namespace mixt;
using namespace mixt::testing;

namespace {

double mean_of(const std::vector<double>& v) { return std::accumulate(v.begin(), v.end(), 0.0) / v.size(); }

double std_of(const std::vector<double>& v) {
  const double m = mean_of(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / (v.size() - 1));
}

// The message of the mixt::Error `f` throws ("" when it throws none).

constexpr double kTwoPi = 6.283185307179586;

// Note on the statistical checks below: each allows 5 standard errors of the estimate
// (fixed seeds make the runs reproducible; a correct generator fails one check with
// probability about 6e-7). For n draws of a distribution with variance s2 and fourth
// central moment m4, the sample mean has standard error sqrt(s2 / n) and the sample
// standard deviation about sqrt((m4 - s2^2) / (4 s2 n)).
struct Moments {
  double mean, var, m4;  // of one draw
};
double five_sigma_of_mean(const Moments& m, size_t n) { return 5 * std::sqrt(m.var / static_cast<double>(n)); }
double five_sigma_of_std(const Moments& m, size_t n) {
  return 5 * std::sqrt((m.m4 - m.var * m.var) / (4 * m.var * static_cast<double>(n)));
}
// U(a, b): variance (b-a)^2/12, fourth central moment (b-a)^4/80.
Moments uniform_moments(double a, double b) {
  const double w = b - a;
  return {(a + b) / 2, w * w / 12, w * w * w * w / 80};
}
// N(mu, sd): fourth central moment 3 sd^4.
Moments normal_moments(double mu, double sd) { return {mu, sd * sd, 3 * sd * sd * sd * sd}; }

// A standard normal draw rounded to float8_e4m3fn (3 mantissa bits): its exact moments,
// summed over the codes (each takes the normal's mass between the midpoints to its
// neighbours; the largest, 448, also takes the tail). Rounding adds about 0.1% to the
// variance, well inside 5 standard errors, but the reference is exact anyway.
Moments rounded_normal_e4m3fn() {
  std::vector<double> v;
  for (int code = 0; code <= 0x7e; ++code) v.push_back(static_cast<float>(Float8_e4m3fn::from_bits(code)));
  const auto cdf = [](double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); };
  double var = 0, m4 = 0;
  for (size_t i = 1; i < v.size(); ++i) {  // the positive codes; the negative ones mirror them
    const double lo = (v[i - 1] + v[i]) / 2, hi = i + 1 < v.size() ? (v[i] + v[i + 1]) / 2 : INFINITY;
    const double p = cdf(hi) - cdf(lo);
    var += 2 * p * v[i] * v[i];
    m4 += 2 * p * v[i] * v[i] * v[i] * v[i];
  }
  return {0.0, var, m4};
}

}  // namespace

TEST_CASE("same seed and offset give the same values, others differ", "[random]") {
  Generator g1(42), g2(42), g3(43);
  const auto a = rand({1000}, {}, &g1).to_vector<float>();
  const auto b = rand({1000}, {}, &g2).to_vector<float>();
  const auto c = rand({1000}, {}, &g3).to_vector<float>();
  CHECK(a == b);
  CHECK(a != c);
  // The next call continues the stream: different values.
  const auto a2 = rand({1000}, {}, &g1).to_vector<float>();
  CHECK(a2 != a);
  // Rewinding the offset replays the stream.
  g1.set_offset(0);
  CHECK(rand({1000}, {}, &g1).to_vector<float>() == a);
  CHECK(rand({1000}, {}, &g1).to_vector<float>() == a2);
}

TEST_CASE("a call reserves exactly the blocks it uses", "[random]") {
  Generator g(1);
  rand({10}, {}, &g);  // 4 lanes per block: 3 blocks
  CHECK(g.offset() == 3);
  rand({10}, of(kFloat64), &g);  // 2 per block: 5 blocks
  CHECK(g.offset() == 8);
  randn({3}, of(kBFloat16), &g);
  CHECK(g.offset() == 9);
  randint(0, 5, {5}, {}, &g);  // int64: 2 per block
  CHECK(g.offset() == 12);
  randint(0, 5, {5}, of(kInt32), &g);
  CHECK(g.offset() == 14);
  rand({0, 4}, {}, &g);
  CHECK(g.offset() == 14);
  // A failing call consumes nothing.
  Tensor t = empty({8});
  CHECK_THROWS_AS(normal_(t, 0.0, -1.0, &g), Error);
  CHECK(g.offset() == 14);
}

TEST_CASE("values follow the element formula (recomputed from philox)", "[random]") {
  const uint64_t seed = 0x1234567890abcdefull, offset = 7;
  Generator g(seed);
  SECTION("uniform float32 and bfloat16") {
    g.set_offset(offset);
    const auto v = rand({13}, {}, &g).to_vector<float>();
    for (int i = 0; i < 13; ++i) {
      const philox::Block b = philox::generate(seed, offset + i / 4);
      CHECK(v[i] == static_cast<float>(b.v[i % 4] >> 8) / 16777216.0f);
    }
    g.set_offset(offset);
    Tensor w = empty({13}, of(kFloat32));
    uniform_(w, -2.0, 3.0, &g);
    const auto wv = w.to_vector<float>();
    for (int i = 0; i < 13; ++i) {
      const philox::Block b = philox::generate(seed, offset + i / 4);
      CHECK(wv[i] == Approx(-2.0 + 5.0 * (b.v[i % 4] >> 8) / 16777216.0).margin(1e-6));
    }
    g.set_offset(offset);
    const auto h = rand({6}, of(kBFloat16), &g).to_vector<float>();
    for (int i = 0; i < 6; ++i) {
      const philox::Block b = philox::generate(seed, offset + i / 4);
      const float u = static_cast<float>(b.v[i % 4] >> 8) / 16777216.0f;
      const float rounded = static_cast<float>(BFloat16(u));
      CHECK(h[i] == (rounded < 1.0f ? rounded : 0.99609375f));  // the largest bfloat16 below 1
    }
  }
  SECTION("uniform float64 uses two words per element") {
    g.set_offset(offset);
    const auto v = rand({5}, of(kFloat64), &g).to_vector<double>();
    for (int i = 0; i < 5; ++i) {
      const philox::Block b = philox::generate(seed, offset + i / 2);
      const uint64_t hi = b.v[2 * (i % 2)], lo = b.v[2 * (i % 2) + 1];
      const uint64_t bits53 = ((hi << 21) ^ (lo >> 11)) & ((1ull << 53) - 1);
      CHECK(v[i] == static_cast<double>(bits53) / 9007199254740992.0);
    }
  }
  SECTION("normal: Box-Muller on lane pairs") {
    g.set_offset(offset);
    Tensor t = empty({7});
    normal_(t, 1.5, 2.0, &g);
    const auto v = t.to_vector<float>();
    for (int i = 0; i < 7; ++i) {
      const philox::Block b = philox::generate(seed, offset + i / 4);
      const int first = (i % 4) / 2 * 2;
      const double u1 = (b.v[first] >> 8) / 16777216.0, u2 = (b.v[first + 1] >> 8) / 16777216.0;
      const double r = std::sqrt(-2.0 * std::log(1.0 - u1));
      const double z = (i % 2 == 0) ? r * std::cos(kTwoPi * u2) : r * std::sin(kTwoPi * u2);
      CHECK(v[i] == Approx(1.5 + 2.0 * z).margin(1e-5));
    }
    g.set_offset(offset);
    const auto d = randn({3}, of(kFloat64), &g).to_vector<double>();
    for (int i = 0; i < 3; ++i) {
      const philox::Block b = philox::generate(seed, offset + i / 2);
      auto u53 = [&](int k) {
        const uint64_t hi = b.v[2 * k], lo = b.v[2 * k + 1];
        return static_cast<double>(((hi << 21) ^ (lo >> 11)) & ((1ull << 53) - 1)) / 9007199254740992.0;
      };
      const double r = std::sqrt(-2.0 * std::log(1.0 - u53(0)));
      const double z = (i % 2 == 0) ? r * std::cos(kTwoPi * u53(1)) : r * std::sin(kTwoPi * u53(1));
      CHECK(d[i] == Approx(z).margin(1e-12));
    }
  }
  SECTION("random_: 32-bit lanes modulo the range, 64-bit for int64") {
    g.set_offset(offset);
    const auto v = randint(-5, 1000, {9}, of(kInt32), &g).to_vector<int64_t>();
    for (int i = 0; i < 9; ++i) {
      const philox::Block b = philox::generate(seed, offset + i / 4);
      CHECK(v[i] == -5 + static_cast<int64_t>(b.v[i % 4] % 1005u));
    }
    g.set_offset(offset);
    const int64_t low = -(int64_t{1} << 40), high = int64_t{3} << 50;
    const auto w = randint(low, high, {5}, {}, &g).to_vector<int64_t>();
    for (int i = 0; i < 5; ++i) {
      const philox::Block b = philox::generate(seed, offset + i / 2);
      const uint64_t bits = (static_cast<uint64_t>(b.v[2 * (i % 2)]) << 32) | b.v[2 * (i % 2) + 1];
      CHECK(w[i] == low + static_cast<int64_t>(bits % static_cast<uint64_t>(high - low)));
    }
  }
}


TEST_CASE("Philox4x32-10 gives Random123's published known-answer vectors", "[random][philox]") {
  struct Kat {
    philox::Block counter;
    uint32_t k0, k1;
    philox::Block expect;
  };
  // Random123 (kat_vectors): philox4x32 with 10 rounds.
  const Kat kats[] = {
      {{{0, 0, 0, 0}}, 0, 0, {{0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u}}},
      {{{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}},
       0xffffffffu,
       0xffffffffu,
       {{0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu}}},
      {{{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}},
       0xa4093822u,
       0x299f31d0u,
       {{0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u}}},
  };
  for (const Kat& k : kats) {
    const philox::Block got = philox::philox4x32_10(k.counter, k.k0, k.k1);
    for (int lane = 0; lane < 4; ++lane) {
      INFO("counter " << std::hex << k.counter.v[0] << " lane " << lane);
      CHECK(got.v[lane] == k.expect.v[lane]);
    }
  }
  // generate(seed, counter) is that function with key = seed (low word first) and the
  // counter's low 64 bits (low word first), high 64 bits zero.
  const philox::Block zero = philox::generate(0, 0);
  CHECK(zero.v[0] == 0x6627e8d5u);
  CHECK(zero.v[3] == 0x9b00dbd8u);
  const uint64_t seed = 0x299f31d0a4093822ull, counter = 0x85a308d3243f6a88ull;
  const philox::Block g = philox::generate(seed, counter);
  const philox::Block f = philox::philox4x32_10({{0x243f6a88u, 0x85a308d3u, 0, 0}}, 0xa4093822u, 0x299f31d0u);
  for (int lane = 0; lane < 4; ++lane) CHECK(g.v[lane] == f.v[lane]);
}

TEST_CASE("large tensors: mean and std of 100000 draws within 5 standard errors", "[random]") {
  Generator g(2024);
  const size_t n = 100000;
  const Moments u01 = uniform_moments(0, 1), n23 = normal_moments(2, 3);
  // Rounding to the 16-bit floats changes these moments by far less than one standard
  // error (variance + ulp^2/12, ulp <= 2^-5 here), so the continuous moments serve.
  for (ScalarType dt : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    INFO(dtype_name(dt));
    const auto u = rand({static_cast<int64_t>(n)}, of(dt), &g).to_vector<double>();
    CHECK(std::abs(mean_of(u) - u01.mean) <= five_sigma_of_mean(u01, n));  // 5 x 0.00091
    CHECK(std::abs(std_of(u) - std::sqrt(u01.var)) <= five_sigma_of_std(u01, n));  // 5 x 0.00041
    Tensor t = empty({200, 500}, of(dt));
    normal_(t, 2.0, 3.0, &g);
    const auto nv = t.to_vector<double>();
    CHECK(std::abs(mean_of(nv) - n23.mean) <= five_sigma_of_mean(n23, n));  // 5 x 0.0095
    CHECK(std::abs(std_of(nv) - std::sqrt(n23.var)) <= five_sigma_of_std(n23, n));  // 5 x 0.0067
    // No pair of neighbours is identical (lanes are independent draws).
    int equal = 0;
    for (size_t i = 1; i < 1000; ++i) equal += nv[i] == nv[i - 1];
    CHECK(equal < 50);
  }
  const Moments q = rounded_normal_e4m3fn();
  CHECK(std::abs(q.var - 1.0) < 0.01);  // the rounding's share is small
  const auto fp8 = randn({static_cast<int64_t>(n)}, of(kFloat8_e4m3fn), &g).to_vector<double>();
  CHECK(std::abs(mean_of(fp8)) <= five_sigma_of_mean(q, n));
  CHECK(std::abs(std_of(fp8) - std::sqrt(q.var)) <= five_sigma_of_std(q, n));
  const auto r = randint(0, 10, {static_cast<int64_t>(n)}, {}, &g).to_vector<int64_t>();
  REQUIRE(std::count_if(r.begin(), r.end(), [](int64_t x) { return x < 0 || x >= 10; }) == 0);
  std::vector<int> counts(10, 0);
  for (int64_t x : r) ++counts[x];
  // Each count is Binomial(n, 0.1): standard deviation sqrt(n 0.1 0.9) = 94.9.
  for (int k = 0; k < 10; ++k) CHECK(std::abs(counts[k] - 10000) <= 5 * 94.9);
}

TEST_CASE("uniform_ and random_ stay within their bounds", "[random]") {
  Generator g(5);
  for (ScalarType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kFloat8_e4m3fn, kFloat8_e5m2}) {
    INFO(dtype_name(dt));
    Tensor t = empty({20000}, of(dt));
    uniform_(t, -1.0, 1.0, &g);
    const auto v = t.to_vector<double>();
    CHECK(*std::min_element(v.begin(), v.end()) >= -1.0);
    CHECK(*std::max_element(v.begin(), v.end()) < 1.0);
    uniform_(t, 0.0, 3.0, &g);  // 3 is not a power of two: rounding up to 3 must not happen
    const auto w = t.to_vector<double>();
    CHECK(*std::min_element(w.begin(), w.end()) >= 0.0);
    CHECK(*std::max_element(w.begin(), w.end()) < 3.0);
    uniform_(t, 0.25, 0.25, &g);
    CHECK(t.to_vector<double>() == std::vector<double>(20000, 0.25));
  }
  for (ScalarType dt : {kInt8, kInt32, kInt64, kFloat32, kFloat64, kBFloat16, kFloat8_e5m2}) {
    INFO(dtype_name(dt));
    Tensor t = empty({5000}, of(dt));
    random_(t, -5, 5, &g);
    const auto v = t.to_vector<double>();
    CHECK(*std::min_element(v.begin(), v.end()) == -5.0);
    CHECK(*std::max_element(v.begin(), v.end()) == 4.0);
    CHECK(std::count_if(v.begin(), v.end(), [](double x) { return x != std::floor(x); }) == 0);
  }
  const auto u8 = randint(0, 256, {50000}, of(kUInt8), &g).to_vector<int64_t>();
  CHECK(*std::min_element(u8.begin(), u8.end()) == 0);
  CHECK(*std::max_element(u8.begin(), u8.end()) == 255);
  // Counts of 1000 fair coin flips: Binomial(1000, 0.5), standard deviation 15.8; 5 sigma = 79.
  const auto b = randint(0, 2, {1000}, of(kBool), &g).to_vector<int64_t>();
  CHECK(std::abs(std::count(b.begin(), b.end(), 1) - 500) <= 79);
  const auto full_range = randint(INT64_MIN, INT64_MAX, {1000}, {}, &g).to_vector<int64_t>();
  CHECK(std::abs(std::count_if(full_range.begin(), full_range.end(), [](int64_t x) { return x < 0; }) - 500) <= 79);
}

TEST_CASE("non-contiguous outputs get the values of a contiguous call", "[random]") {
  Generator g(99);
  Tensor base = zeros({4, 6});
  Tensor t = base.t();  // [6, 4], not contiguous
  uniform_(t, 0.0, 1.0, &g);
  g.set_offset(0);
  const auto expect = rand({6, 4}, {}, &g).to_vector<float>();
  CHECK(t.to_vector<float>() == expect);
  Tensor half = zeros({10}, of(kFloat64));
  Tensor odd = half.slice(0, 1, 10, 2);
  g.set_offset(0);
  normal_(odd, 0.0, 1.0, &g);
  const auto hv = half.to_vector<double>();
  g.set_offset(0);
  const auto nv = randn({5}, of(kFloat64), &g).to_vector<double>();
  for (int i = 0; i < 5; ++i) {
    CHECK(hv[2 * i] == 0.0);
    CHECK(hv[2 * i + 1] == nv[i]);
  }
}

TEST_CASE("the default generator and manual_seed", "[random]") {
  manual_seed(7);
  const auto a = rand({100}).to_vector<float>();
  CHECK(default_generator().seed() == 7);
  CHECK(default_generator().offset() == 25);
  const auto a2 = rand({100}).to_vector<float>();
  CHECK(a2 != a);
  manual_seed(7);
  CHECK(rand({100}).to_vector<float>() == a);
  Generator same(7);
  CHECK(rand({100}, {}, &same).to_vector<float>() == a);
  manual_seed(8);
  CHECK(rand({100}).to_vector<float>() != a);
}

TEST_CASE("*_like random factories", "[random]") {
  Tensor t = zeros({3, 2}, of(kFloat64));
  Tensor r = rand_like(t);
  CHECK(r.sizes() == Shape{3, 2});
  CHECK(r.dtype() == kFloat64);
  CHECK(randn_like(t, of(kFloat16)).dtype() == kFloat16);
  Tensor i = randint_like(t, 3, 4);
  CHECK(i.dtype() == kFloat64);
  CHECK(i.to_vector<double>() == std::vector<double>(6, 3.0));
}

TEST_CASE("random ops reject bad arguments", "[random]") {
  Tensor f = empty({4});
  Tensor i = empty({4}, of(kInt32));
  CHECK_THROWS_AS(normal_(f, 0.0, -1.0), Error);
  CHECK_THROWS_AS(normal_(f, std::nan(""), 1.0), Error);
  CHECK_THROWS_AS(uniform_(f, 1.0, 0.0), Error);
  CHECK_THROWS_AS(uniform_(f, 0.0, std::numeric_limits<double>::infinity()), Error);
  CHECK_THROWS_AS(uniform_(f, -3e38, 3e38), Error);  // the width overflows float32
  Tensor h = empty({4}, of(kFloat16));
  CHECK_THROWS_AS(uniform_(h, 0.0, 1e5), Error);
  CHECK_THROWS_AS(random_(f, 3, 3), Error);
  CHECK_THROWS_AS(random_(f, 5, 1), Error);
  Tensor u8 = empty({4}, of(kUInt8));
  CHECK_THROWS_AS(random_(u8, -1, 5), Error);
  CHECK_THROWS_AS(random_(u8, 0, 257), Error);
  Tensor i8 = empty({4}, of(kInt8));
  CHECK_THROWS_AS(random_(i8, 0, 200), Error);
  Tensor bf = empty({4}, of(kBFloat16));
  CHECK_THROWS_AS(random_(bf, 0, 1000), Error);
  Tensor b = empty({4}, of(kBool));
  CHECK_THROWS_AS(random_(b, 0, 3), Error);
  Tensor expanded = zeros({1}).expand({4});
  CHECK_THROWS_AS(uniform_(expanded), Error);
  const std::string msg = error_of([&] { uniform_(i); });
  CHECK(msg.find("uniform_") != std::string::npos);
  CHECK(msg.find("int32") != std::string::npos);
  const std::string nmsg = error_of([&] { normal_(i); });
  CHECK(nmsg.find("normal_") != std::string::npos);
  const std::string rmsg = error_of([&] { random_(f, 2, 1); });
  CHECK(rmsg.find("random_") != std::string::npos);
}
