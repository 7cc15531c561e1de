// Binary, comparison, logical and ternary elementwise ops on the CPU: values
// against double references on every floating dtype, promotion, broadcasting,
// scalars, in-place forms, layouts and errors.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <functional>
#include <limits>
#include <vector>

#include <mixt/mixt.h>

#include "test_util.h"

using namespace mixt;
using namespace mixt::testing;

namespace {

struct BinaryCase {
  const char* name;
  std::function<Tensor(const Tensor&, const Tensor&)> op;
  std::function<Tensor&(Tensor&, const Tensor&)> op_;  // empty: no in-place form
  std::function<double(double, double)> ref;
  std::vector<double> a, b;
};

std::vector<BinaryCase> binary_cases() {
  const std::vector<double> a{-3.0, -1.5, -0.5, 0.0, 0.75, 2.0, 4.0, 7.5};
  const std::vector<double> b{2.0, -0.25, 1.5, -3.0, 0.5, 2.0, -1.0, 3.0};
  const std::vector<double> pa{0.5, 1.0, 1.5, 2.0, 3.0, 0.25, 4.0, 2.5};
  return {
      {"add", [](auto& x, auto& y) { return add(x, y); }, [](auto& x, auto& y) -> Tensor& { return add_(x, y); },
       [](double x, double y) { return x + y; }, a, b},
      {"add alpha", [](auto& x, auto& y) { return add(x, y, 0.5); },
       [](auto& x, auto& y) -> Tensor& { return add_(x, y, 0.5); }, [](double x, double y) { return x + 0.5 * y; }, a,
       b},
      {"sub", [](auto& x, auto& y) { return sub(x, y); }, [](auto& x, auto& y) -> Tensor& { return sub_(x, y); },
       [](double x, double y) { return x - y; }, a, b},
      {"sub alpha", [](auto& x, auto& y) { return sub(x, y, 2); },
       [](auto& x, auto& y) -> Tensor& { return sub_(x, y, 2); }, [](double x, double y) { return x - 2 * y; }, a, b},
      {"mul", [](auto& x, auto& y) { return mul(x, y); }, [](auto& x, auto& y) -> Tensor& { return mul_(x, y); },
       [](double x, double y) { return x * y; }, a, b},
      {"div", [](auto& x, auto& y) { return div(x, y); }, [](auto& x, auto& y) -> Tensor& { return div_(x, y); },
       [](double x, double y) { return x / y; }, a, b},
      {"div trunc", [](auto& x, auto& y) { return div(x, y, "trunc"); },
       [](auto& x, auto& y) -> Tensor& { return div_(x, y, "trunc"); },
       [](double x, double y) { return std::trunc(x / y); }, a, b},
      {"div floor", [](auto& x, auto& y) { return div(x, y, "floor"); },
       [](auto& x, auto& y) -> Tensor& { return div_(x, y, "floor"); },
       [](double x, double y) { return std::floor(x / y); }, a, b},
      {"pow", [](auto& x, auto& y) { return pow(x, y); }, [](auto& x, auto& y) -> Tensor& { return pow_(x, y); },
       [](double x, double y) { return std::pow(x, y); }, pa, b},
      {"atan2", [](auto& x, auto& y) { return atan2(x, y); }, [](auto& x, auto& y) -> Tensor& { return atan2_(x, y); },
       [](double x, double y) { return std::atan2(x, y); }, a, b},
      {"maximum", [](auto& x, auto& y) { return maximum(x, y); }, nullptr,
       [](double x, double y) { return std::max(x, y); }, a, b},
      {"minimum", [](auto& x, auto& y) { return minimum(x, y); }, nullptr,
       [](double x, double y) { return std::min(x, y); }, a, b},
  };
}

}  // namespace

TEST_CASE("binary ops match double references on every floating dtype", "[binary]") {
  for (const BinaryCase& bc : binary_cases()) {
    for (ScalarType dt : kFloatTypes) {
      INFO(bc.name << " on " << dtype_name(dt));
      const Tensor x = make(bc.a, dt), y = make(bc.b, dt);
      const std::vector<double> xs = values(x), ys = values(y);
      const Tensor r = bc.op(x, y);
      REQUIRE(r.dtype() == dt);
      const std::vector<double> got = values(r);
      for (size_t i = 0; i < xs.size(); ++i) {
        double want = bc.ref(xs[i], ys[i]);
        if (dt == kFloat8_e4m3fn && std::abs(want) > 448) want = std::copysign(448.0, want);
        INFO("a = " << xs[i] << ", b = " << ys[i] << ", got " << got[i] << ", want " << want);
        CHECK(close(got[i], want, tol_for(dt)));
      }
      if (bc.op_) {
        Tensor z = x.clone();
        const uint32_t v0 = z.version();
        Tensor& ret = bc.op_(z, y);
        CHECK(&ret == &z);
        CHECK(z.version() > v0);
        CHECK(values(z) == got);
      }
    }
  }
}

TEST_CASE("type promotion of binary ops", "[binary]") {
  const Tensor i32 = from_vector(std::vector<int32_t>{1, 2, 3});
  const Tensor f32 = make({0.5, 0.25, 2.0}, kFloat32);
  // int32 tensor + 2.5 -> float32
  Tensor r = i32 + 2.5;
  CHECK(r.dtype() == kFloat32);
  CHECK(values(r) == std::vector<double>{3.5, 4.5, 5.5});
  // int32 tensor + int scalar stays int32
  CHECK((i32 + 2).dtype() == kInt32);
  CHECK(values(i32 * 3) == std::vector<double>{3, 6, 9});
  // float16 tensor + float32 0-dim tensor -> float16
  const Tensor h = make({1.0, 2.0}, kFloat16);
  const Tensor s32 = scalar0(0.5);
  r = h + s32;
  CHECK(r.dtype() == kFloat16);
  CHECK(values(r) == std::vector<double>{1.5, 2.5});
  // int tensor + float tensor -> float
  CHECK((i32 + f32).dtype() == kFloat32);
  CHECK(values(i32 * f32) == std::vector<double>{0.5, 0.5, 6});
  CHECK((from_vector(std::vector<int64_t>{1}) + make({1.0}, kFloat64)).dtype() == kFloat64);
  // bool + int -> int; bool + bool -> bool (logical or); bool * bool -> and
  const Tensor b = bools({1, 0, 1});
  r = b + i32;
  CHECK(r.dtype() == kInt32);
  CHECK(values(r) == std::vector<double>{2, 2, 4});
  r = b + bools({1, 1, 0});
  CHECK(r.dtype() == kBool);
  CHECK(values(r) == std::vector<double>{1, 1, 1});
  CHECK(values(b * bools({1, 1, 0})) == std::vector<double>{1, 0, 0});
  // integer widths
  CHECK((i32 + from_vector(std::vector<int64_t>{1, 1, 1})).dtype() == kInt64);
  CHECK((from_vector(std::vector<uint8_t>{200}) + from_vector(std::vector<int8_t>{-1})).dtype() == kInt32);
  CHECK(values(from_vector(std::vector<uint8_t>{200}) + from_vector(std::vector<int8_t>{-1})) ==
        std::vector<double>{199});
  // true division of integers gives float32
  r = div(i32, from_vector(std::vector<int32_t>{2, 4, 0}));
  CHECK(r.dtype() == kFloat32);
  CHECK(values(r) == std::vector<double>{0.5, 0.5, kInf});
  // floating-point scalars with a bfloat16 tensor keep bfloat16
  CHECK((make({1.0}, kBFloat16) * 3.0).dtype() == kBFloat16);
  // float8 mixes only with itself
  const Tensor e4 = make({1.0}, kFloat8_e4m3fn), e5 = make({1.0}, kFloat8_e5m2);
  CHECK_THROWS_AS(e4 + e5, Error);
  CHECK_THROWS_AS(e4 + make({1.0}, kFloat16), Error);
  CHECK((e4 + 1.5).dtype() == kFloat8_e4m3fn);
  CHECK(values(e4 + 1.5) == std::vector<double>{2.5});
}

TEST_CASE("wrapped scalars are applied in opmath precision", "[binary]") {
  // float16(1.0004) == 1, but 1000 * 1.0004f = 1000.4 rounds to 1000.5 in float16.
  const Tensor h = make({1000.0}, kFloat16);
  CHECK(values(h * 1.0004) == std::vector<double>{1000.5});
  CHECK(values(mul(h, 1.0004)) == std::vector<double>{1000.5});
  CHECK(values(1.0004 * h) == std::vector<double>{1000.5});
  Tensor hh = h.clone();
  mul_(hh, 1.0004);
  CHECK(values(hh) == std::vector<double>{1000.5});
  // add with alpha on a scalar: 1000 + 0.4 * 1.0 = 1000.4 -> 1000.5
  CHECK(values(add(h, 1.0, 0.4)) == std::vector<double>{1000.5});
  // bfloat16: 256 / 0.99f = 258.59 -> 258; dividing by bfloat16(0.99) = 0.98828125 would give 259.03 -> 260.
  CHECK(values(make({256.0}, kBFloat16) / 0.99) == std::vector<double>{258});
}

TEST_CASE("scalar overloads and operators", "[binary]") {
  const Tensor x = make({1.0, 2.0, 4.0}, kFloat32);
  CHECK(values(x + 1) == std::vector<double>{2, 3, 5});
  CHECK(values(1 + x) == std::vector<double>{2, 3, 5});
  CHECK(values(x - 1) == std::vector<double>{0, 1, 3});
  CHECK(values(10 - x) == std::vector<double>{9, 8, 6});
  CHECK(values(x * 2) == std::vector<double>{2, 4, 8});
  CHECK(values(2 * x) == std::vector<double>{2, 4, 8});
  CHECK(values(x / 2) == std::vector<double>{0.5, 1, 2});
  CHECK(values(1 / x) == std::vector<double>{1, 0.5, 0.25});
  CHECK(values(x + x) == std::vector<double>{2, 4, 8});
  CHECK(values(x - x * 0.5) == std::vector<double>{0.5, 1, 2});
  CHECK(values(x / x) == std::vector<double>{1, 1, 1});
  CHECK(values(-x + 1) == std::vector<double>{0, -1, -3});
  CHECK(values(sub(x, 1, 3)) == std::vector<double>{-2, -1, 1});
  CHECK(values(div(x, 3, "floor")) == std::vector<double>{0, 0, 1});
  CHECK(values(pow(x, 2)) == std::vector<double>{1, 4, 16});
  CHECK(values(pow(x, 0.5))[2] == 2);
  CHECK(values(pow(2, x)) == std::vector<double>{2, 4, 16});
  CHECK(values(x.add(x, 2)) == std::vector<double>{3, 6, 12});
  CHECK(values(x.sub(x)) == std::vector<double>{0, 0, 0});
  CHECK(values(x.mul(x)) == std::vector<double>{1, 4, 16});
  CHECK(values(x.div(x)) == std::vector<double>{1, 1, 1});
  Tensor y = x.clone();
  y.add_(1).mul_(2).div_(4);
  CHECK(values(y) == std::vector<double>{1, 1.5, 2.5});
  y.sub_(x, 0.5);
  CHECK(values(y) == std::vector<double>{0.5, 0.5, 0.5});
  add_(y, 1.5, 2);
  CHECK(values(y) == std::vector<double>{3.5, 3.5, 3.5});
  sub_(y, 0.5);
  CHECK(values(y) == std::vector<double>{3, 3, 3});
  div_(y, 2, "trunc");
  CHECK(values(y) == std::vector<double>{1, 1, 1});
  pow_(y, 3);
  CHECK(values(y) == std::vector<double>{1, 1, 1});
  // Two wrapped scalars: a 0-dim result.
  const Tensor two = wrapped_scalar(2);
  CHECK(add(two, wrapped_scalar(3)).item<int64_t>() == 5);
}

TEST_CASE("broadcasting", "[binary]") {
  const Tensor m = make({1, 2, 3, 4, 5, 6}, kFloat32, {2, 3});
  const Tensor row = make({10, 20, 30}, kFloat32);
  const Tensor col = make({100, 200}, kFloat32, {2, 1});
  Tensor r = m + row;
  CHECK(r.sizes() == Shape{2, 3});
  CHECK(values(r) == std::vector<double>{11, 22, 33, 14, 25, 36});
  r = row + m;
  CHECK(values(r) == std::vector<double>{11, 22, 33, 14, 25, 36});
  r = m * col;
  CHECK(values(r) == std::vector<double>{100, 200, 300, 800, 1000, 1200});
  r = col - row;  // [2,1] - [3] -> [2,3]
  CHECK(r.sizes() == Shape{2, 3});
  CHECK(values(r) == std::vector<double>{90, 80, 70, 190, 180, 170});
  r = m + scalar0(1.0);
  CHECK(values(r) == std::vector<double>{2, 3, 4, 5, 6, 7});
  CHECK_THROWS_AS(m + make({1, 2}, kFloat32), Error);
  // In place: the result must have self's shape.
  Tensor mm = m.clone();
  add_(mm, row);
  CHECK(values(mm) == std::vector<double>{11, 22, 33, 14, 25, 36});
  Tensor rr = row.clone();
  CHECK_THROWS_AS(add_(rr, m), Error);
  CHECK(values(rr) == std::vector<double>{10, 20, 30});
}

TEST_CASE("non-contiguous operands", "[binary]") {
  std::vector<double> v(20);
  for (int k = 0; k < 20; ++k) v[k] = k - 7;
  const Tensor m = make(v, kFloat64, {4, 5});
  const Tensor t = m.t();                // [5, 4]
  const Tensor s = m.slice(1, 0, 5, 2);  // [4, 3], columns 0, 2, 4
  const Tensor u = make(v, kFloat64, {5, 4});
  const auto r = values(t * u);
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) CHECK(r[i * 4 + j] == v[j * 5 + i] * v[i * 4 + j]);
  const auto q = values(s - s.flatten().view({4, 3}));  // strided minus contiguous copy of itself
  for (double d : q) CHECK(d == 0);
  const auto w = values(maximum(t, u.t().t()));
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) CHECK(w[i * 4 + j] == std::max(v[j * 5 + i], v[i * 4 + j]));
  // In place into a transposed view and into a strided slice.
  Tensor base = make(v, kFloat32, {4, 5});
  Tensor bt = base.t();
  add_(bt, make({1000, 2000, 3000, 4000}, kFloat32));  // adds 1000 * (row + 1) to each row of base
  const auto bv = values(base);
  for (int k = 0; k < 20; ++k) CHECK(bv[k] == v[k] + 1000 * (k / 5 + 1));
  Tensor base2 = make(v, kFloat32, {4, 5});
  Tensor cols = base2.slice(1, 1, 5, 2);  // columns 1, 3
  mul_(cols, 0);
  const auto b2 = values(base2);
  for (int k = 0; k < 20; ++k) CHECK(b2[k] == (k % 5 == 1 || k % 5 == 3 ? 0 : v[k]));
  // Overlapping in-place operands read the old values: a[1:] += a[:-1].
  Tensor a = make({1, 2, 3, 4}, kFloat32);
  Tensor tail = a.narrow(0, 1, 3);
  add_(tail, a.narrow(0, 0, 3));
  CHECK(values(a) == std::vector<double>{1, 3, 5, 7});
  // self aliasing with the same geometry.
  Tensor sq = make({1, 2, 3}, kFloat32);
  mul_(sq, sq);
  CHECK(values(sq) == std::vector<double>{1, 4, 9});
}

TEST_CASE("integer arithmetic wraps and divides like PyTorch", "[binary]") {
  for (ScalarType dt : {kInt8, kInt32, kInt64}) {
    INFO(dtype_name(dt));
    const Tensor a = make({7, -7, 7, -7, 0, 6}, dt), b = make({2, 2, -2, -2, 3, -3}, dt);
    CHECK(div(a, b, "trunc").dtype() == dt);
    CHECK(values(div(a, b, "trunc")) == std::vector<double>{3, -3, -3, 3, 0, -2});
    CHECK(values(div(a, b, "floor")) == std::vector<double>{3, -4, -4, 3, 0, -2});
    CHECK(values(div(a, b)) == std::vector<double>{3.5, -3.5, -3.5, 3.5, 0, -2});
    CHECK(div(a, b).dtype() == kFloat32);
    CHECK(values(a + b) == std::vector<double>{9, -5, 5, -9, 3, 3});
    CHECK(values(a - b) == std::vector<double>{5, -9, 9, -5, -3, 9});
    CHECK(values(a * b) == std::vector<double>{14, -14, -14, 14, 0, -18});
    CHECK(values(add(a, b, 3)) == std::vector<double>{13, -1, 1, -13, 9, -3});
    CHECK(values(maximum(a, b)) == std::vector<double>{7, 2, 7, -2, 3, 6});
    CHECK(values(minimum(a, b)) == std::vector<double>{2, -7, -2, -7, 0, -3});
    CHECK(values(div(a, 2, "floor")) == std::vector<double>{3, -4, 3, -4, 0, 3});
    CHECK(values(div(wrapped_scalar(14), b, "floor")) == std::vector<double>{7, 7, -7, -7, 4, -5});
  }
  // Overflow wraps (no UB): int32 max + 1 -> min; int8 100 * 3 -> 44.
  const int32_t mx = std::numeric_limits<int32_t>::max(), mn = std::numeric_limits<int32_t>::min();
  CHECK((from_vector(std::vector<int32_t>{mx}) + 1).item<int64_t>() == mn);
  CHECK((from_vector(std::vector<int8_t>{100}) * 3).item<int64_t>() == 44);
  // MIN / -1 wraps instead of trapping.
  const Tensor m1 = from_vector(std::vector<int32_t>{-1});
  CHECK(div(from_vector(std::vector<int32_t>{mn}), m1, "trunc").item<int64_t>() == mn);
  CHECK(div(from_vector(std::vector<int32_t>{mn}), m1, "floor").item<int64_t>() == mn);
  // uint8
  const Tensor u = from_vector(std::vector<uint8_t>{250, 7});
  CHECK(values(u + from_vector(std::vector<uint8_t>{10, 1})) == std::vector<double>{4, 8});
  CHECK(values(div(u, from_vector(std::vector<uint8_t>{3, 2}), "floor")) == std::vector<double>{83, 3});
  // Float floor division: Python semantics, division by zero gives inf/nan.
  const auto fd = values(
      div(make({-7.5, 7.5, 1.0, -1.0, 0.0, 5.0}, kFloat64), make({2.0, -2.0, 0.0, 0.0, 0.0, kInf}, kFloat64), "floor"));
  CHECK(fd[0] == -4);
  CHECK(fd[1] == -4);
  CHECK(fd[2] == kInf);
  CHECK(fd[3] == -kInf);
  CHECK(std::isnan(fd[4]));
  CHECK(fd[5] == 0);
  CHECK(div(make({-1.0}, kFloat64), make({kInf}, kFloat64), "floor").item<double>() == -1);
  const auto td = values(div(make({-7.5, 7.5}, kFloat32), make({2.0, -2.0}, kFloat32), "trunc"));
  CHECK(td == std::vector<double>{-3, -3});
}

TEST_CASE("integer division by zero and negative integer powers raise", "[binary]") {
  const Tensor a = from_vector(std::vector<int32_t>{1, 2, 3});
  const Tensor z = from_vector(std::vector<int32_t>{1, 0, 1});
  CHECK_THROWS_AS(div(a, z, "trunc"), Error);
  CHECK_THROWS_AS(div(a, z, "floor"), Error);
  CHECK_THROWS_AS(div(a, 0, "floor"), Error);
  CHECK_THROWS_AS(div(wrapped_scalar(5), z, "trunc"), Error);
  CHECK_THROWS_AS(div(from_vector(std::vector<uint8_t>{1}), 256, "trunc"), Error);  // 256 -> uint8 0
  Tensor c = a.clone();
  CHECK_THROWS_AS(div_(c, z, "floor"), Error);
  CHECK(values(c) == std::vector<double>{1, 2, 3});  // untouched
  // A zero in a broadcast divisor with an empty result is not an error.
  CHECK(div(from_vector(std::vector<int32_t>{}), z.narrow(0, 1, 1), "trunc").numel() == 0);
  // Integer pow.
  const Tensor base = from_vector(std::vector<int64_t>{2, 3, -2, 0, 5});
  CHECK(values(pow(base, from_vector(std::vector<int64_t>{10, 3, 3, 0, 1}))) ==
        std::vector<double>{1024, 27, -8, 1, 5});
  CHECK(pow(base, 2).dtype() == kInt64);
  CHECK(values(pow(base, 2)) == std::vector<double>{4, 9, 4, 0, 25});
  CHECK(values(pow(2, from_vector(std::vector<int32_t>{0, 1, 5}))) == std::vector<double>{1, 2, 32});
  CHECK(pow(base, 0.5).dtype() == kFloat32);
  CHECK_THROWS_AS(pow(base, -1), Error);
  CHECK_THROWS_AS(pow(base, from_vector(std::vector<int64_t>{1, 1, -2, 1, 1})), Error);
  CHECK_THROWS_AS(pow(2, from_vector(std::vector<int32_t>{-1})), Error);
  CHECK(values(pow(make({2.0, 4.0}, kFloat32), -1)) == std::vector<double>{0.5, 0.25});
  // pow of integers by floating tensors promotes.
  CHECK(pow(base, make({0.5}, kFloat64)).dtype() == kFloat64);
}

TEST_CASE("binary error cases", "[binary]") {
  const Tensor b = bools({1, 0});
  const Tensor i = from_vector(std::vector<int32_t>{1, 2});
  const Tensor f = make({1.0, 2.0}, kFloat32);
  CHECK_THROWS_AS(b - b, Error);
  CHECK_THROWS_AS(sub(i, b), Error);
  CHECK_THROWS_AS(b - 1, Error);
  CHECK_THROWS_AS(add(i, i, 0.5), Error);   // floating alpha with integer inputs
  CHECK_THROWS_AS(add(f, f, true), Error);  // bool alpha with non-bool result
  CHECK_THROWS_AS(pow(b, b), Error);
  CHECK_THROWS_AS(div(b, b, "floor"), Error);
  CHECK_THROWS_AS(div(f, f, "round"), Error);
  Tensor ic = i.clone();
  CHECK_THROWS_AS(div_(ic, i), Error);    // float result into an int tensor
  CHECK_THROWS_AS(add_(ic, 1.5), Error);  // float result into an int tensor
  CHECK_THROWS_AS(mul_(ic, f), Error);
  CHECK_THROWS_AS(atan2_(ic, i), Error);
  Tensor bc = b.clone();
  CHECK_THROWS_AS(add_(bc, i), Error);  // int result into a bool tensor
  CHECK(values(ic) == std::vector<double>{1, 2});
  CHECK_THROWS_AS(add(f, Tensor()), Error);
  CHECK(atan2(i, i).dtype() == kFloat32);
}

TEST_CASE("maximum and minimum propagate NaN", "[binary]") {
  for (ScalarType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    const Tensor a = make({kNan, 1.0, 2.0, kNan, -kInf}, dt), b = make({1.0, kNan, 3.0, kNan, 0.0}, dt);
    const auto mx = values(maximum(a, b)), mn = values(minimum(a, b));
    CHECK(std::isnan(mx[0]));
    CHECK(std::isnan(mx[1]));
    CHECK(mx[2] == 3);
    CHECK(std::isnan(mx[3]));
    CHECK(mx[4] == 0);
    CHECK(std::isnan(mn[0]));
    CHECK(std::isnan(mn[1]));
    CHECK(mn[2] == 2);
    CHECK(mn[4] == -kInf);
  }
  CHECK(values(maximum(bools({1, 0, 0}), bools({0, 0, 1}))) == std::vector<double>{1, 0, 1});
  CHECK(values(minimum(bools({1, 0, 1}), bools({0, 0, 1}))) == std::vector<double>{0, 0, 1});
  CHECK(maximum(bools({1}), bools({0})).dtype() == kBool);
}

TEST_CASE("comparisons", "[compare]") {
  for (ScalarType dt :
       {kFloat32, kFloat64, kFloat16, kBFloat16, kFloat8_e4m3fn, kFloat8_e5m2, kInt32, kInt64, kUInt8}) {
    INFO(dtype_name(dt));
    const Tensor a = make({1, 2, 3, 4}, dt), b = make({2, 2, 2, 5}, dt);
    CHECK(eq(a, b).dtype() == kBool);
    CHECK(values(eq(a, b)) == std::vector<double>{0, 1, 0, 0});
    CHECK(values(ne(a, b)) == std::vector<double>{1, 0, 1, 1});
    CHECK(values(lt(a, b)) == std::vector<double>{1, 0, 0, 1});
    CHECK(values(le(a, b)) == std::vector<double>{1, 1, 0, 1});
    CHECK(values(gt(a, b)) == std::vector<double>{0, 0, 1, 0});
    CHECK(values(ge(a, b)) == std::vector<double>{0, 1, 1, 0});
    CHECK(values(gt(a, 2)) == std::vector<double>{0, 0, 1, 1});
    CHECK(values(le(a, 2.5)) == std::vector<double>{1, 1, 0, 0});
  }
  // NaN follows IEEE: unordered, unequal to everything.
  const Tensor n = make({kNan, kNan, 1.0}, kFloat32), o = make({kNan, 1.0, kNan}, kFloat32);
  CHECK(values(eq(n, o)) == std::vector<double>{0, 0, 0});
  CHECK(values(ne(n, o)) == std::vector<double>{1, 1, 1});
  CHECK(values(lt(n, o)) == std::vector<double>{0, 0, 0});
  CHECK(values(ge(n, o)) == std::vector<double>{0, 0, 0});
  CHECK(values(eq(n, n)) == std::vector<double>{0, 0, 1});
  // Mixed dtypes compare in the promoted type.
  const Tensor i = from_vector(std::vector<int32_t>{1, 2, 3});
  CHECK(values(eq(i, make({1.0, 2.5, 3.0}, kFloat64))) == std::vector<double>{1, 0, 1});
  CHECK(values(lt(i, 2.5)) == std::vector<double>{1, 1, 0});
  CHECK(values(eq(bools({1, 0}), from_vector(std::vector<int64_t>{1, 1}))) == std::vector<double>{1, 0});
  // A scalar is rounded to the tensor's dtype first (as PyTorch): float16(0.1) == 0.1.
  CHECK(values(eq(make({0.1}, kFloat16), 0.1)) == std::vector<double>{1});
  // Broadcasting.
  const Tensor m = make({1, 2, 3, 4, 5, 6}, kFloat32, {2, 3});
  const Tensor r = gt(m, make({2, 5}, kFloat32, {2, 1}));
  CHECK(r.sizes() == Shape{2, 3});
  CHECK(values(r) == std::vector<double>{0, 0, 1, 0, 0, 1});
  CHECK(values(lt(m.t(), make({2, 5}, kFloat32))) == std::vector<double>{1, 1, 0, 0, 0, 0});
  CHECK(eq(make({}, kFloat32), 1.0).numel() == 0);
  CHECK_THROWS_AS(eq(make({1.0}, kFloat8_e4m3fn), make({1.0}, kFloat32)), Error);
}

TEST_CASE("comparison operators return bool tensors", "[compare]") {
  const Tensor a = make({1, 2, 3, 4}, kFloat32), b = make({2, 2, 2, 5}, kFloat32);
  const Tensor r = a == b;
  CHECK(r.dtype() == kBool);
  CHECK(r.sizes() == Shape{4});
  CHECK(values(a == b) == std::vector<double>{0, 1, 0, 0});
  CHECK(values(a != b) == std::vector<double>{1, 0, 1, 1});
  CHECK(values(a < b) == std::vector<double>{1, 0, 0, 1});
  CHECK(values(a <= b) == std::vector<double>{1, 1, 0, 1});
  CHECK(values(a > b) == std::vector<double>{0, 0, 1, 0});
  CHECK(values(a >= b) == std::vector<double>{0, 1, 1, 0});
  // A scalar on either side; on the left it is the left operand (1 < a is a > 1).
  CHECK(values(a == 2) == std::vector<double>{0, 1, 0, 0});
  CHECK(values(2 == a) == std::vector<double>{0, 1, 0, 0});
  CHECK(values(a != 2.0) == std::vector<double>{1, 0, 1, 1});
  CHECK(values(2.0 != a) == std::vector<double>{1, 0, 1, 1});
  CHECK(values(a < 2.5) == std::vector<double>{1, 1, 0, 0});
  CHECK(values(2.5 < a) == std::vector<double>{0, 0, 1, 1});
  CHECK(values(a <= 2) == std::vector<double>{1, 1, 0, 0});
  CHECK(values(2 <= a) == std::vector<double>{0, 1, 1, 1});
  CHECK(values(a > 3) == std::vector<double>{0, 0, 0, 1});
  CHECK(values(3 > a) == std::vector<double>{1, 1, 0, 0});
  CHECK(values(a >= 3) == std::vector<double>{0, 0, 1, 1});
  CHECK(values(3 >= a) == std::vector<double>{1, 1, 1, 0});
  // Broadcasting, promotion, bool scalars, and composing with the other operators.
  CHECK(values(make({1, 2, 3, 4}, kFloat32, {2, 2}) > make({1, 3}, kFloat32, {2, 1})) ==
        std::vector<double>{0, 1, 0, 1});
  CHECK(values(from_vector(std::vector<int32_t>{1, 2}) == make({1.0, 2.5}, kFloat64)) == std::vector<double>{1, 0});
  CHECK(values(bools({1, 0}) == true) == std::vector<double>{1, 0});
  CHECK(values((a * 2 > 4) == (a > 2)) == std::vector<double>{1, 1, 1, 1});
  CHECK(values(where(a > 2, a, -a)) == std::vector<double>{-1, -2, 3, 4});
  // NaN: unequal to everything, `!=` to everything.
  const Tensor n = make({kNan}, kFloat32);
  CHECK(values(n == n) == std::vector<double>{0});
  CHECK(values(n != n) == std::vector<double>{1});
  CHECK_THROWS_AS(make({1, 2}, kFloat32) == make({1, 2, 3}, kFloat32), Error);
}

TEST_CASE("equal: same shape and values", "[compare]") {
  const Tensor a = make({1, 2, 3, 4}, kFloat32, {2, 2});
  CHECK(equal(a, a));
  CHECK(equal(a, a.clone()));
  CHECK(a.equal(make({1, 2, 3, 4}, kFloat32, {2, 2})));
  CHECK_FALSE(equal(a, make({1, 2, 3, 5}, kFloat32, {2, 2})));
  // The shape must match exactly: no broadcasting, no flattening.
  CHECK_FALSE(equal(a, make({1, 2, 3, 4}, kFloat32)));
  CHECK_FALSE(equal(a, make({1, 2}, kFloat32)));
  CHECK_FALSE(equal(make({1}, kFloat32), scalar0(1)));
  CHECK(equal(scalar0(2), scalar0(2)));
  // Layouts do not matter, values do.
  CHECK(equal(a.t(), make({1, 3, 2, 4}, kFloat32, {2, 2})));
  CHECK(equal(a.t().contiguous(), a.t()));
  // Dtypes may differ: values are compared in the promoted dtype (as PyTorch's torch.equal).
  CHECK(equal(from_vector(std::vector<int64_t>{1, 2, 3, 4}, {2, 2}), a));
  CHECK(equal(a.to(kFloat16), a));
  CHECK_FALSE(equal(make({0.1}, kFloat16), make({0.1}, kFloat32)));
  CHECK(equal(bools({1, 0}), from_vector(std::vector<int32_t>{1, 0})));
  // NaN equals nothing, also itself; -0 equals +0.
  const Tensor n = make({1, kNan}, kFloat32);
  CHECK_FALSE(equal(n, n));
  CHECK(equal(make({-0.0}, kFloat32), make({0.0}, kFloat32)));
  // Empty tensors of one shape are equal.
  CHECK(equal(make({}, kFloat32, {0, 3}), make({}, kInt64, {0, 3})));
  CHECK_FALSE(equal(make({}, kFloat32, {0, 3}), make({}, kFloat32, {3, 0})));
  // Errors: undefined, other devices, meta, float8 mixed with another type.
  CHECK_THROWS_AS(equal(a, Tensor()), Error);
  const Tensor m = empty({2, 2}, {.device = Device::meta()});
  CHECK_THAT(error_of([&] { equal(m, m); }), Catch::Contains("equal") && Catch::Contains("meta"));
  CHECK_THROWS_AS(equal(a, m), Error);
  CHECK_THROWS_AS(equal(make({1}, kFloat8_e4m3fn), make({1, 2}, kFloat32)), Error);
}

TEST_CASE("logical and, or, xor", "[compare]") {
  const Tensor a = make({0.0, 0.0, 2.0, kNan}, kFloat32), b = from_vector(std::vector<int64_t>{0, 5, 0, 1});
  CHECK(logical_and(a, b).dtype() == kBool);
  CHECK(values(logical_and(a, b)) == std::vector<double>{0, 0, 0, 1});
  CHECK(values(logical_or(a, b)) == std::vector<double>{0, 1, 1, 1});
  CHECK(values(logical_xor(a, b)) == std::vector<double>{0, 1, 1, 0});
  const Tensor c = bools({1, 0, 1, 0}, {2, 2});
  CHECK(values(logical_and(c, bools({1, 0}))) == std::vector<double>{1, 0, 1, 0});
  CHECK(values(logical_or(c.t(), bools({0, 1}))) == std::vector<double>{1, 1, 0, 1});
  CHECK(values(logical_xor(make({1.0}, kFloat8_e5m2), bools({1, 0}))) == std::vector<double>{0, 1});
}

TEST_CASE("addcmul and addcdiv", "[ternary]") {
  const std::vector<double> x{1.0, -2.0, 0.5, 3.0}, y{2.0, 0.5, -1.5, 4.0}, z{0.5, 4.0, 2.0, -0.25};
  for (ScalarType dt : kFloatTypes) {
    INFO(dtype_name(dt));
    const Tensor a = make(x, dt), b = make(y, dt), c = make(z, dt);
    const auto xs = values(a), ys = values(b), zs = values(c);
    const auto m = values(addcmul(a, b, c, 0.5)), d = values(addcdiv(a, b, c, 0.5));
    const auto m1 = values(addcmul(a, b, c));
    for (int i = 0; i < 4; ++i) {
      CHECK(close(m[i], xs[i] + 0.5 * ys[i] * zs[i], tol_for(dt)));
      CHECK(close(d[i], xs[i] + 0.5 * ys[i] / zs[i], tol_for(dt)));
      CHECK(close(m1[i], xs[i] + ys[i] * zs[i], tol_for(dt)));
    }
    Tensor w = a.clone();
    const uint32_t v0 = w.version();
    addcmul_(w, b, c, 0.5);
    CHECK(w.version() > v0);
    CHECK(values(w) == m);
    Tensor q = a.clone();
    addcdiv_(q, b, c, 0.5);
    CHECK(values(q) == d);
  }
  // Broadcasting of all three operands.
  const Tensor r = addcmul(make({1, 2}, kFloat32, {2, 1}), make({1, 2, 3}, kFloat32), scalar0(2.0), 3);
  CHECK(r.sizes() == Shape{2, 3});
  CHECK(values(r) == std::vector<double>{7, 13, 19, 8, 14, 20});
  // Integers: addcmul works (integer value), addcdiv refuses; a float value is refused with ints.
  const Tensor i = from_vector(std::vector<int32_t>{1, 2});
  CHECK(values(addcmul(i, i, i, 2)) == std::vector<double>{3, 10});
  CHECK(addcmul(i, i, i).dtype() == kInt32);
  CHECK_THROWS_AS(addcdiv(i, i, i), Error);
  CHECK_THROWS_AS(addcmul(i, i, i, 0.5), Error);
  CHECK_THROWS_AS(addcmul(bools({1}), bools({1}), bools({1})), Error);
  // Promotion: float tensors with int operands.
  CHECK(addcdiv(make({1.0}, kFloat32), i, i).dtype() == kFloat32);
  CHECK(values(addcdiv(make({1.0, 1.0}, kFloat32), i, from_vector(std::vector<int32_t>{4, 4}))) ==
        std::vector<double>{1.25, 1.5});
}

TEST_CASE("lerp", "[ternary]") {
  const std::vector<double> s{0.0, 1.0, -2.0, 10.0}, e{1.0, 3.0, 2.0, -10.0}, w{0.25, 0.5, 0.75, 1.0};
  for (ScalarType dt : kFloatTypes) {
    INFO(dtype_name(dt));
    const Tensor a = make(s, dt), b = make(e, dt), t = make(w, dt);
    const auto as = values(a), bs = values(b), ws = values(t);
    const auto r = values(lerp(a, b, t));
    for (int i = 0; i < 4; ++i) CHECK(close(r[i], as[i] + ws[i] * (bs[i] - as[i]), tol_for(dt)));
    CHECK(r[3] == bs[3]);  // weight 1 gives the end exactly
    const auto rs = values(lerp(a, b, 0.3));
    for (int i = 0; i < 4; ++i) CHECK(close(rs[i], as[i] + 0.3 * (bs[i] - as[i]), tol_for(dt)));
    Tensor q = a.clone();
    const uint32_t v0 = q.version();
    lerp_(q, b, t);
    CHECK(q.version() > v0);
    CHECK(values(q) == r);
    Tensor q2 = a.clone();
    lerp_(q2, b, 0.3);
    CHECK(values(q2) == rs);
  }
  // The scalar weight is applied in float: lerp(0, 60000, 1e-6) = 0.06, where the float16-rounded
  // weight (1.013e-6, a subnormal) would give 0.0608.
  const auto hw = values(lerp(make({0.0}, kFloat16), make({60000.0}, kFloat16), 1e-6));
  CHECK(std::abs(hw[0] - 0.06) < 1e-4);
  // Broadcasting weight and end.
  const Tensor r =
      lerp(make({0, 0, 0, 0}, kFloat32, {2, 2}), make({4, 8}, kFloat32), make({0.5, 0.25}, kFloat32, {2, 1}));
  CHECK(values(r) == std::vector<double>{2, 4, 1, 2});
  CHECK_THROWS_AS(lerp(from_vector(std::vector<int32_t>{1}), from_vector(std::vector<int32_t>{2}), 0.5), Error);
}

TEST_CASE("where and masked_fill: random conditions over every element size, any layout", "[ternary]") {
  // Random conditions defeat a branch predictor; the kernels select bits without branches.
  const Tensor cond = gt(rand({67, 129}), 0.5);
  const std::vector<bool> cv = cond.to_vector<bool>();
  for (ScalarType dt : {kUInt8, kFloat16, kBFloat16, kFloat32, kFloat64, kInt64}) {
    INFO(dt);
    const Tensor a = mul(randn({67, 129}), 100.0).to(dt), b = mul(randn({67, 129}), 100.0).to(dt);
    const std::vector<double> av = values(a), bv = values(b);
    std::vector<double> chosen(av.size()), filled(av.size());
    for (size_t i = 0; i < av.size(); ++i) {
      chosen[i] = cv[i] ? av[i] : bv[i];
      filled[i] = cv[i] ? 7.0 : av[i];
    }
    CHECK(values(where(cond, a, b)) == chosen);
    CHECK(values(where(cond.t().contiguous().t(), a, b.t().contiguous().t())) == chosen);  // strided operands
    CHECK(values(masked_fill(a, cond, 7)) == filled);
    Tensor transposed = a.t().contiguous();
    Tensor view = transposed.t();  // a strided destination
    masked_fill_(view, cond, 7);
    CHECK(values(view) == filled);
  }
  // Condition bytes other than 0 and 1 (a bool blob from outside) count as true.
  std::vector<uint8_t> raw = {0, 1, 2, 255, 0};
  const Tensor stray = from_blob(raw.data(), {5}, {1}, kBool);
  CHECK(values(where(stray, ones({5}), zeros({5}))) == std::vector<double>{0, 1, 1, 1, 0});
  CHECK(values(masked_fill(zeros({5}), stray, 1)) == std::vector<double>{0, 1, 1, 1, 0});
}

TEST_CASE("where", "[ternary]") {
  const Tensor c = bools({1, 0, 1});
  const Tensor a = make({1, 2, 3}, kFloat32), b = make({-1, -2, -3}, kFloat32);
  Tensor r = where(c, a, b);
  CHECK(r.dtype() == kFloat32);
  CHECK(values(r) == std::vector<double>{1, -2, 3});
  // Broadcasting of all three: condition [2,1], a [3], b 0-dim.
  r = where(bools({1, 0}, {2, 1}), a, scalar0(9.0));
  CHECK(r.sizes() == Shape{2, 3});
  CHECK(values(r) == std::vector<double>{1, 2, 3, 9, 9, 9});
  // Scalar overloads and promotion.
  CHECK(values(where(c, 5, b)) == std::vector<double>{5, -2, 5});
  CHECK(where(c, 5, b).dtype() == kFloat32);
  CHECK(values(where(c, a, 0.5)) == std::vector<double>{1, 0.5, 3});
  const Tensor i = from_vector(std::vector<int32_t>{7, 8, 9});
  CHECK(where(c, i, b).dtype() == kFloat32);
  CHECK(values(where(c, i, b)) == std::vector<double>{7, -2, 9});
  CHECK(where(c, i, 1).dtype() == kInt32);
  CHECK(where(c, i, from_vector(std::vector<int64_t>{0, 0, 0})).dtype() == kInt64);
  CHECK(where(c, make({1, 2, 3}, kFloat16), 0.1).dtype() == kFloat16);
  // float8 and bool values.
  const Tensor e4 = make({1, 2, 3}, kFloat8_e4m3fn);
  CHECK(where(c, e4, make({0, 0, 0}, kFloat8_e4m3fn)).dtype() == kFloat8_e4m3fn);
  CHECK(values(where(c, e4, make({0, 0, 0}, kFloat8_e4m3fn))) == std::vector<double>{1, 0, 3});
  CHECK(values(where(c, bools({0, 0, 0}), bools({1, 1, 1}))) == std::vector<double>{0, 1, 0});
  // Non-contiguous operands.
  const Tensor m = make({1, 2, 3, 4}, kFloat64, {2, 2});
  CHECK(values(where(bools({1, 1, 0, 0}, {2, 2}).t(), m.t(), m)) == std::vector<double>{1, 2, 2, 4});
  // Errors: a non-bool condition, shapes that don't broadcast, float8 mixed with another type.
  CHECK_THROWS_AS(where(from_vector(std::vector<uint8_t>{1, 0, 1}), a, b), Error);
  CHECK_THROWS_AS(where(make({1, 0, 1}, kFloat32), a, b), Error);
  CHECK_THROWS_AS(where(c, a, make({1, 2}, kFloat32)), Error);
  CHECK_THROWS_AS(where(c, e4, a), Error);
  // Empty.
  CHECK(where(bools({}), make({}, kFloat32), 1.0).numel() == 0);
}

TEST_CASE("large binary inputs use the parallel path", "[binary]") {
  const int64_t rows = 500, cols = 401;  // 200500 elements
  std::vector<double> v(rows * cols), w(cols);
  for (int64_t k = 0; k < rows * cols; ++k) v[k] = static_cast<double>(k % 1000) * 0.5;
  for (int64_t j = 0; j < cols; ++j) w[j] = static_cast<double>(j) - 200;
  const Tensor a = make(v, kFloat32, {rows, cols}), b = make(w, kFloat32);
  const auto s = values(add(a, b, 2));  // broadcast row
  int64_t bad = 0;
  for (int64_t k = 0; k < rows * cols; ++k) bad += s[k] != v[k] + 2 * w[k % cols];
  CHECK(bad == 0);
  // Transposed large operand, comparison output, in place.
  const Tensor at = make(v, kFloat64, {cols, rows}).t();  // [rows, cols]
  const auto g = values(gt(at, b));
  bad = 0;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) bad += g[i * cols + j] != (v[j * rows + i] > w[j] ? 1.0 : 0.0);
  CHECK(bad == 0);
  Tensor c = a.clone();
  mul_(c, 3);
  const auto cv = values(c);
  bad = 0;
  for (int64_t k = 0; k < rows * cols; ++k) bad += cv[k] != v[k] * 3;
  CHECK(bad == 0);
  const auto wv = values(where(gt(a, 100.0), a, b));
  bad = 0;
  for (int64_t k = 0; k < rows * cols; ++k) bad += wv[k] != (v[k] > 100 ? v[k] : w[k % cols]);
  CHECK(bad == 0);
  // Integer division scan over a large divisor.
  const Tensor big = arange(1, 200001);
  CHECK(values(div(big, big, "floor")) == std::vector<double>(200000, 1.0));
}

TEST_CASE("zero-size binary inputs", "[binary]") {
  const Tensor z = make({}, kFloat32).view({0, 3});
  const Tensor r = z + make({1, 2, 3}, kFloat32);
  CHECK(r.sizes() == Shape{0, 3});
  CHECK(r.dtype() == kFloat32);
  CHECK((z * 2).sizes() == Shape{0, 3});
  CHECK(lt(z, 1).dtype() == kBool);
  CHECK(lt(z, 1).sizes() == Shape{0, 3});
  CHECK(addcmul(z, z, z).sizes() == Shape{0, 3});
  CHECK(div(from_vector(std::vector<int32_t>{}), from_vector(std::vector<int32_t>{}), "floor").numel() == 0);
  Tensor zz = z.clone();
  CHECK(add_(zz, 1.0).numel() == 0);
  CHECK((from_vector(std::vector<int32_t>{}) + 1.5).dtype() == kFloat32);
}
