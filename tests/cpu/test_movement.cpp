// copy_, to, clone, contiguous, cat, stack: values, dtypes and aliasing.
#include <catch2/catch.hpp>

#include <mixt/mixt.h>

using namespace mixt;

TEST_CASE("to() converts between every pair of dtypes", "[movement]") {
  const std::vector<double> v{0.0, 1.0, 2.0, 3.0, 96.0};  // exact in every dtype
  Tensor src = from_vector(v);
  for (int a = 0; a < kNumDtypes; ++a) {
    const auto da = static_cast<ScalarType>(a);
    Tensor x = src.to(da);
    CHECK(x.dtype() == da);
    for (int b = 0; b < kNumDtypes; ++b) {
      const auto db = static_cast<ScalarType>(b);
      Tensor y = x.to(db);
      CHECK(y.dtype() == db);
      const auto out = y.to_vector<double>();
      for (size_t i = 0; i < v.size(); ++i) {
        double expect = v[i];
        if (da == kBool || db == kBool) expect = expect != 0.0 ? 1.0 : 0.0;
        INFO(dtype_name(da) << " -> " << dtype_name(db) << " at " << i);
        CHECK(out[i] == expect);
      }
    }
  }
}

TEST_CASE("to() returns the same tensor when nothing changes", "[movement]") {
  Tensor x = from_vector(std::vector<float>{1, 2});
  CHECK(x.to(kFloat32).is_same(x));
  CHECK_FALSE(x.to(kFloat64).is_same(x));
}

TEST_CASE("copy_ broadcasts, converts and respects views", "[movement]") {
  Tensor dst = from_vector(std::vector<float>(6, 0.f), {2, 3});
  Tensor row = from_vector(std::vector<int64_t>{1, 2, 3});
  const uint32_t v0 = dst.version();
  dst.copy_(row);
  CHECK(dst.version() > v0);
  CHECK(dst.to_vector<float>() == std::vector<float>{1, 2, 3, 1, 2, 3});
  Tensor col = dst.select(1, 1);
  col.copy_(from_vector(std::vector<double>{7, 8}));
  CHECK(dst.to_vector<float>() == std::vector<float>{1, 7, 3, 1, 8, 3});
  CHECK_THROWS_AS(dst.copy_(from_vector(std::vector<float>{1, 2})), Error);
  Tensor expanded = from_vector(std::vector<float>{1}).expand({3});
  CHECK_THROWS_AS(expanded.copy_(from_vector(std::vector<float>{1, 2, 3})), Error);
}

TEST_CASE("copy_ between overlapping views of one storage", "[movement]") {
  Tensor t = from_vector(std::vector<float>{0, 1, 2, 3, 4});
  Tensor head = t.narrow(0, 0, 4), tail = t.narrow(0, 1, 4);
  tail.copy_(head);
  CHECK(t.to_vector<float>() == std::vector<float>{0, 0, 1, 2, 3});
}

TEST_CASE("clone and contiguous", "[movement]") {
  Tensor t = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6}, {2, 3}).t();
  Tensor c = t.contiguous();
  CHECK(c.is_contiguous());
  CHECK_FALSE(c.shares_storage(t));
  CHECK(c.to_vector<float>() == std::vector<float>{1, 4, 2, 5, 3, 6});
  CHECK(c.contiguous().is_same(c));
  Tensor k = c.clone();
  CHECK_FALSE(k.shares_storage(c));
}

TEST_CASE("cat and stack", "[movement]") {
  Tensor a = from_vector(std::vector<float>{1, 2, 3, 4}, {2, 2});
  Tensor b = from_vector(std::vector<int32_t>{5, 6}, {1, 2});
  Tensor c = cat({a, b}, 0);
  CHECK(c.dtype() == kFloat32);
  CHECK(c.sizes() == Shape{3, 2});
  CHECK(c.to_vector<float>() == std::vector<float>{1, 2, 3, 4, 5, 6});
  CHECK(cat({a, a}, -1).sizes() == Shape{2, 4});
  CHECK_THROWS_AS(cat({a, b}, 1), Error);
  CHECK_THROWS_AS(cat({}, 0), Error);
  Tensor empty1d = from_vector(std::vector<float>{});
  CHECK(cat({a, empty1d}, 0).sizes() == Shape{2, 2});

  Tensor s = stack({a, a}, 1);
  CHECK(s.sizes() == Shape{2, 2, 2});
  CHECK(s.to_vector<float>() == std::vector<float>{1, 2, 1, 2, 3, 4, 3, 4});
  CHECK_THROWS_AS(stack({a, b}), Error);
  CHECK_THROWS_AS(cat({a, from_vector(std::vector<Float8_e4m3fn>{Float8_e4m3fn(1.f), Float8_e4m3fn(2.f)}, {1, 2})}),
                  Error);
}
