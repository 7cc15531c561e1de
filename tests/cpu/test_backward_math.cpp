// The host-run logic of the fused backward kernels (Note [Fused backward ops]): the chunk
// plan of the column sums (kernels/common/backward_math.h), a replay of the CUDA column
// kernels' order (norm_backward.cu) against the CPU op bit for bit, and autograd through
// softmax, log_softmax, layer_norm and rms_norm against the same gradients written in
// elementwise ops and reductions.
#include <catch2/catch.hpp>

#include <cstring>
#include <vector>

#include <mixt/kernels/common/backward_math.h>
#include <mixt/mixt.h>

using namespace mixt;
namespace bm = mixt::backward_math;
namespace nnf = mixt::nn::functional;

namespace {

Tensor seeded(const Shape& s, double lo, double hi, uint64_t seed, ScalarType dt = kFloat32) {
  Generator g(seed);
  return (rand(s, {.dtype = kFloat64}, &g) * (hi - lo) + lo).to(dt);
}

std::vector<double> values(const Tensor& t) { return t.to(kFloat64).contiguous().to_vector<double>(); }

}  // namespace

TEST_CASE("column_chunks covers every row once, in chunks of at least the minimum", "[backward_math]") {
  for (int64_t rows : {0, 1, 31, 32, 33, 64, 65, 1000, 8191, 8192, 8193, 16384, 100000, 1 << 24}) {
    const bm::ColumnChunks p = bm::column_chunks(rows);
    INFO("rows " << rows);
    if (rows == 0) {
      CHECK(p.chunks == 0);
      continue;
    }
    CHECK(p.chunks >= 1);
    CHECK(p.chunks <= bm::kColumnMaxChunks);
    CHECK(p.rows_per_chunk >= bm::kColumnChunkMinRows);
    int64_t next = 0;
    for (int64_t c = 0; c < p.chunks; ++c) {
      CHECK(bm::chunk_first_row(p, c) == next);
      const int64_t end = bm::chunk_end_row(p, c, rows);
      CHECK(end > next);  // no empty chunk
      next = end;
    }
    CHECK(next == rows);
  }
}

TEST_CASE("the per-element backward formulas", "[backward_math]") {
  CHECK(bm::softmax_grad<double>(0.25, 2.0, 0.5) == 0.25 * 1.5);
  CHECK(bm::log_softmax_grad<double>(2.0, 0.25, 4.0) == 1.0);
  CHECK(bm::norm_input_grad(3.0, 2.0, 0.5, 1.0, 0.5) == 0.5 * (3.0 - 2.0 - 0.5));
}

// The CUDA column kernels, replayed on the host: thread (column j, chunk c) sums its chunk's rows
// in order, then column j folds the chunks in order. The CPU kernel must give the same bits.
TEST_CASE("layer_norm_backward's column sums follow the device kernels' order", "[backward_math]") {
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat64}) {
    const int64_t rows = 300, cols = 7;
    const Tensor x = seeded({rows, cols}, -2, 2, 1, dt), g = seeded({rows, cols}, -1, 1, 2, dt);
    const ScalarType st = accumulate_type(dt);
    const Tensor mean = x.to(st).mean({1}), rstd = rsqrt(var(x.to(st), {1}, 0) + 1e-5);
    const nnf::NormGrads got = nnf::layer_norm_backward(g, x, {cols}, mean, rstd, Tensor(), {false, true, true});
    REQUIRE(!got.input.defined());
    REQUIRE(got.weight.dtype() == st);
    const std::vector<double> xv = values(x), gv = values(g), mv = values(mean), rv = values(rstd);
    const bm::ColumnChunks plan = bm::column_chunks(rows);
    REQUIRE(plan.chunks == 10);
    std::vector<double> partial(static_cast<size_t>(plan.chunks * cols * 2));
    for (int64_t c = 0; c < plan.chunks; ++c)
      for (int64_t j = 0; j < cols; ++j) {
        double sw = 0, sb = 0;
        for (int64_t r = bm::chunk_first_row(plan, c); r < bm::chunk_end_row(plan, c, rows); ++r) {
          const double gj = gv[r * cols + j];
          sw += gj * ((xv[r * cols + j] - mv[r]) * rv[r]);
          sb += gj;
        }
        partial[c * cols * 2 + j] = sw;
        partial[c * cols * 2 + cols + j] = sb;
      }
    const std::vector<double> gw = values(got.weight), gb = values(got.bias);
    for (int64_t j = 0; j < cols; ++j) {
      double sw = 0, sb = 0;
      for (int64_t c = 0; c < plan.chunks; ++c) {
        sw += partial[c * cols * 2 + j];
        sb += partial[c * cols * 2 + cols + j];
      }
      const double want_w = st == kFloat64 ? sw : static_cast<double>(static_cast<float>(sw));
      const double want_b = st == kFloat64 ? sb : static_cast<double>(static_cast<float>(sb));
      CHECK(std::memcmp(&gw[j], &want_w, sizeof(double)) == 0);
      CHECK(std::memcmp(&gb[j], &want_b, sizeof(double)) == 0);
    }
  }
}

// The gradients autograd computes through the fused ops against the same derivatives written in
// elementwise ops and reductions (the formulas mixt used before the fused ops), in float64.
TEST_CASE("autograd through softmax, log_softmax and the norms uses the fused ops correctly", "[backward_math]") {
  const Tensor g = seeded({4, 6}, -1, 1, 3, kFloat64);
  SECTION("softmax and log_softmax") {
    for (bool log : {false, true}) {
      Tensor x = seeded({4, 6}, -3, 3, 4, kFloat64).requires_grad_();
      const Tensor y = log ? nnf::log_softmax(x, 1) : nnf::softmax(x, 1);
      (y * g).sum().backward();
      const Tensor yd = y.detach();
      const Tensor want = log ? g - yd.exp() * g.sum({1}, true) : yd * (g - (g * yd).sum({1}, true));
      const std::vector<double> a = values(x.grad()), b = values(want);
      for (size_t i = 0; i < a.size(); ++i) CHECK(a[i] == Approx(b[i]).margin(1e-13));
    }
  }
  SECTION("layer_norm and rms_norm with weight and bias") {
    for (bool rms : {false, true}) {
      Tensor x = seeded({4, 6}, -2, 2, 5, kFloat64).requires_grad_();
      Tensor w = seeded({6}, 0.5, 1.5, 6, kFloat64).requires_grad_();
      Tensor b = seeded({6}, -1, 1, 7, kFloat64).requires_grad_();
      const Tensor y = rms ? nnf::rms_norm(x, {6}, w, 1e-5) : nnf::layer_norm(x, {6}, w, b, 1e-5);
      (y * g).sum().backward();
      const Tensor xd = x.detach();
      const Tensor mu = rms ? zeros({4, 1}, {.dtype = kFloat64}) : xd.mean({1}, true);
      const Tensor rs = rsqrt(((xd - mu) * (xd - mu)).mean({1}, true) + 1e-5);
      const Tensor xhat = (xd - mu) * rs, gw = g * w.detach();
      Tensor inner = gw - xhat * (gw * xhat).mean({1}, true);
      if (!rms) inner = inner - gw.mean({1}, true);
      const std::vector<double> gx = values(x.grad()), want_x = values(rs * inner);
      for (size_t i = 0; i < gx.size(); ++i) CHECK(gx[i] == Approx(want_x[i]).margin(1e-12));
      const std::vector<double> gwv = values(w.grad()), want_w = values((g * xhat).sum({0}));
      for (size_t i = 0; i < gwv.size(); ++i) CHECK(gwv[i] == Approx(want_w[i]).margin(1e-12));
      if (!rms) {
        const std::vector<double> gbv = values(b.grad()), want_b = values(g.sum({0}));
        for (size_t i = 0; i < gbv.size(); ++i) CHECK(gbv[i] == Approx(want_b[i]).margin(1e-12));
      } else {
        CHECK(!b.grad().defined());
      }
    }
  }
}

// layer_norm's backward never reads the bias's values, so it does not save the bias: an
// in-place update of the bias between forward and backward (a parameter step) is no error.
TEST_CASE("layer_norm's backward does not hold the bias", "[backward_math]") {
  Tensor x = seeded({3, 4}, -2, 2, 8, kFloat64).requires_grad_();
  Tensor b = seeded({4}, -1, 1, 9, kFloat64).requires_grad_();
  const Tensor y = nnf::layer_norm(x, {4}, Tensor(), b, 1e-5);
  {
    autograd::NoGradGuard no_grad;
    b.add_(1.0);
  }
  y.sum().backward();
  for (double v : values(b.grad())) CHECK(v == 3.0);  // the sum over the 3 rows of ones
  REQUIRE(x.grad().defined());
}

TEST_CASE("the fused backward ops refuse bad input naming the op", "[backward_math]") {
  const Tensor x = ones({2, 3}), st = ones({2});
  CHECK_THROWS_WITH(nnf::softmax_backward(ones({2, 4}), x, 1), Catch::Contains("softmax_backward"));
  CHECK_THROWS_WITH(nnf::softmax_backward(ones({2, 3}, {.dtype = kFloat64}), x, 1), Catch::Contains("softmax_backward"));
  CHECK_THROWS_WITH(nnf::log_softmax_backward(x, x, 2), Catch::Contains("log_softmax_backward"));
  CHECK_THROWS_WITH(nnf::layer_norm_backward(x, x, {4}, st, st), Catch::Contains("normalized_shape"));
  CHECK_THROWS_WITH(nnf::layer_norm_backward(x, x, {3}, ones({3}), st), Catch::Contains("mean"));
  CHECK_THROWS_WITH(nnf::layer_norm_backward(x, x, {3}, st, st.to(kFloat64)), Catch::Contains("rstd"));
  CHECK_THROWS_WITH(nnf::rms_norm_backward(x, x, {3}, st, ones({4})), Catch::Contains("weight"));
  CHECK_THROWS_WITH(nnf::rms_norm_backward(ones({2, 3}, {.dtype = kInt64}), ones({2, 3}, {.dtype = kInt64}), {3}, st),
                    Catch::Contains("rms_norm_backward"));
  // Not differentiable: backward through them raises.
  Tensor g = ones({2, 3}).requires_grad_();
  CHECK_THROWS_WITH(nnf::softmax_backward(g, x, 1).sum().backward(), Catch::Contains("softmax_backward"));
}
