// The nn kernels and composites (softmax, log_softmax, layer/rms/group/batch
// norm, dropout, im2col/col2im, conv1d/conv2d, attention, cosine similarity)
// against references computed here in double with plain loops, in float32,
// float64, float16 and bfloat16; their errors; and autograd gradients against
// central finite differences in float64.
#include <catch2/catch.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <sstream>

#include <mixt/mixt.h>

#include "reference_nn.h"
#include "test_util.h"

using namespace mixt;
using namespace mixt::testing;
using Catch::Contains;
namespace nnf = mixt::nn::functional;

namespace {

const ScalarType kTested[] = {kFloat32, kFloat64, kFloat16, kBFloat16};
using Vec = std::vector<double>;
using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// Deterministic values amp * sin(1.7 i + phase + 0.3).
Vec wave(int64_t n, double amp = 3.0, double phase = 0.0) {
  Vec v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    v[static_cast<size_t>(i)] = amp * std::sin(1.7 * static_cast<double>(i) + phase + 0.3);
  return v;
}

Tensor input(const Shape& s, ScalarType dt, double amp = 3.0, double phase = 0.0) {
  return make(wave(s.numel(), amp, phase), dt, s);
}

Vec vals(const Tensor& t) { return t.to(kFloat64).to_vector<double>(); }

// Checks got (in its dtype's tolerance, times `scale`) against want and reports the first mismatch.
void check_values(const Tensor& got, const Vec& want, double scale = 1.0) {
  const Vec g = vals(got);
  REQUIRE(g.size() == want.size());
  Tol tol = tol_for(got.dtype());
  tol.rtol *= scale;
  tol.atol *= scale;
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < g.size(); ++i)
    if (!close(g[i], want[i], tol) && bad++ == 0) first = i;
  INFO(dtype_name(got.dtype()) << ": " << bad << " mismatches; first at " << first << ": got " << (bad ? g[first] : 0.0)
                               << ", want " << (bad ? want[first] : 0.0));
  CHECK(bad == 0);
}

// Checks autograd::grad of sum(f(in) * w) against central differences for the inputs listed in `wrt`.
void check_grad(const Fn& f, std::vector<Tensor> in, const std::vector<size_t>& wrt) {
  std::vector<Tensor> leaves;
  for (size_t i : wrt) {
    in[i] = in[i].to(kFloat64).clone();
    in[i].set_requires_grad(true);
    leaves.push_back(in[i]);
  }
  const Tensor out = f(in);
  const Tensor w = make(wave(out.numel(), 1.0, 0.9), kFloat64, out.sizes());
  const std::vector<Tensor> grads = autograd::grad({sum(mul(out, w))}, leaves, {}, false, true);
  autograd::NoGradGuard no_grad;
  auto objective = [&](std::vector<Tensor> probe) { return sum(mul(f(probe).to(kFloat64), w)).item<double>(); };
  for (size_t k = 0; k < wrt.size(); ++k) {
    const size_t i = wrt[k];
    const Vec base = vals(in[i]);
    const Vec got = grads[k].defined() ? vals(grads[k]) : Vec(base.size(), 0.0);
    int bad = 0;
    std::ostringstream why;
    for (size_t j = 0; j < base.size(); ++j) {
      std::vector<Tensor> probe = in;
      Vec v = base;
      v[j] = base[j] + 1e-6;
      probe[i] = from_vector(v, in[i].sizes());
      const double up = objective(probe);
      v[j] = base[j] - 1e-6;
      probe[i] = from_vector(v, in[i].sizes());
      const double numeric = (up - objective(probe)) / 2e-6;
      if (std::abs(got[j] - numeric) > 1e-6 + 1e-5 * std::abs(numeric) && bad++ == 0)
        why << "input " << i << "[" << j << "]: analytic " << got[j] << ", numeric " << numeric;
    }
    INFO(why.str());
    CHECK(bad == 0);
  }
}

// ---- references: the shared double loops of tests/support/reference_nn.h, in this file's terms ----

using testing::ref::ConvGeom;

// Softmax (or log_softmax) of x of sizes s along dim.
Vec softmax_ref(const Vec& x, const Shape& s, int dim, bool log) { return testing::ref::softmax({s.vec(), x}, dim, log).v; }

// Normalizes each row of `cols` values: (x - mean) / sqrt(var + eps) * w + b (rms: x / sqrt(mean(x^2) + eps) * w).
Vec norm_rows_ref(const Vec& x, int64_t cols, double eps, const Vec& w, const Vec& b, bool rms = false) {
  return testing::ref::norm_rows(x, cols, eps, w, b, rms);
}

// Direct 2-D convolution of x [N, C, H, W] with w [O, C / groups, KH, KW] (1-D: H = KH = 1).
Vec conv2d_ref(const Vec& x, const Shape& xs, const Vec& w, const Shape& ws, const Vec& b, const ConvGeom& g,
               Shape& out_sizes) {
  const testing::ref::Ref y = testing::ref::conv2d({xs.vec(), x}, {ws.vec(), w}, b, g);
  out_sizes = Shape(y.sizes);
  return y.v;
}

// im2col of x [N, C, H, W] with kernel KH x KW (geometry g, groups unused).
Vec im2col_ref(const Vec& x, const Shape& xs, int64_t KH, int64_t KW, const ConvGeom& g, Shape& out_sizes) {
  const testing::ref::Ref y = testing::ref::im2col({xs.vec(), x}, KH, KW, g);
  out_sizes = Shape(y.sizes);
  return y.v;
}

// Attention over B independent [L, E] / [S, E] / [S, Ev] blocks; keep[l * S + s] (empty: all), bias likewise.
Vec sdpa_ref(const Vec& q, const Vec& k, const Vec& v, int64_t B, int64_t L, int64_t S, int64_t E, int64_t Ev,
             double scale, const std::vector<bool>& keep, const Vec& bias) {
  const testing::ref::Ref keep_r{{L, S}, Vec(keep.begin(), keep.end())}, bias_r{{L, S}, bias};
  return testing::ref::attention({{B, L, E}, q}, {{B, S, E}, k}, {{B, S, Ev}, v}, scale, keep.empty() ? nullptr : &keep_r,
                                 bias.empty() ? nullptr : &bias_r, false)
      .v;
}

}  // namespace

// ---------------------------------------------------------------- softmax

TEST_CASE("softmax and log_softmax match the reference along every dim", "[nn][softmax]") {
  const Shape s{3, 4, 5};
  for (ScalarType dt : kTested)
    for (int dim = 0; dim < 3; ++dim) {
      const Tensor x = input(s, dt);
      const Tensor y = nnf::softmax(x, dim - 3), ly = nnf::log_softmax(x, dim);
      CHECK(y.dtype() == dt);
      CHECK(ly.dtype() == dt);
      CHECK(y.sizes() == s);
      check_values(y, softmax_ref(vals(x), s, dim, false));
      check_values(ly, softmax_ref(vals(x), s, dim, true), 2);
    }
}

TEST_CASE("softmax is stable for large inputs, casts with dtype= and handles special rows", "[nn][softmax]") {
  const Tensor big = make({1000, 1001, 999, -1e30}, kFloat32);
  check_values(nnf::softmax(big, 0), softmax_ref({1000, 1001, 999, -1e30}, {4}, 0, false));
  check_values(nnf::log_softmax(big, 0), softmax_ref({1000, 1001, 999, -1e30}, {4}, 0, true));
  // dtype= converts first (integers included); the result has that dtype.
  const Tensor ints = make({1, 2, 3}, kInt64);
  const Tensor y = nnf::softmax(ints, 0, kFloat64);
  CHECK(y.dtype() == kFloat64);
  check_values(y, softmax_ref({1, 2, 3}, {3}, 0, false));
  CHECK(nnf::log_softmax(make({1, 2}, kFloat16), 0, kFloat32).dtype() == kFloat32);
  // A 0-dim input and a row with NaN / all -inf give 1 / NaN as PyTorch.
  CHECK(nnf::softmax(scalar0(4.0), 0).item<double>() == 1.0);
  CHECK(nnf::log_softmax(scalar0(4.0), -1).item<double>() == 0.0);
  const Vec nan_row = vals(nnf::softmax(make({1, kNan, 2, -kInf, -kInf}, kFloat32, {1, 5}).view({1, 5}), 1));
  CHECK(std::isnan(nan_row[0]));
  CHECK(std::isnan(vals(nnf::softmax(make({-kInf, -kInf}, kFloat64), 0))[1]));
  // Empty tensors and non-contiguous inputs.
  CHECK(nnf::softmax(zeros({0, 3}), 1).sizes() == Shape{0, 3});
  const Tensor xt = input({4, 3}, kFloat64).t();
  check_values(nnf::softmax(xt, 1), softmax_ref(vals(xt), {3, 4}, 1, false));
}

TEST_CASE("softmax rejects integer inputs without dtype and bad dims", "[nn][softmax][errors]") {
  CHECK_THAT(error_of([] { nnf::softmax(make({1, 2}, kInt32), 0); }), Contains("softmax") && Contains("int32"));
  CHECK_THAT(error_of([] {
               nnf::log_softmax(make({1, 2}, kFloat32), 2);
             }),
             Contains("log_softmax") && Contains("out of range"));
  CHECK_THAT(error_of([] { nnf::softmax(make({1, 2}, kFloat32), 0, kInt64); }), Contains("dtype"));
}

// ---------------------------------------------------------------- layer_norm / rms_norm

TEST_CASE("layer_norm matches the reference with and without affine parameters", "[nn][norm]") {
  for (ScalarType dt : kTested) {
    const Tensor x = input({2, 3, 4}, dt, 2.0, 0.4), w = input({3, 4}, dt, 0.5, 1.0), b = input({3, 4}, dt, 1.0, 2.0);
    const Tensor y = nnf::layer_norm(x, {3, 4}, w, b, 1e-3);
    CHECK(y.dtype() == dt);
    check_values(y, norm_rows_ref(vals(x), 12, 1e-3, vals(w), vals(b)), 4);
    check_values(nnf::layer_norm(x, {4}), norm_rows_ref(vals(x), 4, 1e-5, {}, {}), 4);
    check_values(nnf::layer_norm(x, {4}, {}, b.select(0, 0)), norm_rows_ref(vals(x), 4, 1e-5, {}, vals(b.select(0, 0))),
                 4);
  }
}

TEST_CASE("layer_norm and rms_norm return their statistics in the accumulate type", "[nn][norm]") {
  for (ScalarType dt : kTested) {
    OpCall c(OpId::layer_norm);
    c.push(input({2, 3, 4}, dt));
    c.attrs.get<attrs::LayerNorm>() = {{4}, 1e-5};
    dispatch(c);
    const ScalarType st = dt == kFloat64 ? kFloat64 : kFloat32;
    CHECK(c.out[1].dtype() == st);
    CHECK(c.out[1].sizes() == Shape{2, 3});
    CHECK(c.out[2].sizes() == Shape{2, 3});
    const Vec x = vals(c.in[0]), mean = vals(c.out[1]), rstd = vals(c.out[2]);
    double m0 = 0, v0 = 0;
    for (int j = 0; j < 4; ++j) m0 += x[j] / 4;
    for (int j = 0; j < 4; ++j) v0 += (x[j] - m0) * (x[j] - m0) / 4;
    CHECK(mean[0] == Approx(m0).epsilon(1e-6));
    CHECK(rstd[0] == Approx(1 / std::sqrt(v0 + 1e-5)).epsilon(1e-6));
    OpCall r(OpId::rms_norm);
    r.push(input({2, 3, 4}, dt));
    r.attrs.get<attrs::RmsNorm>().normalized_shape = {3, 4};
    dispatch(r);
    CHECK(r.out[1].dtype() == st);
    CHECK(r.out[1].sizes() == Shape{2});
  }
}

TEST_CASE("rms_norm matches the reference; eps defaults to the dtype's machine epsilon", "[nn][norm]") {
  for (ScalarType dt : kTested) {
    const Tensor x = input({3, 5}, dt, 2.0), w = input({5}, dt, 0.5, 1.0);
    check_values(nnf::rms_norm(x, {5}, w, 1e-4), norm_rows_ref(vals(x), 5, 1e-4, vals(w), {}, true), 4);
  }
  // Tiny inputs make eps visible: finfo(float16).eps = 2^-10, finfo(float32).eps = 2^-23.
  const Tensor small = full({2, 4}, 0.01, of(kFloat16));
  check_values(nnf::rms_norm(small, {4}), norm_rows_ref(vals(small), 4, 0x1p-10, {}, {}, true));
  const Tensor small32 = full({2, 4}, 1e-4, of(kFloat32));
  check_values(nnf::rms_norm(small32, {4}), norm_rows_ref(vals(small32), 4, 0x1p-23, {}, {}, true));
  CHECK(vals(nnf::rms_norm(small32, {4}))[0] < 0.3);  // eps dominates: 1e-4 / sqrt(1e-8 + 2^-23)
}

TEST_CASE("layer_norm and rms_norm reject mismatched shapes and dtypes", "[nn][norm][errors]") {
  const Tensor x = input({2, 3}, kFloat32);
  CHECK_THAT(error_of([&] { nnf::layer_norm(x, {2}); }), Contains("layer_norm") && Contains("normalized_shape"));
  CHECK_THAT(error_of([&] { nnf::layer_norm(x, {}); }), Contains("at least one"));
  CHECK_THAT(error_of([&] { nnf::layer_norm(x, {3}, ones({4})); }), Contains("weight") && Contains("[4]"));
  CHECK_THAT(error_of([&] { nnf::layer_norm(x, {3}, {}, ones({3}, of(kInt64))); }),
             Contains("bias") && Contains("int64"));
  CHECK_THAT(error_of([&] { nnf::rms_norm(make({1, 2}, kInt32), {2}); }), Contains("rms_norm") && Contains("int32"));
  CHECK_THAT(error_of([&] { nnf::rms_norm(x, {2, 3, 1}); }), Contains("rms_norm"));
}

// ---------------------------------------------------------------- group_norm / batch_norm

TEST_CASE("group_norm matches the reference", "[nn][norm]") {
  for (ScalarType dt : kTested) {
    const Tensor x = input({2, 6, 3}, dt, 2.0), w = input({6}, dt, 0.5, 1.0), b = input({6}, dt, 1.0, 2.0);
    const Tensor y = nnf::group_norm(x, 3, w, b, 1e-4);
    CHECK(y.dtype() == dt);
    // Each (n, group) block of 2 channels x 3 positions is a row; then the per-channel affine.
    Vec want = norm_rows_ref(vals(x), 6, 1e-4, {}, {});
    const Vec wv = vals(w), bv = vals(b);
    for (size_t i = 0; i < want.size(); ++i) want[i] = want[i] * wv[(i / 3) % 6] + bv[(i / 3) % 6];
    check_values(y, want, 4);
  }
  CHECK_THAT(error_of([] { nnf::group_norm(ones({2, 6, 3}), 4); }), Contains("group_norm") && Contains("divisible"));
  CHECK_THAT(error_of([] { nnf::group_norm(ones({2, 6}), 2, ones({5})); }), Contains("weight"));
  CHECK_THAT(error_of([] { nnf::group_norm(ones({6}), 2); }), Contains("[N, C, *]"));
}

// Per-channel mean and biased variance of x [N, C, L].
void channel_stats(const Vec& x, int64_t N, int64_t C, int64_t L, Vec& mean, Vec& var) {
  testing::ref::channel_stats({{N, C, L}, x}, mean, var);
}

TEST_CASE("batch_norm in training normalizes with batch statistics and updates the running stats", "[nn][norm]") {
  for (ScalarType dt : kTested) {
    const Tensor x = input({4, 3, 2}, dt, 2.0), w = input({3}, dt, 0.5, 1.0), b = input({3}, dt, 1.0, 2.0);
    Tensor rm = make({0.5, -1, 0}, kFloat32), rv = make({1, 2, 3}, kFloat32);
    const Tensor y = nnf::batch_norm(x, rm, rv, w, b, true, 0.2, 1e-3);
    CHECK(y.dtype() == dt);
    Vec mean, var;
    channel_stats(vals(x), 4, 3, 2, mean, var);
    Vec want(24);
    const Vec xv = vals(x), wv = vals(w), bv = vals(b);
    for (size_t i = 0; i < 24; ++i) {
      const size_t ch = (i / 2) % 3;
      want[i] = (xv[i] - mean[ch]) / std::sqrt(var[ch] + 1e-3) * wv[ch] + bv[ch];
    }
    check_values(y, want, 4);
    const Vec rm0{0.5, -1, 0}, rv0{1, 2, 3};
    Vec want_rm(3), want_rv(3);
    for (size_t ch = 0; ch < 3; ++ch) {
      want_rm[ch] = 0.8 * rm0[ch] + 0.2 * mean[ch];
      want_rv[ch] = 0.8 * rv0[ch] + 0.2 * var[ch] * 8.0 / 7.0;  // unbiased: n / (n - 1), n = 8
    }
    check_values(rm, want_rm, 2);
    check_values(rv, want_rv, 2);
  }
}

TEST_CASE("batch_norm in evaluation uses the running stats and leaves them alone", "[nn][norm]") {
  for (ScalarType dt : kTested) {
    const Tensor x = input({2, 3, 2, 2}, dt, 2.0);
    const Tensor rm = make({0.5, -1, 0}, kFloat32), rv = make({1, 2, 3}, kFloat32);
    const Tensor y = nnf::batch_norm(x, rm, rv, {}, {}, false, 0.1, 1e-5);
    CHECK(y.dtype() == dt);
    const Vec xv = vals(x), m{0.5, -1, 0}, v{1, 2, 3};
    Vec want(xv.size());
    for (size_t i = 0; i < xv.size(); ++i) want[i] = (xv[i] - m[(i / 4) % 3]) / std::sqrt(v[(i / 4) % 3] + 1e-5);
    check_values(y, want, 2);
    CHECK(vals(rm) == m);
    CHECK(vals(rv) == v);
  }
}

TEST_CASE("batch_norm rejects bad shapes and a single value per channel in training", "[nn][norm][errors]") {
  const Tensor rm = zeros({3}), rv = ones({3});
  CHECK_THAT(error_of([&] {
               nnf::batch_norm(ones({1, 3}), rm, rv, {}, {}, true);
             }),
             Contains("batch_norm") && Contains("more than 1 value"));
  CHECK_THAT(error_of([&] { nnf::batch_norm(ones({2, 4}), rm, rv); }), Contains("running_mean") && Contains("[4]"));
  CHECK_THAT(error_of([&] { nnf::batch_norm(ones({2, 3}), rm, rv, ones({2})); }), Contains("weight"));
  CHECK_THAT(error_of([&] { nnf::batch_norm(make({1, 2, 3}, kInt64, {1, 3}), rm, rv); }), Contains("int64"));
  CHECK_THAT(error_of([&] { nnf::batch_norm(ones({3}), rm, rv); }), Contains("[N, C, *]"));
}

// ---------------------------------------------------------------- dropout

TEST_CASE("dropout zeroes a fraction p and scales the rest by 1 / (1 - p)", "[nn][dropout]") {
  for (ScalarType dt : {kFloat32, kFloat64, kFloat16, kBFloat16}) {
    const Tensor x = input({4000}, dt, 2.0);
    Generator g(7);
    const Tensor y = nnf::dropout(x, 0.3, true, &g);
    CHECK(y.dtype() == dt);
    const Vec xv = vals(x), yv = vals(y);
    int64_t dropped = 0, wrong = 0;
    for (size_t i = 0; i < xv.size(); ++i) {
      if (yv[i] == 0 && xv[i] != 0)
        ++dropped;
      else if (!close(yv[i], xv[i] / 0.7, tol_for(dt)))
        ++wrong;
    }
    CHECK(wrong == 0);
    CHECK(std::abs(static_cast<double>(dropped) / 4000.0 - 0.3) < 0.03);
    // The same seed draws the same mask.
    Generator g2(7);
    CHECK(vals(nnf::dropout(x, 0.3, true, &g2)) == yv);
  }
}

TEST_CASE("dropout is the identity in evaluation or with p = 0, zeros with p = 1", "[nn][dropout]") {
  const Tensor x = input({3, 4}, kFloat32);
  CHECK(nnf::dropout(x, 0.5, false).is_same(x));
  CHECK(nnf::dropout(x, 0.0, true).is_same(x));
  const Tensor z = nnf::dropout(x, 1.0, true);
  CHECK(vals(z) == Vec(12, 0.0));
  CHECK_THAT(error_of([&] { nnf::dropout(x, 1.5); }),
             Contains("dropout") && Contains("between 0 and 1") && Contains("1.5"));
  CHECK_THAT(error_of([&] { nnf::dropout(x, -0.1, false); }), Contains("-0.1"));
  CHECK_THAT(error_of([] { nnf::dropout(make({1, 2}, kInt64)); }), Contains("dropout") && Contains("int64"));
}

// ---------------------------------------------------------------- im2col / col2im

TEST_CASE("im2col unfolds 2-D and 1-D windows as the reference", "[nn][conv]") {
  const ConvGeom g{.sh = 2, .sw = 1, .ph = 1, .pw = 1, .dh = 1, .dw = 2};
  for (ScalarType dt : kTested) {
    const Tensor x = input({2, 3, 5, 6}, dt);
    Shape want_sizes;
    const Vec want = im2col_ref(vals(x), x.sizes(), 2, 3, g, want_sizes);
    const Tensor cols = nnf::im2col(x, {2, 3}, {2, 1}, {1, 1}, {1, 2});
    CHECK(cols.sizes() == want_sizes);
    CHECK(vals(cols) == want);
    // 1-D: a 2-D window of height 1.
    const Tensor x1 = input({2, 3, 9}, dt);
    const Tensor c1 = nnf::im2col(x1, {3}, {2}, {1}, {2});
    const Vec w1 = im2col_ref(vals(x1), {2, 3, 1, 9}, 1, 3, {.sw = 2, .pw = 1, .dw = 2}, want_sizes);
    CHECK(c1.sizes() == want_sizes);
    CHECK(vals(c1) == w1);
  }
}

TEST_CASE("col2im is the adjoint of im2col (overlaps summed)", "[nn][conv]") {
  for (ScalarType dt : {kFloat64, kFloat32}) {
    const Tensor x = input({2, 3, 5, 6}, dt, 1.0, 0.2);
    const Tensor cols = nnf::im2col(x, {3, 2}, {1, 2}, {1, 0}, {2, 1});
    const Tensor y = input(cols.sizes(), dt, 1.0, 0.7);
    const Tensor back = nnf::col2im(y, {5, 6}, {3, 2}, {1, 2}, {1, 0}, {2, 1});
    CHECK(back.sizes() == x.sizes());
    // <im2col(x), y> == <x, col2im(y)>
    const double lhs = sum(mul(cols.to(kFloat64), y.to(kFloat64))).item<double>();
    const double rhs = sum(mul(x.to(kFloat64), back.to(kFloat64))).item<double>();
    CHECK(lhs == Approx(rhs).epsilon(dt == kFloat64 ? 1e-12 : 1e-5));
  }
  // Overlap count: folding unfolded ones counts how many windows cover each pixel.
  const Tensor cover = nnf::col2im(nnf::im2col(ones({1, 1, 4}), {2}, {1}, {0}, {1}), {4}, {2}, {1}, {0}, {1});
  CHECK(vals(cover) == Vec{1, 2, 2, 1});
  CHECK(nnf::col2im(ones({1, 4, 3}, of(kBFloat16)), {4}, {2}, {1}, {0}, {1}).dtype() == kBFloat16);
}

TEST_CASE("im2col and col2im reject bad geometry", "[nn][conv][errors]") {
  const Tensor x = ones({1, 2, 4, 4});
  CHECK_THAT(error_of([&] { nnf::im2col(x, {5, 5}, {1}, {0}, {1}); }), Contains("im2col") && Contains("does not fit"));
  CHECK_THAT(error_of([&] { nnf::im2col(x, {2, 2}, {0}, {0}, {1}); }), Contains("must be positive"));
  CHECK_THAT(error_of([&] { nnf::im2col(x, {2}, {1}, {0}, {1}); }), Contains("spatial dims"));
  CHECK_THROWS_AS(nnf::im2col(ones({1, 1, 4, 4, 4}), {2, 2, 2}, {1}, {0}, {1}), Error);
  OpCall bad(OpId::im2col);
  bad.push(x);
  bad.attrs.get<attrs::Im2col>() = {{2, 2}, {1, 1}, {0}, {}};
  CHECK_THAT(error_of([&] { dispatch(bad); }), Contains("1 or 2 spatial dims"));
  CHECK_THAT(error_of([] { nnf::im2col(ones({1, 2, 4}, of(kInt32)), {2}, {1}, {0}, {1}); }), Contains("int32"));
  CHECK_THAT(error_of([] {
               nnf::col2im(ones({1, 5, 3}), {4}, {2}, {1}, {0}, {1});
             }),
             Contains("multiple of the kernel"));
  CHECK_THAT(error_of([] { nnf::col2im(ones({1, 4, 4}), {4}, {2}, {1}, {0}, {1}); }), Contains("blocks"));
  CHECK_THAT(error_of([] { nnf::col2im(ones({4, 3}), {4}, {2}, {1}, {0}, {1}); }), Contains("col2im"));
}

// ---------------------------------------------------------------- conv1d / conv2d

TEST_CASE("conv2d matches direct convolution: stride, padding, dilation, groups, bias", "[nn][conv]") {
  for (ScalarType dt : kTested) {
    const Tensor x = input({2, 4, 6, 5}, dt, 2.0), w = input({6, 2, 3, 2}, dt, 1.0, 0.5), b = input({6}, dt, 1.0, 1.5);
    const ConvGeom g{.sh = 2, .sw = 1, .ph = 1, .pw = 2, .dh = 1, .dw = 2, .groups = 2};
    Shape out_sizes;
    const Vec want = conv2d_ref(vals(x), x.sizes(), vals(w), w.sizes(), vals(b), g, out_sizes);
    const Tensor y = nnf::conv2d(x, w, b, {2, 1}, {1, 2}, {1, 2}, 2);
    CHECK(y.dtype() == dt);
    CHECK(y.sizes() == out_sizes);
    check_values(y, want, 8);
    // Unbatched input, depthwise groups and one value for every spatial dim.
    const Tensor wd = w.narrow(0, 0, 4).narrow(1, 0, 1).contiguous();
    const Tensor y1 = nnf::conv2d(x.select(0, 1), wd, {}, {1}, {1}, {2}, 4);
    CHECK(y1.dim() == 3);
    CHECK(vals(y1) == vals(nnf::conv2d(x.narrow(0, 1, 1), wd, {}, {1, 1}, {1, 1}, {2, 2}, 4).squeeze(0)));
  }
}

TEST_CASE("conv1d matches direct convolution and accepts unbatched input", "[nn][conv]") {
  for (ScalarType dt : kTested) {
    const Tensor x = input({2, 6, 9}, dt, 2.0), w = input({4, 3, 3}, dt, 1.0, 0.5), b = input({4}, dt, 1.0, 1.5);
    Shape out_sizes;
    const Vec want = conv2d_ref(vals(x), {2, 6, 1, 9}, vals(w), {4, 3, 1, 3}, vals(b),
                                {.sw = 2, .pw = 2, .dw = 2, .groups = 2}, out_sizes);
    const Tensor y = nnf::conv1d(x, w, b, 2, 2, 2, 2);
    CHECK(y.sizes() == Shape{2, 4, out_sizes[3]});
    check_values(y, want, 8);
    const Tensor yu = nnf::conv1d(x.select(0, 0), w, b, 2, 2, 2, 2);
    CHECK(yu.sizes() == Shape{4, out_sizes[3]});
    check_values(yu, Vec(want.begin(), want.begin() + static_cast<long>(want.size() / 2)), 8);
  }
}

TEST_CASE("convolutions reject mismatched channels, groups, dtypes and sizes", "[nn][conv][errors]") {
  const Tensor x = ones({1, 4, 5, 5});
  CHECK_THAT(error_of([&] { nnf::conv2d(x, ones({2, 3, 3, 3})); }), Contains("conv2d") && Contains("input channels"));
  CHECK_THAT(error_of([&] { nnf::conv2d(x, ones({3, 2, 3, 3}), {}, {1, 1}, {0, 0}, {1, 1}, 2); }), Contains("groups"));
  CHECK_THAT(error_of([&] { nnf::conv2d(x, ones({2, 4, 3, 3}, of(kFloat64))); }), Contains("one dtype"));
  CHECK_THAT(error_of([&] { nnf::conv2d(x, ones({2, 4, 7, 7})); }), Contains("does not fit the padded input"));
  CHECK_THAT(error_of([&] { nnf::conv2d(x, ones({2, 4, 3, 3}), ones({3})); }), Contains("bias"));
  CHECK_THAT(error_of([&] { nnf::conv2d(x, ones({2, 4, 3, 3}), {}, {0, 1}); }), Contains("stride"));
  CHECK_THAT(error_of([&] { nnf::conv1d(x, ones({2, 4, 3})); }), Contains("conv1d") && Contains("3-D (batched)"));
  CHECK_THAT(error_of([&] { nnf::conv1d(ones({1, 4, 5}), ones({2, 4})); }), Contains("weight"));
  CHECK_THAT(error_of([] {
               nnf::conv1d(ones({1, 4, 5}, of(kInt64)), ones({2, 4, 3}, of(kInt64)));
             }),
             Contains("int64"));
}

// ---------------------------------------------------------------- attention and similarity

TEST_CASE("scaled_dot_product_attention matches the reference with masks, causal and scale", "[nn][attention]") {
  const int64_t B = 2, L = 3, S = 4, E = 5, Ev = 2;
  for (ScalarType dt : kTested) {
    const Tensor q = input({B, L, E}, dt, 1.0), k = input({B, S, E}, dt, 1.0, 0.4), v = input({B, S, Ev}, dt, 2.0, 0.8);
    const double sc = 1 / std::sqrt(5.0);
    auto ref = [&](double scale, const std::vector<bool>& keep, const Vec& bias) {
      return sdpa_ref(vals(q), vals(k), vals(v), B, L, S, E, Ev, scale, keep, bias);
    };
    const Tensor y = nnf::scaled_dot_product_attention(q, k, v);
    CHECK(y.dtype() == dt);
    CHECK(y.sizes() == Shape{B, L, Ev});
    check_values(y, ref(sc, {}, {}), 4);
    const std::vector<bool> keep{true, false, true, true, false, false, false, false, true, true, false, true};
    std::vector<uint8_t> keep_bytes(keep.begin(), keep.end());
    const Tensor y_mask = nnf::scaled_dot_product_attention(q, k, v, bools(keep_bytes, {L, S}));
    check_values(y_mask, ref(sc, keep, {}), 4);  // row 1 masks everything: zeros, not NaN
    const Tensor bias = input({L, S}, dt, 1.0, 2.2);
    check_values(nnf::scaled_dot_product_attention(q, k, v, bias, 0.0, false, 0.3), ref(0.3, {}, vals(bias)), 4);
    std::vector<bool> causal;
    for (int64_t l = 0; l < L; ++l)
      for (int64_t s = 0; s < S; ++s) causal.push_back(s <= l);
    check_values(nnf::scaled_dot_product_attention(q, k, v, {}, 0.0, true), ref(sc, causal, {}), 4);
  }
}

TEST_CASE("scaled_dot_product_attention broadcasts batch dims and drops out reproducibly", "[nn][attention]") {
  const Tensor q = input({2, 3, 4}, kFloat64, 1.0), k = input({4, 4}, kFloat64, 1.0, 0.3), v = input({4, 2}, kFloat64);
  const Tensor y = nnf::scaled_dot_product_attention(q, k, v);
  CHECK(y.sizes() == Shape{2, 3, 2});
  check_values(y, sdpa_ref(vals(q), vals(k.unsqueeze(0).expand({2, 4, 4}).contiguous()),
                           vals(v.unsqueeze(0).expand({2, 4, 2}).contiguous()), 2, 3, 4, 4, 2, 0.5, {}, {}));
  Generator g1(3), g2(3);
  const Tensor d1 = nnf::scaled_dot_product_attention(q, k, v, {}, 0.4, false, std::nullopt, &g1);
  const Tensor d2 = nnf::scaled_dot_product_attention(q, k, v, {}, 0.4, false, std::nullopt, &g2);
  CHECK(vals(d1) == vals(d2));
  CHECK(vals(d1) != vals(y));
}

TEST_CASE("scaled_dot_product_attention validates its inputs", "[nn][attention][errors]") {
  const Tensor q = ones({2, 3, 4}), k = ones({2, 5, 4}), v = ones({2, 5, 6});
  CHECK_THAT(error_of([&] {
               nnf::scaled_dot_product_attention(q, k, v, ones({3, 5}, of(kBool)), 0.0, true);
             }),
             Contains("is_causal"));
  CHECK_THAT(error_of([&] { nnf::scaled_dot_product_attention(q, ones({2, 5, 3}), v); }), Contains("embedding sizes"));
  CHECK_THAT(error_of([&] { nnf::scaled_dot_product_attention(q, k, ones({2, 4, 6})); }), Contains("sequence lengths"));
  CHECK_THAT(error_of([&] { nnf::scaled_dot_product_attention(q, k.to(kFloat64), v); }), Contains("one dtype"));
  CHECK_THAT(error_of([&] {
               nnf::scaled_dot_product_attention(q, k, v, ones({3, 5}, of(kInt32)));
             }),
             Contains("attn_mask"));
  CHECK_THAT(error_of([&] {
               nnf::scaled_dot_product_attention(q, k, v, ones({4, 5}, of(kBool)));
             }),
             Contains("scaled_dot_product_attention"));
  CHECK_THAT(error_of([&] { nnf::scaled_dot_product_attention(q, k, v, {}, 2.0); }), Contains("dropout probability"));
  CHECK_THAT(error_of([] { nnf::scaled_dot_product_attention(ones({3}), ones({3}), ones({3})); }),
             Contains("[..., L, E]"));
}

TEST_CASE("cosine_similarity matches the reference, broadcasts and clamps small norms", "[nn][similarity]") {
  for (ScalarType dt : kTested) {
    const Tensor a = input({3, 4}, dt), b = input({4}, dt, 2.0, 1.1);
    const Tensor y = nnf::cosine_similarity(a, b, 1);
    CHECK(y.dtype() == dt);
    CHECK(y.sizes() == Shape{3});
    const Vec av = vals(a), bv = vals(b);
    Vec want(3);
    for (int i = 0; i < 3; ++i) {
      double dot = 0, na = 0, nb = 0;
      for (int j = 0; j < 4; ++j) {
        dot += av[i * 4 + j] * bv[j];
        na += av[i * 4 + j] * av[i * 4 + j];
        nb += bv[j] * bv[j];
      }
      want[i] = dot / (std::sqrt(na) * std::sqrt(nb));
    }
    check_values(y, want, 4);
  }
  CHECK(nnf::cosine_similarity(zeros({2, 3}), ones({2, 3})).to_vector<double>() == Vec{0, 0});
  CHECK(nnf::cosine_similarity(make({1, 2}, kInt64), make({2, 4}, kInt64), 0).dtype() == kFloat32);
  CHECK(nnf::cosine_similarity(make({1, 2}, kInt64), make({2, 4}, kInt64), 0).item<double>() == Approx(1.0));
  CHECK_THAT(error_of([] { nnf::cosine_similarity(ones({2, 3}), ones({2, 4})); }), Contains("cosine_similarity"));
  CHECK_THAT(error_of([] { nnf::cosine_similarity(ones({2, 3}), ones({2, 3}), 2); }), Contains("out of range"));
}

// ---------------------------------------------------------------- gradients

TEST_CASE("softmax, log_softmax, layer_norm and rms_norm gradients match finite differences", "[nn][grad]") {
  const Tensor x = input({2, 3, 4}, kFloat64, 2.0), w = input({3, 4}, kFloat64, 0.5, 1.0), b = input({3, 4}, kFloat64);
  check_grad([](const auto& in) { return nnf::softmax(in[0], 1); }, {x}, {0});
  check_grad([](const auto& in) { return nnf::log_softmax(in[0], -1); }, {x}, {0});
  check_grad([](const auto& in) { return nnf::softmax(in[0], 0, kFloat64); }, {x.to(kFloat32)}, {0});
  check_grad([](const auto& in) { return nnf::layer_norm(in[0], {3, 4}, in[1], in[2], 1e-3); }, {x, w, b}, {0, 1, 2});
  check_grad([](const auto& in) { return nnf::layer_norm(in[0], {4}, {}, in[1]); }, {x, b.select(0, 1)}, {0, 1});
  check_grad([](const auto& in) { return nnf::rms_norm(in[0], {3, 4}, in[1], 1e-3); }, {x, w}, {0, 1});
  check_grad([](const auto& in) { return nnf::rms_norm(in[0], {4}); }, {x}, {0});
}

TEST_CASE("group_norm, batch_norm and dropout gradients match finite differences", "[nn][grad]") {
  const Tensor x = input({3, 4, 2}, kFloat64, 2.0), w = input({4}, kFloat64, 0.5, 1.0), b = input({4}, kFloat64);
  check_grad([](const auto& in) { return nnf::group_norm(in[0], 2, in[1], in[2], 1e-3); }, {x, w, b}, {0, 1, 2});
  check_grad(
      [](const auto& in) {
        return nnf::batch_norm(in[0], zeros({4}, of(kFloat64)), ones({4}, of(kFloat64)), in[1], in[2], true, 0.1, 1e-3);
      },
      {x, w, b}, {0, 1, 2});
  check_grad([](const auto& in) { return nnf::batch_norm(in[0], in[1], add(abs(in[2]), 0.5), {}, {}, false); },
             {x, b, w}, {0, 1, 2});
  check_grad(
      [](const auto& in) {
        Generator g(11);  // the same mask for every evaluation
        return nnf::dropout(in[0], 0.4, true, &g);
      },
      {x}, {0});
}

TEST_CASE("im2col, col2im, convolution, attention and cosine gradients match finite differences", "[nn][grad]") {
  const Tensor x = input({1, 2, 4, 5}, kFloat64, 2.0);
  check_grad([](const auto& in) { return nnf::im2col(in[0], {2, 3}, {2, 1}, {1, 1}, {1, 2}); }, {x}, {0});
  check_grad([](const auto& in) { return nnf::col2im(in[0], {5}, {2}, {2}, {1}, {2}); }, {input({1, 4, 3}, kFloat64)},
             {0});
  check_grad(
      [](const auto& in) {
        return nnf::conv2d(in[0], in[1], in[2], {2, 1}, {1, 0}, {1, 2}, 2);
      },
      {input({1, 4, 5, 5}, kFloat64), input({2, 2, 2, 2}, kFloat64, 1.0, 0.3), input({2}, kFloat64)}, {0, 1, 2});
  check_grad([](const auto& in) { return nnf::conv1d(in[0], in[1], in[2], 2, 1, 1, 1); },
             {input({2, 3, 6}, kFloat64), input({2, 3, 3}, kFloat64, 1.0, 0.3), input({2}, kFloat64)}, {0, 1, 2});
  const Tensor q = input({2, 3, 4}, kFloat64, 1.0), k = input({2, 5, 4}, kFloat64, 1.0, 0.4);
  const Tensor v = input({2, 5, 3}, kFloat64, 1.0, 0.8), bias = input({3, 5}, kFloat64, 1.0, 1.2);
  check_grad([](const auto& in) { return nnf::scaled_dot_product_attention(in[0], in[1], in[2], in[3]); },
             {q, k, v, bias}, {0, 1, 2, 3});
  check_grad([](const auto& in) { return nnf::scaled_dot_product_attention(in[0], in[1], in[2], {}, 0.0, true); },
             {q, k, v}, {0, 1, 2});
  check_grad([](const auto& in) { return nnf::cosine_similarity(in[0], in[1], 0); },
             {input({4, 3}, kFloat64), input({4, 1}, kFloat64, 2.0, 0.5)}, {0, 1});
}

TEST_CASE("attention rows with nothing to attend to have zero outputs and zero gradients", "[nn][grad]") {
  Tensor q = input({3, 2}, kFloat64, 1.0), k = input({4, 2}, kFloat64, 1.0, 0.5), v = input({4, 2}, kFloat64);
  q.set_requires_grad(true);
  const Tensor mask = make({0, 0, 1, 0, -kInf, -kInf, -kInf, -kInf, 1, 0, 0, 0}, kFloat64, {3, 4});
  const Tensor y = nnf::scaled_dot_product_attention(q, k, v, mask);
  CHECK(vals(y.select(0, 1)) == Vec{0, 0});
  const Vec g = vals(autograd::grad({sum(y)}, {q})[0]);
  for (double x : g) CHECK(std::isfinite(x));
  CHECK(g[2] == 0.0);
  CHECK(g[3] == 0.0);
}

TEST_CASE("narrow-float gradients come back in the input's dtype", "[nn][grad]") {
  for (ScalarType dt : {kFloat16, kBFloat16}) {
    Tensor x = input({2, 5}, dt), w = ones({5}, of(kFloat32));
    x.set_requires_grad(true);
    w.set_requires_grad(true);
    const std::vector<Tensor> g = autograd::grad({sum(nnf::layer_norm(x, {5}, w))}, {x, w});
    CHECK(g[0].dtype() == dt);
    CHECK(g[1].dtype() == kFloat32);
    const Tensor gs = autograd::grad({sum(mul(nnf::softmax(x, 1), x))}, {x})[0];
    CHECK(gs.dtype() == dt);
  }
}
