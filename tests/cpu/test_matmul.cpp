// mm, bmm, addmm, baddbmm, matmul, linear, dot, mv, outer: values against naive products computed here in double,
// strided operands, out_dtype, zero-size shapes and every error case.
#include <catch2/catch.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <mixt/kernels/cpu/matmul.h>
#include <mixt/mixt.h>

#include "reference.h"
#include "ulps.h"

using namespace mixt;
namespace F = mixt::nn::functional;

namespace {

const ScalarType kFloatTypes[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kFloat8_e4m3fn, kFloat8_e5m2};
const ScalarType kIntTypes[] = {kInt32, kInt64, kUInt8, kInt8};

// A tensor of `sizes` in `dtype`: uniform in [-1, 1) for floats, integers in [-5, 5] for integer dtypes.
Tensor random_tensor(const Shape& sizes, ScalarType dtype, uint32_t seed) {
  if (sizes.empty()) return random_tensor({1}, dtype, seed).view(Shape{});  // 0-D
  std::mt19937 gen(seed);
  const auto n = static_cast<size_t>(sizes.numel());
  if (is_integral(dtype)) {
    std::uniform_int_distribution<int64_t> d(-5, 5);
    std::vector<int64_t> v(n);
    for (auto& x : v) x = d(gen);
    return from_vector(v, sizes).to(dtype);
  }
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  std::vector<double> v(n);
  for (auto& x : v) x = d(gen);
  return from_vector(v, sizes).to(dtype);
}

// `v` wrapped to the range of integer dtype `t` (two's complement), as PyTorch's integer GEMMs do.
double wrap_to(double v, ScalarType t) { return testing::wrap_to(t, v); }

// Naive numpy-rule matmul in double (vectors, matrices, broadcast batches) of the values `a` and `b` hold:
// the shared reference of tests/support/reference.h.
struct Reference {
  Shape shape;
  std::vector<double> values;
};
Reference naive_matmul(const Tensor& a, const Tensor& b) {
  const testing::ref::Ref r = testing::ref::matmul({a.sizes().vec(), a.to_vector<double>()},
                                                   {b.sizes().vec(), b.to_vector<double>()});
  return {Shape(r.sizes), r.v};
}

// Relative and absolute tolerance of a product of values in [-1, 1] returned in `dtype`.
struct Tolerance {
  double rtol, atol;
};
Tolerance tolerance_for(ScalarType dtype) {
  switch (dtype) {
    case kFloat64: return {1e-12, 1e-12};
    case kFloat32: return {1e-5, 1e-5};
    case kFloat16: return {1.5e-3, 1e-3};
    case kBFloat16: return {1e-2, 1e-2};
    case kFloat8_e4m3fn: return {0.07, 0.01};
    case kFloat8_e5m2: return {0.13, 0.01};
    default: return {0, 0};
  }
}

// Checks `got` against `expect` element by element (one assertion per tensor; the first mismatch is reported).
void check_values(const Tensor& got, const std::vector<double>& expect, Tolerance tol) {
  const std::vector<double> g = got.to_vector<double>();
  REQUIRE(g.size() == expect.size());
  std::string bad;
  for (size_t i = 0; i < g.size() && bad.empty(); ++i) {
    const double e = is_integral(got.dtype()) ? wrap_to(expect[i], got.dtype()) : expect[i];
    if (!(std::abs(g[i] - e) <= tol.atol + tol.rtol * std::abs(e)))
      bad = "element " + std::to_string(i) + ": got " + std::to_string(g[i]) + ", expected " + std::to_string(e);
  }
  INFO(got.describe() << " " << bad);
  CHECK(bad.empty());
}

// Checks got == naive_matmul(a, b) in shape and values.
void check_matmul(const Tensor& got, const Tensor& a, const Tensor& b, Tolerance tol) {
  const Reference r = naive_matmul(a, b);
  INFO("a " << a.describe() << ", b " << b.describe());
  CHECK(got.sizes() == r.shape);
  check_values(got, r.values, tol);
}

// Largest |got - expect|.
double max_error(const Tensor& got, const std::vector<double>& expect) {
  const std::vector<double> g = got.to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, std::abs(g[i] - expect[i]));
  return worst;
}

// Expects a mixt::Error from `op` whose message mentions `needle`.
template <class F>
void check_error_mentions(F&& f, const std::string& op, const std::string& needle) {
  try {
    f();
    FAIL("no error raised");
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(e.op() == op);
    CHECK(std::string(e.what()).find(needle) != std::string::npos);
  }
}

}  // namespace

TEST_CASE("mm matches a naive product for every dtype", "[matmul]") {
  const std::vector<std::array<int64_t, 3>> shapes = {{1, 1, 1}, {3, 5, 4}, {17, 33, 9}, {64, 70, 65}};
  std::vector<ScalarType> dtypes(std::begin(kFloatTypes), std::end(kFloatTypes));
  dtypes.insert(dtypes.end(), std::begin(kIntTypes), std::end(kIntTypes));
  uint32_t seed = 1;
  for (ScalarType dt : dtypes)
    for (auto [n, k, m] : shapes) {
      Tensor a = random_tensor({n, k}, dt, seed++), b = random_tensor({k, m}, dt, seed++);
      Tensor r = mm(a, b);
      CHECK(r.dtype() == dt);
      check_matmul(r, a, b, tolerance_for(dt));
    }
}

TEST_CASE("mm reads transposed and sliced operands", "[matmul]") {
  const int64_t n = 13, k = 21, m = 10;
  for (ScalarType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32}) {
    Tensor at = random_tensor({k, n}, dt, 11).t();                      // column-major
    Tensor a_pad = random_tensor({k + 3, n}, dt, 12).narrow(0, 1, k).t();  // column-major, ld > n
    Tensor b_cols = random_tensor({k, m + 5}, dt, 13).narrow(1, 2, m);     // row-major, ld > m
    Tensor b_step = random_tensor({k, 2 * m}, dt, 14).slice(1, 0, 2 * m, 2);  // no unit stride: copied
    Tensor bt = random_tensor({m, k}, dt, 15).t();
    INFO(dtype_name(dt));
    check_matmul(mm(at, b_cols), at, b_cols, tolerance_for(dt));
    check_matmul(mm(a_pad, b_step), a_pad, b_step, tolerance_for(dt));
    check_matmul(mm(a_pad, bt), a_pad, bt, tolerance_for(dt));
    check_matmul(mm(b_step.t(), at.t()), b_step.t(), at.t(), tolerance_for(dt));
    // Single rows and columns (strides of size-1 dims are arbitrary).
    Tensor row = random_tensor({k, 5}, dt, 16).select(1, 2).unsqueeze(0);  // [1, k], stride 5
    check_matmul(mm(row, b_cols), row, b_cols, tolerance_for(dt));
    Tensor col = random_tensor({k, 3}, dt, 17).narrow(1, 1, 1);  // [k, 1]
    check_matmul(mm(at, col), at, col, tolerance_for(dt));
  }
}

TEST_CASE("bmm matches per-batch products, small and large, with strided batches", "[matmul]") {
  for (ScalarType dt : {kFloat32, kFloat64, kFloat16, kFloat8_e4m3fn, kInt32, kInt8}) {
    INFO(dtype_name(dt));
    // Many small matrices (the batch is split across threads) and a few large ones (one BLAS call each).
    Tensor a = random_tensor({40, 4, 6}, dt, 21), b = random_tensor({40, 6, 5}, dt, 22);
    check_matmul(bmm(a, b), a, b, tolerance_for(dt));
    Tensor big_a = random_tensor({2, 80, 90}, dt, 23), big_b = random_tensor({2, 90, 70}, dt, 24);
    check_matmul(bmm(big_a, big_b), big_a, big_b, tolerance_for(dt));
    // Batch in the middle of memory, transposed matrices, an expanded (stride-0) batch.
    Tensor mid = random_tensor({4, 3, 6}, dt, 25).permute({1, 0, 2});   // [3, 4, 6]: ld 18, batch stride 6
    Tensor tr = random_tensor({3, 5, 6}, dt, 26).transpose(1, 2);       // [3, 6, 5] column-major
    Tensor ex = random_tensor({1, 6, 5}, dt, 27).expand({3, 6, 5});
    check_matmul(bmm(mid, tr), mid, tr, tolerance_for(dt));
    check_matmul(bmm(mid, ex), mid, ex, tolerance_for(dt));
  }
}

TEST_CASE("integer products wrap like the storage type", "[matmul]") {
  Tensor a = from_vector(std::vector<int32_t>{100000, 3}, {1, 2});
  Tensor b = from_vector(std::vector<int32_t>{100000, 7}, {2, 1});
  const int64_t exact = int64_t{100000} * 100000 + 21;
  CHECK(mm(a, b).item<int64_t>() == static_cast<int32_t>(static_cast<uint64_t>(exact)));
  Tensor u = from_vector(std::vector<uint8_t>{200, 100}, {1, 2});
  Tensor v = from_vector(std::vector<uint8_t>{2, 1}, {2, 1});
  CHECK(mm(u, v).item<int64_t>() == (400 + 100) % 256);
  Tensor l = from_vector(std::vector<int64_t>{int64_t{1} << 40, 1}, {1, 2});
  Tensor r = from_vector(std::vector<int64_t>{int64_t{1} << 20, 5}, {2, 1});
  CHECK(mm(l, r).item<int64_t>() == (int64_t{1} << 60) + 5);
}

TEST_CASE("out_dtype float32 keeps the f32 accumulator of narrow-float operands", "[matmul]") {
  for (ScalarType dt : {kBFloat16, kFloat16, kFloat8_e4m3fn}) {
    INFO(dtype_name(dt));
    Tensor a = random_tensor({24, 96}, dt, 31), b = random_tensor({96, 20}, dt, 32);
    const Reference ref = naive_matmul(a, b);
    Tensor wide = mm(a, b, kFloat32);
    Tensor narrow = mm(a, b);
    CHECK(wide.dtype() == kFloat32);
    CHECK(narrow.dtype() == dt);
    check_values(wide, ref.values, tolerance_for(kFloat32));
    CHECK(max_error(wide, ref.values) * 20 < max_error(narrow, ref.values));
    // The narrow result is the f32 accumulator rounded once.
    CHECK(narrow.to_vector<float>() == wide.to(dt).to_vector<float>());
  }
  Tensor a3 = random_tensor({2, 5, 40}, kBFloat16, 33), b2 = random_tensor({40, 3}, kBFloat16, 34);
  Tensor b3 = random_tensor({2, 40, 3}, kBFloat16, 35);
  Tensor bias = random_tensor({3}, kBFloat16, 36), bias32 = random_tensor({3}, kFloat32, 37);
  const Tolerance f32 = tolerance_for(kFloat32);
  Tensor r = matmul(a3, b2, kFloat32);
  CHECK(r.dtype() == kFloat32);
  check_matmul(r, a3, b2, f32);
  r = bmm(a3, b3, kFloat32);
  CHECK(r.dtype() == kFloat32);
  check_matmul(r, a3, b3, f32);
  Tensor w = random_tensor({3, 40}, kBFloat16, 38);
  r = F::linear(a3, w, Tensor(), kFloat32);
  CHECK(r.dtype() == kFloat32);
  check_matmul(r, a3, w.t(), f32);
  // A bias in the operands' dtype or in float32 is added to the f32 accumulator.
  const std::vector<double> xw = naive_matmul(a3, w.t()).values;
  std::vector<double> expect = xw, expect32 = xw;
  const auto bv = bias.to_vector<double>(), bv32 = bias32.to_vector<double>();
  for (size_t i = 0; i < expect.size(); ++i) {
    expect[i] += bv[i % 3];
    expect32[i] += bv32[i % 3];
  }
  r = F::linear(a3, w, bias, kFloat32);
  CHECK(r.dtype() == kFloat32);
  check_values(r, expect, f32);
  check_values(F::linear(a3, w, bias32, kFloat32), expect32, f32);
  CHECK(addmm(bias32, a3.select(0, 0), w.t(), 1, 1, kFloat32).dtype() == kFloat32);
  check_values(baddbmm(bias32, a3, w.t().unsqueeze(0).expand({2, 40, 3}), 1, 1, kFloat32), expect32, f32);
}

TEST_CASE("addmm and baddbmm: broadcast bias, alpha and beta", "[matmul]") {
  const int64_t n = 6, k = 7, m = 5, B = 3;
  for (ScalarType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32}) {
    INFO(dtype_name(dt));
    const bool integer = is_integral(dt);
    const Scalar beta = integer ? Scalar(2) : Scalar(0.5), alpha = integer ? Scalar(-3) : Scalar(1.5);
    Tensor a = random_tensor({n, k}, dt, 41), b = random_tensor({k, m}, dt, 42);
    const Reference ab = naive_matmul(a, b);
    for (const Shape& bias_shape : {Shape{m}, Shape{n, 1}, Shape{}, Shape{n, m}, Shape{1, m}}) {
      Tensor bias = random_tensor(bias_shape, dt, 43);
      const std::vector<double> bv = bias.to_vector<double>();
      std::vector<double> expect(ab.values.size());
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j) {
          const int64_t bi = bias_shape.size() == 2 ? (bias_shape[0] == 1 ? 0 : i) : 0;
          const int64_t bj = bias_shape.size() >= 1 && bias_shape.back() != 1 ? j : 0;
          const double bval = bv[bi * (bias_shape.size() >= 1 ? bias_shape.back() : 1) + bj];
          expect[i * m + j] = beta.to_double() * bval + alpha.to_double() * ab.values[i * m + j];
        }
      INFO("bias " << bias_shape.str());
      Tensor r = addmm(bias, a, b, beta, alpha);
      CHECK(r.sizes() == Shape{n, m});
      check_values(r, expect, tolerance_for(dt));
    }
    Tensor ba = random_tensor({B, n, k}, dt, 44), bb = random_tensor({B, k, m}, dt, 45);
    const Reference bab = naive_matmul(ba, bb);
    for (const Shape& bias_shape : {Shape{m}, Shape{B, 1, m}, Shape{B, n, m}}) {
      Tensor bias = random_tensor(bias_shape, dt, 46);
      Tensor full_bias = bias.expand({B, n, m}).contiguous();
      const std::vector<double> bv = full_bias.to_vector<double>();
      std::vector<double> expect(bv.size());
      for (size_t i = 0; i < bv.size(); ++i)
        expect[i] = beta.to_double() * bv[i] + alpha.to_double() * bab.values[i];
      INFO("bias " << bias_shape.str());
      check_values(baddbmm(bias, ba, bb, beta, alpha), expect, tolerance_for(dt));
    }
  }
}

TEST_CASE("beta = 0 ignores the bias, NaN included", "[matmul]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Tensor a = random_tensor({4, 3}, kFloat32, 51), b = random_tensor({3, 2}, kFloat32, 52);
  Tensor bias = from_vector(std::vector<float>(8, static_cast<float>(nan)), {4, 2});
  std::vector<double> expect = naive_matmul(a, b).values;
  for (double& v : expect) v *= 2;
  check_values(addmm(bias, a, b, 0, 2), expect, tolerance_for(kFloat32));
  Tensor bias3 = from_vector(std::vector<double>(2, nan), {2});
  Tensor ba = random_tensor({2, 4, 3}, kFloat64, 53), bb = random_tensor({2, 3, 2}, kFloat64, 54);
  check_values(baddbmm(bias3, ba, bb, 0.0, 1.0), naive_matmul(ba, bb).values, tolerance_for(kFloat64));
  Tensor e = from_vector(std::vector<float>{}, {4, 0});
  Tensor f = from_vector(std::vector<float>{}, {0, 2});
  check_values(addmm(bias, e, f, 0, 1), std::vector<double>(8, 0.0), {0, 0});
}

TEST_CASE("zero-size products", "[matmul]") {
  for (ScalarType dt : {kFloat32, kFloat16, kInt64}) {
    INFO(dtype_name(dt));
    Tensor r = mm(random_tensor({0, 3}, dt, 1), random_tensor({3, 4}, dt, 2));
    CHECK(r.sizes() == Shape{0, 4});
    CHECK(r.dtype() == dt);
    CHECK(mm(random_tensor({2, 3}, dt, 1), random_tensor({3, 0}, dt, 2)).sizes() == Shape{2, 0});
    Tensor z = mm(random_tensor({2, 0}, dt, 3), random_tensor({0, 3}, dt, 4));
    CHECK(z.sizes() == Shape{2, 3});
    check_values(z, std::vector<double>(6, 0.0), {0, 0});
    Tensor bias = from_vector(std::vector<double>{1, 2, 3}).to(dt);
    check_values(addmm(bias, random_tensor({2, 0}, dt, 5), random_tensor({0, 3}, dt, 6), 2, 1),
                 {2, 4, 6, 2, 4, 6}, {0, 0});
    CHECK(bmm(random_tensor({0, 2, 3}, dt, 7), random_tensor({0, 3, 4}, dt, 8)).sizes() == Shape{0, 2, 4});
    check_values(bmm(random_tensor({2, 1, 0}, dt, 9), random_tensor({2, 0, 2}, dt, 10)), {0, 0, 0, 0}, {0, 0});
    CHECK(matmul(random_tensor({0, 2, 3}, dt, 11), random_tensor({3}, dt, 12)).sizes() == Shape{0, 2});
    CHECK(dot(random_tensor({0}, dt, 13), random_tensor({0}, dt, 14)).item<double>() == 0.0);
  }
}

TEST_CASE("matmul handles every rank combination", "[matmul]") {
  const int64_t n = 4, k = 5, m = 3;
  const std::vector<std::pair<Shape, Shape>> cases = {
      {{k}, {k}},                   // dot
      {{n, k}, {k}},                // mv
      {{k}, {k, m}},                // vector @ matrix
      {{n, k}, {k, m}},             // mm
      {{2, n, k}, {k}},             // batch @ vector (folded)
      {{2, n, k}, {k, m}},          // batch @ matrix (folded)
      {{k}, {2, k, m}},             // vector @ batch
      {{n, k}, {2, k, m}},          // matrix @ batch
      {{2, n, k}, {2, k, m}},       // bmm
      {{2, 1, n, k}, {3, k, m}},    // broadcast batch
      {{1, 3, n, k}, {2, 1, k, m}}, // broadcast on both sides
      {{2, 3, n, k}, {k}},          // 4-D @ vector
      {{k}, {2, 3, k, m}},          // vector @ 4-D
  };
  for (ScalarType dt : {kFloat32, kFloat64, kBFloat16, kInt32}) {
    uint32_t seed = 60;
    for (const auto& [as, bs] : cases) {
      Tensor a = random_tensor(as, dt, seed++), b = random_tensor(bs, dt, seed++);
      INFO(dtype_name(dt));
      Tensor r = matmul(a, b);
      CHECK(r.dtype() == dt);
      check_matmul(r, a, b, tolerance_for(dt));
    }
  }
  // Non-contiguous batched operands and the Tensor method.
  Tensor a = random_tensor({3, n, 2, k}, kFloat32, 90).transpose(1, 2);  // [3, 2, n, k]
  Tensor b = random_tensor({m, k}, kFloat32, 91).t();
  check_matmul(a.matmul(b), a, b, tolerance_for(kFloat32));
  check_matmul(matmul(b.t(), a.transpose(-1, -2)), b.t(), a.transpose(-1, -2), tolerance_for(kFloat32));
}

TEST_CASE("linear with and without bias", "[matmul]") {
  for (ScalarType dt : {kFloat32, kFloat64, kFloat16}) {
    INFO(dtype_name(dt));
    Tensor x = random_tensor({2, 3, 5}, dt, 71), w = random_tensor({4, 5}, dt, 72), bias = random_tensor({4}, dt, 73);
    const Reference xw = naive_matmul(x, w.t());
    Tensor r = F::linear(x, w);
    CHECK(r.sizes() == Shape{2, 3, 4});
    CHECK(r.dtype() == dt);
    check_values(r, xw.values, tolerance_for(dt));
    std::vector<double> expect = xw.values;
    const auto bv = bias.to_vector<double>();
    for (size_t i = 0; i < expect.size(); ++i) expect[i] += bv[i % 4];
    r = F::linear(x, w, bias);
    CHECK(r.sizes() == Shape{2, 3, 4});
    check_values(r, expect, tolerance_for(dt));
    // 2-D and 1-D inputs.
    Tensor x2 = x.select(0, 1);
    check_values(F::linear(x2, w, bias), std::vector<double>(expect.begin() + 12, expect.end()), tolerance_for(dt));
    Tensor x1 = x2.select(0, 2);
    Tensor r1 = F::linear(x1, w, bias);
    CHECK(r1.sizes() == Shape{4});
    check_values(r1, std::vector<double>(expect.begin() + 20, expect.end()), tolerance_for(dt));
  }
}

TEST_CASE("linear takes any bias that broadcasts to its output, as PyTorch does", "[matmul]") {
  // PyTorch adds the bias to the output [*, out] with broadcasting (its autocast test list calls linear
  // with an [8, 8] bias); the bias never grows the output. The CPU's fused kernel, the composite (meta,
  // and a CUDA build's fallback) and the meta rule agree.
  const OpEntry& e = op_entry(OpId::linear);
  const Tensor w = random_tensor({8, 6}, kFloat32, 81);
  const Tensor x2 = random_tensor({8, 6}, kFloat32, 82), x3 = random_tensor({2, 3, 6}, kFloat32, 83);
  const std::vector<std::pair<Tensor, Shape>> cases = {
      {x2, {8, 8}}, {x2, {8, 1}}, {x2, {1, 8}}, {x3, {3, 8}}, {x3, {2, 1, 8}}, {x3, {2, 3, 1}}, {x3, {1, 1, 8}}};
  uint32_t seed = 84;
  for (const auto& [x, bias_shape] : cases) {
    for (ScalarType dt : {kFloat32, kBFloat16}) {
      INFO("x " << x.sizes() << ", bias " << bias_shape << ", " << dtype_name(dt));
      const Tensor xd = x.to(dt), wd = w.to(dt), b = random_tensor(bias_shape, dt, seed++);
      const Tensor y = F::linear(xd, wd, b);
      Shape want_shape = x.sizes();
      want_shape[want_shape.size() - 1] = 8;
      CHECK(y.sizes() == want_shape);
      CHECK(y.dtype() == dt);
      const std::vector<double> want =
          add(matmul(xd.to(kFloat64), wd.to(kFloat64).t()), b.to(kFloat64)).to_vector<double>();
      check_values(y, want, tolerance_for(dt));
      // The composite the other backends run gives the same values.
      OpCall c(OpId::linear);
      c.push(xd);
      c.push(wd);
      c.push(b);
      e.composite(c, DispatchKeySet(DispatchKey::CPU));
      check_values(c.out[0], want, tolerance_for(dt));
      // The meta rule: the output's shape and dtype.
      const Tensor m = F::linear(xd.to(Device::meta()), wd.to(Device::meta()), b.to(Device::meta()));
      CHECK(m.sizes() == want_shape);
      CHECK(m.dtype() == dt);
      // float32 out_dtype from narrow operands, with a bias in either dtype.
      if (dt == kBFloat16) {
        check_values(F::linear(xd, wd, b, kFloat32), want, tolerance_for(kFloat32));
        check_values(F::linear(xd, wd, b.to(kFloat32), kFloat32), want, tolerance_for(kFloat32));
      }
    }
  }
  // The bias's gradient sums the output's gradient over the dims it was broadcast along.
  for (const auto& [x, bias_shape] : cases) {
    INFO("x " << x.sizes() << ", bias " << bias_shape);
    const Tensor b = random_tensor(bias_shape, kFloat64, 90).set_requires_grad(true);
    const Tensor xl = x.to(kFloat64).set_requires_grad(true);
    const Tensor y = F::linear(xl, w.to(kFloat64), b);
    const Tensor g = random_tensor(y.sizes(), kFloat64, 91);
    sum(mul(y, g)).backward();
    REQUIRE(b.grad().defined());
    CHECK(b.grad().sizes() == bias_shape);
    Shape dims;
    const int64_t lead = y.dim() - static_cast<int64_t>(bias_shape.size());
    for (int64_t d = 0; d < y.dim(); ++d)
      if (d < lead || bias_shape[static_cast<int>(d - lead)] == 1) dims.push_back(d);
    const Tensor want = dims.empty() ? g : sum(g, dims, /*keepdim=*/true).reshape(bias_shape);  // empty: every dim
    check_values(b.grad(), want.to_vector<double>(), tolerance_for(kFloat64));
    check_values(xl.grad(), matmul(g, w.to(kFloat64)).to_vector<double>(), tolerance_for(kFloat64));
  }
  // A bias that does not broadcast to the output, or would grow it, is refused naming linear and both
  // shapes, on the CPU and on meta alike.
  for (Device dev : {Device::cpu(), Device::meta()}) {
    INFO(dev.str());
    const Tensor xd = x3.to(dev), wd = w.to(dev);
    check_error_mentions([&] { F::linear(xd, wd, random_tensor({4, 8}, kFloat32, 92).to(dev)); }, "linear",
                         "[4, 8]");
    check_error_mentions([&] { F::linear(xd, wd, random_tensor({4, 8}, kFloat32, 92).to(dev)); }, "linear",
                         "[2, 3, 8]");
    check_error_mentions([&] { F::linear(xd, wd, random_tensor({1, 2, 3, 8}, kFloat32, 93).to(dev)); }, "linear",
                         "[1, 2, 3, 8]");
    check_error_mentions([&] { F::linear(xd, wd, random_tensor({6}, kFloat32, 94).to(dev)); }, "linear", "[6]");
  }
}

TEST_CASE("dot, mv and outer", "[matmul]") {
  Tensor a = from_vector(std::vector<float>{1, 2, 3});
  Tensor b = from_vector(std::vector<float>{4, -5, 6});
  Tensor d = dot(a, b);
  CHECK(d.dim() == 0);
  CHECK(d.dtype() == kFloat32);
  CHECK(d.item<double>() == 4 - 10 + 18);
  CHECK(dot(a.to(kFloat16), b.to(kFloat16)).item<double>() == 12);
  CHECK(dot(a.to(kInt64), b.to(kInt64)).item<int64_t>() == 12);

  Tensor mat = from_vector(std::vector<double>{1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor v = mv(mat, b.to(kFloat64));
  CHECK(v.sizes() == Shape{2});
  CHECK(v.to_vector<double>() == std::vector<double>{12, 27});
  CHECK(mv(mat.t(), from_vector(std::vector<double>{1, -1})).to_vector<double>() == std::vector<double>{-3, -3, -3});

  Tensor o = outer(a, from_vector(std::vector<float>{1, 10}));
  CHECK(o.sizes() == Shape{3, 2});
  CHECK(o.to_vector<float>() == std::vector<float>{1, 10, 2, 20, 3, 30});
  Tensor mixed = outer(from_vector(std::vector<int32_t>{2, 3}), from_vector(std::vector<double>{0.5, 1}));
  CHECK(mixed.dtype() == kFloat64);
  CHECK(mixed.to_vector<double>() == std::vector<double>{1, 2, 1.5, 3});
  CHECK(outer(from_vector(std::vector<int64_t>{2, 3}), from_vector(std::vector<int64_t>{4})).to_vector<int64_t>() ==
        std::vector<int64_t>{8, 12});
}

TEST_CASE("matmul family errors", "[matmul][errors]") {
  Tensor a23 = random_tensor({2, 3}, kFloat32, 1), a45 = random_tensor({4, 5}, kFloat32, 2);
  Tensor a34 = random_tensor({3, 4}, kFloat32, 3), d34 = random_tensor({3, 4}, kFloat64, 4);
  Tensor b3 = random_tensor({2, 2, 3}, kFloat32, 5), c3 = random_tensor({3, 3, 4}, kFloat32, 6);
  Tensor v3 = random_tensor({3}, kFloat32, 7), v4 = random_tensor({4}, kFloat32, 8);

  // Mismatched inner dims: the message shows both shapes.
  check_error_mentions([&] { mm(a23, a45); }, "mm", "[2, 3] and [4, 5]");
  check_error_mentions([&] { matmul(a23, a45); }, "matmul", "[2, 3] and [4, 5]");
  CHECK_THROWS_AS(bmm(b3, b3), Error);
  CHECK_THROWS_AS(addmm(v4, a23, a45), Error);
  CHECK_THROWS_AS(matmul(v3, v4), Error);
  CHECK_THROWS_AS(matmul(b3, v4), Error);
  CHECK_THROWS_AS(dot(v3, v4), Error);
  CHECK_THROWS_AS(mv(a23, v4), Error);
  CHECK_THROWS_AS(F::linear(a23, a45), Error);

  // Mismatched dtypes: no silent promotion.
  check_error_mentions([&] { mm(a23, d34); }, "mm", "same dtype");
  CHECK_THROWS_AS(bmm(b3, c3.to(kFloat16)), Error);
  CHECK_THROWS_AS(matmul(a23, d34), Error);
  CHECK_THROWS_AS(dot(v3, v3.to(kFloat64)), Error);
  CHECK_THROWS_AS(mv(a34.t(), v3.to(kBFloat16)), Error);
  CHECK_THROWS_AS(F::linear(a34.t(), d34.t()), Error);
  CHECK_THROWS_AS(addmm(v4.to(kInt32), a23, a34), Error);  // bias of a third dtype

  // Wrong ranks.
  CHECK_THROWS_AS(mm(b3, a34), Error);
  CHECK_THROWS_AS(mm(v3, a34), Error);
  CHECK_THROWS_AS(bmm(a23, a34), Error);
  CHECK_THROWS_AS(baddbmm(v4, a23, a34), Error);
  CHECK_THROWS_AS(matmul(random_tensor({}, kFloat32, 14), a34), Error);
  CHECK_THROWS_AS(dot(a23, a23), Error);
  CHECK_THROWS_AS(mv(v3, v3), Error);
  CHECK_THROWS_AS(outer(a23, v3), Error);
  CHECK_THROWS_AS(F::linear(a23, v3), Error);
  CHECK_THROWS_AS(F::linear(random_tensor({}, kFloat32, 14), a34), Error);
  CHECK_THROWS_AS(F::linear(b3, a34.t(), a23), Error);  // a bias [2, 3] does not broadcast to [2, 2, 4]

  // Batch and bias shapes.
  CHECK_THROWS_AS(bmm(b3, c3), Error);  // batch 2 vs 3
  check_error_mentions([&] { matmul(random_tensor({2, 2, 3}, kFloat32, 9), random_tensor({3, 3, 4}, kFloat32, 10)); },
                       "matmul", "cannot be broadcast");
  check_error_mentions([&] { addmm(random_tensor({3, 4}, kFloat32, 11), a23, a34); }, "addmm", "cannot be broadcast");
  CHECK_THROWS_AS(baddbmm(random_tensor({3, 1, 1}, kFloat32, 12), b3, random_tensor({2, 3, 4}, kFloat32, 13)), Error);

  // out_dtype: only float32 from a narrow float.
  check_error_mentions([&] { mm(a23, a34, kFloat16); }, "mm", "out_dtype");
  CHECK_THROWS_AS(mm(a23, a34, kFloat64), Error);
  CHECK_THROWS_AS(mm(a23.to(kBFloat16), a34.to(kBFloat16), kFloat64), Error);
  CHECK_THROWS_AS(mm(a23.to(kFloat16), a34.to(kFloat16), kBFloat16), Error);
  CHECK_THROWS_AS(mm(a23.to(kInt32), a34.to(kInt32), kFloat32), Error);
  CHECK_THROWS_AS(matmul(a23.to(kInt64), a34.to(kInt64), kFloat32), Error);
  CHECK_THROWS_AS(F::linear(a23, a34.t(), Tensor(), kFloat16), Error);
  CHECK(mm(a23, a34, kFloat32).dtype() == kFloat32);  // the operands' own dtype is accepted

  // Unsupported dtypes and scalars.
  check_error_mentions([&] { mm(a23.to(kBool), a34.to(kBool)); }, "mm", "bool");
  CHECK_THROWS_AS(outer(v3.to(kBool), v3.to(kBool)), Error);
  CHECK_THROWS_AS(addmm(a34.to(kInt32), a23.to(kInt32), a34.to(kInt32), 0.5, 1), Error);
  CHECK_THROWS_AS(baddbmm(c3.to(kInt32), c3.to(kInt32).narrow(2, 0, 3), c3.to(kInt32), 1, 1.5), Error);
}

TEST_CASE("linear_backward: the gradients asked for, equal to the separate ops", "[matmul][linear_backward]") {
  for (ScalarType dt : {kFloat32, kFloat64, kFloat16, kBFloat16, kInt32}) {
    INFO(dtype_name(dt));
    const Tensor g = random_tensor({2, 3, 5}, dt, 40), x = random_tensor({2, 3, 8}, dt, 41);
    const Tensor w = random_tensor({5, 8}, dt, 42);
    const F::LinearGrads all = F::linear_backward(g, x, w, true, true, true);
    const Tensor g2 = g.reshape({6, 5}), x2 = x.reshape({6, 8});
    // The products run through mm's own path: the same bits.
    CHECK(all.input.sizes() == x.sizes());
    CHECK(all.input.to_vector<double>() == mm(g2, w).reshape(x.sizes()).to_vector<double>());
    CHECK(all.weight.sizes() == Shape{5, 8});
    CHECK(all.weight.to_vector<double>() == mm(g2.t(), x2).to_vector<double>());
    // The bias gradient: column sums of g (in the accumulate type, rounded once).
    CHECK(all.bias.dtype() == dt);
    check_values(all.bias, sum(g2.to(kFloat64), {0}).to_vector<double>(), tolerance_for(dt));
    // Only what is asked for is computed.
    const F::LinearGrads w_only = F::linear_backward(g, x, w, false, true, false);
    CHECK((!w_only.input.defined() && w_only.weight.defined() && !w_only.bias.defined()));
    const F::LinearGrads b_only = F::linear_backward(g, x, w, false, false, true);
    CHECK((!b_only.input.defined() && !b_only.weight.defined() && b_only.bias.defined()));
    const F::LinearGrads defaults = F::linear_backward(g, x, w);
    CHECK((defaults.input.defined() && defaults.weight.defined() && !defaults.bias.defined()));
  }
  // A transposed grad_output and a 1-D input (one row).
  const Tensor gt = random_tensor({5, 7}, kFloat32, 43).t(), x = random_tensor({7, 4}, kFloat32, 44);
  const Tensor w = random_tensor({5, 4}, kFloat32, 45);
  const F::LinearGrads r = F::linear_backward(gt, x, w, true, true, true);
  check_matmul(r.input, gt, w, tolerance_for(kFloat32));
  check_matmul(r.weight, gt.t(), x, tolerance_for(kFloat32));
  check_values(r.bias, sum(gt.to(kFloat64), {0}).to_vector<double>(), tolerance_for(kFloat32));
  const Tensor x1 = random_tensor({4}, kFloat32, 46), g1 = random_tensor({5}, kFloat32, 47);
  const F::LinearGrads one = F::linear_backward(g1, x1, w, true, true, true);
  CHECK(one.input.sizes() == Shape{4});
  check_matmul(one.weight, g1.unsqueeze(1), x1.unsqueeze(0), tolerance_for(kFloat32));
  CHECK(one.bias.to_vector<float>() == g1.to_vector<float>());
}

TEST_CASE("linear_backward: the CPU's (and CUDA's) kernel beside the composite, which it equals",
          "[matmul][linear_backward][composite]") {
  const OpEntry& e = op_entry(OpId::linear_backward);
  CHECK(e.composite != nullptr);
  CHECK(e.has(op_flags::BackwardRaises));
  CHECK_FALSE(e.has(op_flags::Diff));
  CHECK_FALSE(e.runs_composite(DispatchKey::CPU));
  CHECK(e.runs_composite(DispatchKey::Meta));
  CHECK(e.runs_composite(DispatchKey::CUDA) == !cuda::is_compiled());
  for (ScalarType dt : {kFloat32, kFloat64, kBFloat16, kFloat16, kFloat8_e4m3fn, kInt64, kUInt8}) {
    INFO(dtype_name(dt));
    const Tensor g = random_tensor({3, 4, 6}, dt, 70), x = random_tensor({3, 4, 5}, dt, 71);
    const Tensor w = random_tensor({6, 5}, dt, 72);
    const F::LinearGrads kernel = F::linear_backward(g, x, w, true, true, true);
    OpCall c(OpId::linear_backward);
    c.push(g);
    c.push(x);
    c.push(w);
    c.attrs.get<attrs::LinearBackward>().bias_grad = true;
    e.composite(c, DispatchKeySet(DispatchKey::CPU));
    // The same GEMMs; the bias gradient summed in the accumulate type either way (the order
    // of the float32 sums may differ, so narrow results may differ in their last place).
    CHECK(kernel.input.to_vector<double>() == c.out[0].to_vector<double>());
    CHECK(kernel.weight.to_vector<double>() == c.out[1].to_vector<double>());
    CHECK(c.out[2].dtype() == dt);
    check_values(kernel.bias, c.out[2].to_vector<double>(), tolerance_for(dt));
  }
}

TEST_CASE("linear_backward: the bias gradient is deterministic across threads", "[matmul][linear_backward]") {
  const Tensor g = random_tensor({4096, 70}, kFloat32, 48), x = random_tensor({4096, 3}, kFloat32, 49);
  const Tensor w = random_tensor({70, 3}, kFloat32, 50);
  const std::vector<float> first = F::linear_backward(g, x, w, false, false, true).bias.to_vector<float>();
  for (int i = 0; i < 3; ++i) CHECK(F::linear_backward(g, x, w, false, false, true).bias.to_vector<float>() == first);
  // Each column summed in row order in float32.
  const std::vector<float> gv = g.to_vector<float>();
  std::vector<float> want(70, 0.0f);
  for (int64_t r = 0; r < 4096; ++r)
    for (int64_t o = 0; o < 70; ++o) want[static_cast<size_t>(o)] += gv[static_cast<size_t>(r * 70 + o)];
  CHECK(first == want);
}

TEST_CASE("linear_backward: zero sizes", "[matmul][linear_backward]") {
  const F::LinearGrads rows0 = F::linear_backward(zeros({0, 5}), zeros({0, 8}), ones({5, 8}), true, true, true);
  CHECK(rows0.input.sizes() == Shape{0, 8});
  CHECK(rows0.weight.to_vector<float>() == std::vector<float>(40, 0.0f));
  CHECK(rows0.bias.to_vector<float>() == std::vector<float>(5, 0.0f));
  const F::LinearGrads in0 = F::linear_backward(ones({3, 5}), zeros({3, 0}), zeros({5, 0}), true, true, true);
  CHECK((in0.input.sizes() == Shape{3, 0} && in0.weight.sizes() == Shape{5, 0}));
  CHECK(in0.bias.to_vector<float>() == std::vector<float>(5, 3.0f));
  const F::LinearGrads out0 = F::linear_backward(ones({3, 0}), ones({3, 4}), zeros({0, 4}), true, true, true);
  CHECK(out0.input.to_vector<float>() == std::vector<float>(12, 0.0f));
  CHECK((out0.weight.sizes() == Shape{0, 4} && out0.bias.sizes() == Shape{0}));
}

TEST_CASE("linear_backward: bad inputs name the op and the shapes, on the CPU and on meta",
          "[matmul][linear_backward][errors]") {
  for (Device dev : {Device::cpu(), Device::meta()}) {
    INFO(dev.str());
    auto t = [&](const Shape& s, ScalarType dt = kFloat32) { return zeros(s, {.dtype = dt}).to(dev); };
    auto lb = [&](const Tensor& g, const Tensor& x, const Tensor& w) { F::linear_backward(g, x, w, true, true, true); };
    check_error_mentions([&] { lb(t({2, 3, 5}), t({2, 3, 8}), t({5, 7})); }, "linear_backward", "[2, 3, 8] and w");
    check_error_mentions([&] { lb(t({2, 5}), t({2, 8}), t({40})); }, "linear_backward", "2-D weight");
    check_error_mentions([&] { lb(t({2, 3, 4}), t({2, 3, 8}), t({5, 8})); }, "linear_backward", "[2, 3, 4]");
    check_error_mentions([&] { lb(t({2, 4, 5}), t({2, 3, 8}), t({5, 8})); }, "linear_backward", "differ in dim 1");
    check_error_mentions([&] { lb(t({6, 5}), t({2, 3, 8}), t({5, 8})); }, "linear_backward", "[6, 5]");
    check_error_mentions([&] { lb(t({2, 5}, kFloat64), t({2, 8}), t({5, 8})); }, "linear_backward", "float64");
    check_error_mentions([&] { lb(t({2, 5}, kBool), t({2, 8}, kBool), t({5, 8}, kBool)); }, "linear_backward", "bool");
    check_error_mentions([&] { lb(t({}), t({}), t({5, 8})); }, "linear_backward", "0-D");
  }
  // On meta: the shapes and dtypes, no data.
  const Device m = Device::meta();
  const F::LinearGrads r =
      F::linear_backward(zeros({2, 3, 5}, {.dtype = kBFloat16}).to(m), zeros({2, 3, 8}, {.dtype = kBFloat16}).to(m),
                         zeros({5, 8}, {.dtype = kBFloat16}).to(m), true, false, true);
  CHECK((r.input.is_meta() && r.input.sizes() == Shape{2, 3, 8} && r.input.dtype() == kBFloat16));
  CHECK(!r.weight.defined());
  CHECK((r.bias.is_meta() && r.bias.sizes() == Shape{5} && r.bias.dtype() == kBFloat16));
}

TEST_CASE("linear_backward: autograd through linear computes the old formula's gradients",
          "[matmul][linear_backward][autograd]") {
  for (ScalarType dt : {kFloat32, kFloat64, kBFloat16}) {
    INFO(dtype_name(dt));
    Tensor x = random_tensor({2, 3, 8}, dt, 51), w = random_tensor({5, 8}, dt, 52), b = random_tensor({5}, dt, 53);
    const Tensor g = random_tensor({2, 3, 5}, dt, 54);
    for (Tensor* t : {&x, &w, &b}) t->requires_grad_();
    F::linear(x, w, b).backward(g);
    const Tensor g2 = g.reshape({6, 5});
    CHECK(x.grad().to_vector<double>() == mm(g2, w.detach()).reshape({2, 3, 8}).to_vector<double>());
    CHECK(w.grad().to_vector<double>() == mm(g2.t(), x.detach().reshape({6, 8})).to_vector<double>());
    check_values(b.grad(), sum(g2.to(kFloat64), {0}).to_vector<double>(), tolerance_for(dt));
    CHECK(b.grad().dtype() == dt);
  }
  // Frozen weight: only the input's and the bias's gradients.
  {
    Tensor x = random_tensor({4, 3}, kFloat32, 55), b = random_tensor({2}, kFloat32, 56);
    const Tensor w = random_tensor({2, 3}, kFloat32, 57);
    x.requires_grad_();
    b.requires_grad_();
    sum(F::linear(x, w, b)).backward();
    check_values(x.grad(), mm(ones({4, 2}), w).to_vector<double>(), tolerance_for(kFloat32));
    CHECK(b.grad().to_vector<float>() == std::vector<float>{4.0f, 4.0f});
    CHECK(!w.grad().defined());
  }
  // out_dtype float32 from bfloat16: the bias gradient sums the float32 grad_output (not rounded first);
  // a 0-D bias gets the sum of everything.
  {
    Tensor x = random_tensor({3, 4}, kBFloat16, 58), w = random_tensor({2, 4}, kBFloat16, 59);
    Tensor b = random_tensor({2}, kBFloat16, 60), b0 = random_tensor({}, kFloat32, 61);
    for (Tensor* t : {&x, &w, &b, &b0}) t->requires_grad_();
    const Tensor g = random_tensor({3, 2}, kFloat32, 62);
    F::linear(x, w, b, kFloat32).backward(g);
    CHECK(b.grad().dtype() == kBFloat16);
    CHECK(b.grad().to_vector<double>() == sum(g, {0}).to(kBFloat16).to_vector<double>());
    CHECK(x.grad().to_vector<double>() == mm(g.to(kBFloat16), w.detach()).to_vector<double>());
    sum(F::linear(x.detach().to(kFloat32), w.detach().to(kFloat32), b0)).backward();
    CHECK(b0.grad().item<float>() == 6.0f);
  }
  // linear_backward itself is not differentiable: backward through it raises naming it.
  {
    Tensor x = random_tensor({3, 4}, kFloat32, 63);
    x.requires_grad_();
    const F::LinearGrads r = F::linear_backward(ones({3, 2}), x, random_tensor({2, 4}, kFloat32, 64));
    check_error_mentions([&] { sum(r.weight).backward(); }, "linear_backward", "not differentiable");
  }
}

TEST_CASE("bfloat16 products through OpenBLAS's sbgemm agree with the widened sgemm path", "[matmul]") {
  // Note [bfloat16 GEMM on the CPU]: the same float32 arithmetic, sums in another order.
  const Tolerance f32 = tolerance_for(kFloat32);
  Tensor a = random_tensor({33, 70}, kBFloat16, 41), b = random_tensor({70, 29}, kBFloat16, 42);
  Tensor a3 = random_tensor({3, 17, 40}, kBFloat16, 43), b3 = random_tensor({3, 40, 9}, kBFloat16, 44);
  for (int mode : {0, 1}) {
    INFO("sbgemm " << (mode ? "forced" : "off"));
    cpu::set_native_bf16_gemm(mode);
    CHECK(cpu::native_bf16_gemm_enabled() == (mode == 1 && cpu::bf16_gemm_available()));
    check_matmul(mm(a, b, kFloat32), a, b, f32);
    check_matmul(mm(a.t().contiguous().t(), b.t().contiguous().t(), kFloat32), a, b, f32);  // transposed operands
    check_matmul(bmm(a3, b3, kFloat32), a3, b3, f32);
    const Tensor narrow = mm(a, b);
    CHECK(narrow.dtype() == kBFloat16);
    CHECK(narrow.to_vector<float>() == mm(a, b, kFloat32).to(kBFloat16).to_vector<float>());  // rounded once
  }
  cpu::set_native_bf16_gemm(-1);
}

TEST_CASE("GEMM settings: set_deterministic keeps the heuristic's algorithms; the CPU has no plans",
          "[matmul]") {
  gemm::set_algo_selection(gemm::AlgoSelection::Autotune);
  CHECK(gemm::algo_selection() == gemm::AlgoSelection::Autotune);
  set_deterministic(true);
  CHECK(is_deterministic());
  CHECK(gemm::algo_selection() == gemm::AlgoSelection::Heuristic);  // no timed autotuning while deterministic
  set_deterministic(false);
  CHECK(gemm::algo_selection() == gemm::AlgoSelection::Autotune);
  gemm::set_algo_selection(gemm::AlgoSelection::Heuristic);
  // CPU GEMMs never go through the plan cache (the tuning files are tested in test_gemm_plan).
  const gemm::PlanCacheStats before = gemm::plan_cache_stats();
  (void)mm(ones({4, 4}), ones({4, 4}));
  const gemm::PlanCacheStats after = gemm::plan_cache_stats();
  CHECK(after.plans == before.plans);
  CHECK(after.hits == before.hits);
  CHECK(after.misses == before.misses);
  CHECK_THROWS_AS(gemm::load_tuning("no-such-dir/unused.tuning"), Error);
}
