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

TEST_CASE("large contiguous copies split over the threads; blobs over shared memory copy as memmove", "[movement]") {
  // Sizes around the split (256 KiB a thread), an odd byte count among them.
  for (int64_t n : {int64_t{65536}, int64_t{131072} + 3, int64_t{1} << 21}) {
    INFO(n);
    const Tensor src = arange(0, n, 1, {.dtype = kInt32});
    CHECK(equal(src.clone(), src));
    Tensor dst = zeros({n}, {.dtype = kInt32});
    dst.copy_(src);
    CHECK(equal(dst, src));
    Tensor odd = zeros({4 * n + 1}, {.dtype = kUInt8}).narrow(0, 1, 4 * n);  // byte copies from an odd address
    odd.copy_(src.view(kUInt8));
    CHECK(equal(odd, src.view(kUInt8)));
  }
  // Two blobs over one buffer, 1 MiB apart: separate storages whose ranges overlap.
  const int64_t n = int64_t{1} << 20, shift = int64_t{1} << 18;
  std::vector<int32_t> buffer(static_cast<size_t>(n + shift));
  for (size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<int32_t>(i);
  Tensor low = from_blob(buffer.data(), {n}, {1}, kInt32);
  Tensor high = from_blob(buffer.data() + shift, {n}, {1}, kInt32);
  high.copy_(low);  // forwards over an overlap: only a memmove gives the old values
  const Tensor want = arange(0, n, 1, {.dtype = kInt32});
  CHECK(equal(from_blob(buffer.data() + shift, {n}, {1}, kInt32), want));
  for (size_t i = 0; i < static_cast<size_t>(shift); ++i) REQUIRE(buffer[i] == static_cast<int32_t>(i));
}

TEST_CASE("transposing copies in tiles: every shape around the tile, batches, conversions", "[movement]") {
  // Sizes below, at and past the 32-element tile, odd ones, and a batch dim outside the pair.
  for (const Shape& shape : {Shape{16, 16}, Shape{33, 17}, Shape{64, 100}, Shape{3, 31, 65}, Shape{2, 128, 40}}) {
    INFO(shape);
    const int64_t n = shape.numel();
    const Tensor x = arange(0, n, 1, {.dtype = kInt32}).reshape(shape);
    const int64_t d = static_cast<int64_t>(shape.size());
    const Tensor t = x.transpose(d - 2, d - 1);  // the last two dims swapped: a view
    const Tensor c = t.contiguous();
    REQUIRE(c.is_contiguous());
    // Element (b, i, j) of the copy is x's (b, j, i).
    const int64_t rows = shape[d - 1], cols = shape[d - 2], batch = n / (rows * cols);
    const std::vector<int32_t> got = c.to_vector<int32_t>();
    std::vector<int32_t> want(got.size());
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j)
          want[static_cast<size_t>((b * rows + i) * cols + j)] = static_cast<int32_t>((b * cols + j) * rows + i);
    CHECK(got == want);
    // With a rounding conversion on the way: the bits of converting the checked copy.
    Tensor narrow = empty(t.sizes(), {.dtype = kBFloat16});
    narrow.copy_(t.to(kFloat32));
    CHECK(equal(narrow, c.to(kFloat32).to(kBFloat16)));
    Tensor wide = empty(t.sizes(), {.dtype = kFloat64});
    wide.copy_(t);
    CHECK(wide.to(kInt32).to_vector<int32_t>() == want);
  }
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
