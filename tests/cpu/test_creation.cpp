// Factories (empty, full, zeros, ones, arange, linspace, eye, *_like) and fill_:
// values and dtypes against values computed here, and the errors of bad arguments.
#include <cmath>
#include <cstdint>
#include <limits>

#include <catch2/catch.hpp>

#include <mixt/mixt.h>

#include "test_util.h"

using namespace mixt;
using namespace mixt::testing;

TEST_CASE("factories pick PyTorch's default dtypes", "[creation]") {
  CHECK(full({2}, 3).dtype() == kInt64);
  CHECK(full({2}, 2.5).dtype() == kFloat32);
  CHECK(full({2}, true).dtype() == kBool);
  CHECK(zeros({2}).dtype() == kFloat32);
  CHECK(ones({2}).dtype() == kFloat32);
  CHECK(empty({2}).dtype() == kFloat32);
  CHECK(arange(5).dtype() == kInt64);
  CHECK(arange(0, 5, 2).dtype() == kInt64);
  CHECK(arange(0.5).dtype() == kFloat32);
  CHECK(arange(0, 5, 0.5).dtype() == kFloat32);
  CHECK(linspace(0, 1, 3).dtype() == kFloat32);
  CHECK(eye(2).dtype() == kFloat32);
  CHECK(arange(5, of(kFloat64)).dtype() == kFloat64);
  CHECK(full({1}, 3, of(kBFloat16)).dtype() == kBFloat16);
}

TEST_CASE("empty, full, zeros and ones in every dtype", "[creation]") {
  for (ScalarType dt : kAllDtypes) {
    INFO(dtype_name(dt));
    Tensor e = empty({2, 0, 3}, of(dt));
    CHECK(e.sizes() == Shape{2, 0, 3});
    CHECK(e.dtype() == dt);
    CHECK(e.numel() == 0);
    Tensor f = full({2, 3}, 3, of(dt));
    CHECK(f.sizes() == Shape{2, 3});
    CHECK(f.dtype() == dt);
    const double three = dt == kBool ? 1.0 : 3.0;
    CHECK(f.to_vector<double>() == std::vector<double>(6, three));
    CHECK(zeros({4}, of(dt)).to_vector<double>() == std::vector<double>(4, 0.0));
    CHECK(ones({2, 2}, of(dt)).to_vector<double>() == std::vector<double>(4, 1.0));
    CHECK(full({}, 1, of(dt)).dim() == 0);
  }
  CHECK(full({3}, -1.25, of(kFloat64)).to_vector<double>() == std::vector<double>(3, -1.25));
  CHECK(full({2}, int64_t{1} << 62).to_vector<int64_t>() == std::vector<int64_t>(2, int64_t{1} << 62));
  CHECK_THROWS_AS(empty({2, -1}), Error);
  CHECK_THROWS_AS(full({-3}, 1), Error);
}

TEST_CASE("full converts the value like a cast", "[creation]") {
  CHECK(full({2}, 2.7, of(kInt32)).to_vector<int32_t>() == std::vector<int32_t>{2, 2});
  CHECK(full({2}, -2.7, of(kInt64)).to_vector<int64_t>() == std::vector<int64_t>{-2, -2});
  CHECK(full({1}, 0.5, of(kBool)).to_vector<bool>() == std::vector<bool>{true});
  CHECK(full({1}, 0, of(kBool)).to_vector<bool>() == std::vector<bool>{false});
  CHECK(full({1}, 255, of(kUInt8)).to_vector<int64_t>() == std::vector<int64_t>{255});
  CHECK(full({1}, -128, of(kInt8)).to_vector<int64_t>() == std::vector<int64_t>{-128});
  CHECK(full({1}, -9.2233720368547758e18, of(kInt64)).to_vector<int64_t>()[0] == INT64_MIN);
  CHECK(full({1}, 1e300, of(kFloat32)).to_vector<float>()[0] == INFINITY);  // floats round as casts do
  CHECK(full({1}, 1.0 / 3.0, of(kBFloat16)).to_vector<float>()[0] == static_cast<float>(BFloat16(1.0f / 3.0f)));
}

TEST_CASE("full and fills refuse values outside an integer dtype, as PyTorch does", "[creation]") {
  const auto overflow = [](const char* type) {
    return Catch::Contains(std::string("value cannot be converted to type ") + type + " without overflow");
  };
  CHECK_THROWS_WITH(full({2}, 1e300, of(kInt32)), overflow("int32"));
  CHECK_THROWS_WITH(full({1}, -1, of(kUInt8)), overflow("uint8"));
  CHECK_THROWS_WITH(full({1}, 256, of(kUInt8)), overflow("uint8"));
  CHECK_THROWS_WITH(full({1}, 128, of(kInt8)), overflow("int8"));
  CHECK_THROWS_WITH(full({1}, int64_t{1} << 31, of(kInt32)), overflow("int32"));
  CHECK_THROWS_WITH(full({1}, kNan, of(kInt64)), overflow("int64"));
  CHECK_THROWS_WITH(full({1}, -kInf, of(kInt64)), overflow("int64"));
  CHECK_THROWS_WITH(full({1}, 9.2233720368547758e18, of(kInt64)), overflow("int64"));
  CHECK_THROWS_WITH(scalar_tensor(1e10, of(kInt32)), overflow("int32"));
  Tensor t = full({3}, 5, of(kInt32));
  CHECK_THROWS_WITH(t.fill_(1e10), overflow("int32"));
  CHECK_THROWS_WITH(masked_fill(t, ones({3}, of(kBool)), -1e10), overflow("int32"));
  CHECK_THROWS_WITH(scatter(t, 0, from_vector(std::vector<int64_t>{1}), Scalar(kInf)), overflow("int32"));
  CHECK(t.to_vector<int32_t>() == std::vector<int32_t>{5, 5, 5});
}

TEST_CASE("*_like factories copy shape, dtype and device", "[creation]") {
  Tensor t = full({2, 3}, 4, of(kInt32));
  Tensor z = zeros_like(t);
  CHECK(z.sizes() == Shape{2, 3});
  CHECK(z.dtype() == kInt32);
  CHECK(z.to_vector<int32_t>() == std::vector<int32_t>(6, 0));
  Tensor o = ones_like(t, of(kFloat16));
  CHECK(o.dtype() == kFloat16);
  CHECK(o.to_vector<float>() == std::vector<float>(6, 1.f));
  Tensor f = full_like(t, 7.9);
  CHECK(f.dtype() == kInt32);
  CHECK(f.to_vector<int32_t>() == std::vector<int32_t>(6, 7));
  Tensor e = empty_like(t.t());
  CHECK(e.sizes() == Shape{3, 2});
  CHECK(e.is_contiguous());
  CHECK_THROWS_AS(zeros_like(Tensor()), Error);
}

TEST_CASE("arange values and sizes", "[creation]") {
  CHECK(arange(5).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(arange(1, 10, 3).to_vector<int64_t>() == std::vector<int64_t>{1, 4, 7});
  CHECK(arange(10, 0, -3).to_vector<int64_t>() == std::vector<int64_t>{10, 7, 4, 1});
  CHECK(arange(-3, 3, 2).to_vector<int64_t>() == std::vector<int64_t>{-3, -1, 1});
  CHECK(arange(0.0, 1.0, 0.25).to_vector<float>() == std::vector<float>{0.f, 0.25f, 0.5f, 0.75f});
  CHECK(arange(-5, 5, 2.5, of(kFloat64)).to_vector<double>() == std::vector<double>{-5, -2.5, 0, 2.5});
  CHECK(arange(3, 3).numel() == 0);
  CHECK(arange(3, 3).sizes() == Shape{0});
  // Sizes follow ceil((end - start) / step) computed in double.
  Tensor tenth = arange(0, 1, 0.1, of(kFloat64));
  REQUIRE(tenth.numel() == 10);
  const auto tv = tenth.to_vector<double>();
  for (int i = 0; i < 10; ++i) CHECK(tv[i] == 0.0 + i * 0.1);
  CHECK(arange(0.0, 1.0001, 0.5).numel() == 3);
  // Integer bounds are exact in int64 even beyond 2^53.
  const int64_t big = std::numeric_limits<int64_t>::max();
  CHECK(arange(big - 3, big).to_vector<int64_t>() == std::vector<int64_t>{big - 3, big - 2, big - 1});
  // Other dtypes: values start + i * step rounded once (float steps truncate into integers).
  CHECK(arange(0, 5, 1.5, of(kInt64)).to_vector<int64_t>() == std::vector<int64_t>{0, 1, 3, 4});
  CHECK(arange(4, of(kBFloat16)).to_vector<float>() == std::vector<float>{0, 1, 2, 3});
  CHECK(arange(4, of(kFloat8_e4m3fn)).to_vector<float>() == std::vector<float>{0, 1, 2, 3});
  CHECK(arange(-2, 2, 1, of(kInt8)).to_vector<int64_t>() == std::vector<int64_t>{-2, -1, 0, 1});
  CHECK(arange(250, 258, 3, of(kUInt8)).to_vector<int64_t>() == std::vector<int64_t>{250, 253, 0});
}

TEST_CASE("arange errors", "[creation]") {
  CHECK_THROWS_AS(arange(0, 5, 0), Error);
  CHECK_THROWS_AS(arange(0.0, 5.0, 0.0), Error);
  CHECK_THROWS_AS(arange(0, 5, -1), Error);
  CHECK_THROWS_AS(arange(5, 0, 1), Error);
  CHECK_THROWS_AS(arange(0.0, std::numeric_limits<double>::infinity()), Error);
  CHECK_THROWS_AS(arange(0.0, std::nan("")), Error);
  CHECK_THROWS_AS(arange(0.0, 1.0, std::nan("")), Error);
  CHECK_THROWS_AS(arange(0.0, 1e300, 1e-300), Error);
  CHECK_THROWS_AS(arange(3, of(kBool)), Error);
  try {
    arange(0, 5, 0);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(e.op() == "arange");
  }
}

TEST_CASE("linspace is exact at both ends", "[creation]") {
  CHECK(linspace(0, 1, 5).to_vector<float>() == std::vector<float>{0.f, 0.25f, 0.5f, 0.75f, 1.f});
  CHECK(linspace(5, -5, 3).to_vector<float>() == std::vector<float>{5.f, 0.f, -5.f});
  const auto v = linspace(-3.3, 7.1, 7).to_vector<float>();
  REQUIRE(v.size() == 7);
  CHECK(v.front() == static_cast<float>(-3.3));
  CHECK(v.back() == static_cast<float>(7.1));
  for (int i = 0; i < 7; ++i) CHECK(v[i] == Approx(-3.3 + i * (10.4 / 6)).margin(1e-5));
  const auto d = linspace(0.0, 1.0, 11, of(kFloat64)).to_vector<double>();
  REQUIRE(d.size() == 11);
  CHECK(d[10] == 1.0);
  for (int i = 0; i < 11; ++i) CHECK(d[i] == Approx(i / 10.0).margin(1e-15));
  // Odd counts: the middle element comes from the upper half.
  const auto m = linspace(1.0, 2.0, 3, of(kFloat64)).to_vector<double>();
  CHECK(m == std::vector<double>{1.0, 1.5, 2.0});
  CHECK(linspace(2.5, 9, 1).to_vector<float>() == std::vector<float>{2.5f});
  CHECK(linspace(0, 1, 0).sizes() == Shape{0});
  CHECK(linspace(0, 10, 4, of(kInt64)).to_vector<int64_t>() == std::vector<int64_t>{0, 3, 6, 10});
  CHECK(linspace(0, 1, 3, of(kFloat16)).to_vector<float>() == std::vector<float>{0.f, 0.5f, 1.f});
  CHECK(linspace(0, 1, 3, of(kFloat8_e5m2)).to_vector<float>() == std::vector<float>{0.f, 0.5f, 1.f});
  CHECK_THROWS_AS(linspace(0, 1, -1), Error);
  CHECK_THROWS_AS(linspace(0, 1, 3, of(kBool)), Error);
}

TEST_CASE("eye", "[creation]") {
  CHECK(eye(3).to_vector<float>() == std::vector<float>{1, 0, 0, 0, 1, 0, 0, 0, 1});
  Tensor r = eye(2, 4, of(kInt32));
  CHECK(r.sizes() == Shape{2, 4});
  CHECK(r.to_vector<int32_t>() == std::vector<int32_t>{1, 0, 0, 0, 0, 1, 0, 0});
  CHECK(eye(3, 2).to_vector<float>() == std::vector<float>{1, 0, 0, 1, 0, 0});
  CHECK(eye(2, -1, of(kBool)).to_vector<bool>() == std::vector<bool>{true, false, false, true});
  CHECK(eye(2, -1, of(kFloat8_e4m3fn)).to_vector<float>() == std::vector<float>{1, 0, 0, 1});
  CHECK(eye(0).sizes() == Shape{0, 0});
  CHECK(eye(3, 0).sizes() == Shape{3, 0});
  CHECK_THROWS_AS(eye(-2), Error);
}

TEST_CASE("fill_ writes every element of views and bumps the version", "[creation]") {
  Tensor t = zeros({3, 4});
  Tensor col = t.select(1, 2);
  const uint32_t v0 = t.version();
  col.fill_(5);
  CHECK(t.version() > v0);
  std::vector<float> expect(12, 0.f);
  for (int i = 0; i < 3; ++i) expect[i * 4 + 2] = 5.f;
  CHECK(t.to_vector<float>() == expect);
  Tensor stepped = t.t().slice(0, 0, 4, 3);  // rows 0 and 3 of t^T: columns 0 and 3 of t
  stepped.fill_(-1.5);
  for (int i = 0; i < 3; ++i) expect[i * 4 + 0] = expect[i * 4 + 3] = -1.5f;
  CHECK(t.to_vector<float>() == expect);
  t.zero_();
  CHECK(t.to_vector<float>() == std::vector<float>(12, 0.f));
  for (ScalarType dt : kAllDtypes) {
    INFO(dtype_name(dt));
    Tensor x = zeros({5, 3}, of(dt)).slice(0, 1, 5, 2);  // rows 1 and 3
    x.fill_(2);
    const double two = dt == kBool ? 1.0 : 2.0;
    CHECK(x.to_vector<double>() == std::vector<double>(6, two));
  }
  Tensor i = zeros({3}, of(kInt64));
  i.fill_(3.9);
  CHECK(i.to_vector<int64_t>() == std::vector<int64_t>{3, 3, 3});
  Tensor s = zeros({}, of(kFloat64));
  s.fill_(2.25);
  CHECK(s.item<double>() == 2.25);
  Tensor none = zeros({0, 2});
  none.fill_(1);
  CHECK(none.numel() == 0);
  Tensor expanded = zeros({1}).expand({3});
  CHECK_THROWS_AS(expanded.fill_(1), Error);
  Tensor undefined_value = zeros({2});
  CHECK_THROWS_AS(fill_(undefined_value, Scalar()), Error);
}

TEST_CASE("large factories and fills use the parallel loops", "[creation]") {
  const int64_t n = 200000;
  const auto a = arange(n).to_vector<int64_t>();
  REQUIRE(a.size() == static_cast<size_t>(n));
  int64_t bad = 0;
  for (int64_t i = 0; i < n; ++i) bad += a[i] != i;
  CHECK(bad == 0);
  const auto l = linspace(0.0, 1.0, n + 1, of(kFloat64)).to_vector<double>();
  bad = 0;
  for (int64_t i = 0; i <= n; ++i) bad += std::abs(l[i] - static_cast<double>(i) / n) > 1e-15;
  CHECK(bad == 0);
  CHECK(l.back() == 1.0);
  Tensor t = zeros({400, 1000}, of(kInt32));
  Tensor cols = t.slice(1, 0, 1000, 2);  // every other column
  cols.fill_(7);
  const auto tv = t.to_vector<int32_t>();
  bad = 0;
  for (size_t i = 0; i < tv.size(); ++i) bad += tv[i] != (i % 2 == 0 ? 7 : 0);
  CHECK(bad == 0);
  const auto f = full({n}, 0.5, of(kFloat16)).to_vector<float>();
  CHECK(f == std::vector<float>(static_cast<size_t>(n), 0.5f));
}
