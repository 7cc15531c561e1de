// The fused cross-entropy (Note [Fused cross-entropy]): cross_entropy_rows and its
// backward against long-double references in every floating dtype (weights, ignore_index,
// label smoothing, int32 targets, C = 1, rows of 50000 classes, NaN rows); cross_entropy's
// fused path against its unfused path (a weight that requires grad takes it), forward and
// gradient, in every shape and reduction; the same bits within each group of instruction
// sets; bad input naming the op; shapes on the meta device.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include <mixt/kernels/cpu/vec/isa.h>
#include <mixt/mixt.h>

#include "test_util.h"
#include "ulps.h"

using namespace mixt;
using namespace mixt::testing;
using Catch::Contains;
namespace nnf = mixt::nn::functional;
namespace vec = mixt::cpu::vec;
using nnf::Reduction;

namespace {

using Vec = std::vector<double>;
using LD = long double;

const ScalarType kEvery[] = {kFloat32, kFloat64, kFloat16, kBFloat16, kFloat8_e4m3fn, kFloat8_e5m2};
const Reduction kReductions[] = {Reduction::None, Reduction::Sum, Reduction::Mean};

// n values uniform in [lo, hi) from `seed`, stored in dt.
Tensor uniform(const Shape& s, ScalarType dt, double lo, double hi, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Vec v(static_cast<size_t>(s.numel()));
  for (double& x : v) x = u(rng);
  return make(v, kFloat64, s).to(dt);
}

Vec vals(const Tensor& t) { return t.to(kFloat64).to_vector<double>(); }

// Class indices in [0, classes) from `seed`; every third row (from row 1) is `ignore` when `ignore_some`.
std::vector<int64_t> targets(int64_t rows, int64_t classes, unsigned seed, bool ignore_some, int64_t ignore) {
  std::mt19937 rng(seed);
  std::vector<int64_t> t(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r)
    t[static_cast<size_t>(r)] = ignore_some && r % 3 == 1 ? ignore : static_cast<int64_t>(rng() % classes);
  return t;
}

Tensor index(const std::vector<int64_t>& t, ScalarType dt = kInt64) {
  return from_vector(t, {static_cast<int64_t>(t.size())}).to(dt);
}

// One row's reference in long double from the stored values: lse, the loss
// sum_c a_c (lse - x_c) with a_c = (1 - eps) w_t [c == t] + eps w_c / C, and the gradient
// g (A p_c - a_c), A = sum of a_c (a form other than the kernel's).
struct RowRef {
  LD lse = 0, loss = 0, a_sum = 0;
  std::vector<LD> grad;
};

RowRef row_ref(const double* x, int64_t n, int64_t t, const Vec& w, int64_t ignore, double eps, double g) {
  RowRef r;
  LD m = -INFINITY;
  bool nan = false;
  for (int64_t c = 0; c < n; ++c) {
    nan = nan || std::isnan(x[c]);
    m = std::max(m, static_cast<LD>(x[c]));
  }
  LD s = 0;
  for (int64_t c = 0; c < n; ++c) s += std::exp(static_cast<LD>(x[c]) - m);
  r.lse = nan || std::isinf(m) ? NAN : m + std::log(s);
  r.grad.assign(static_cast<size_t>(n), 0);
  if (t == ignore) return r;
  auto wc = [&](int64_t c) { return w.empty() ? 1.0L : static_cast<LD>(w[static_cast<size_t>(c)]); };
  for (int64_t c = 0; c < n; ++c) {
    const LD a = eps * wc(c) / n + (c == t ? (1 - eps) * wc(t) : 0.0L);
    r.a_sum += a;
    r.loss += a * (r.lse - x[c]);
  }
  for (int64_t c = 0; c < n; ++c) {
    const LD a = eps * wc(c) / n + (c == t ? (1 - eps) * wc(t) : 0.0L);
    r.grad[static_cast<size_t>(c)] = g * (r.a_sum * std::exp(static_cast<LD>(x[c]) - r.lse) - a);
  }
  return r;
}

// Checks cross_entropy_rows and its backward on logits [rows, classes] in dt against row_ref.
// The loss and lse are in float32 (float64) and carry the rounding of x - m and of exp in
// the work type (|x - m| <= span) over sums that do not cancel: (span + 4) roundings of the
// work type at A (|lse| + span) for the loss. The gradient rounds lse, x - lse and exp:
// (2 |lse| + span + 4) roundings at g A p_c + g a_c, then once to dt.
void check_rows(ScalarType dt, int64_t rows, int64_t classes, bool weighted, double eps, ScalarType target_dt,
                unsigned seed, double span = 8) {
  const int64_t ignore = -100;
  INFO(dtype_name(dt) << " [" << rows << ", " << classes << "] weighted " << weighted << " eps " << eps << " target "
                      << dtype_name(target_dt));
  const ScalarType acc = accumulate_type(dt);
  const Tensor x = uniform({rows, classes}, dt, -span / 2, span / 2, seed);
  const std::vector<int64_t> t = targets(rows, classes, seed + 1, true, ignore);
  const Tensor w = weighted ? uniform({classes}, acc, 0.25, 2, seed + 2) : Tensor();
  const Tensor g = uniform({rows}, acc, -2, 2, seed + 3);
  const nnf::CrossEntropyRows out = nnf::cross_entropy_rows(x, index(t, target_dt), w, ignore, eps);
  REQUIRE(out.loss.dtype() == acc);
  REQUIRE(out.lse.dtype() == acc);
  REQUIRE(out.loss.sizes() == Shape{rows});
  const Tensor gx = nnf::cross_entropy_rows_backward(g, x, index(t, target_dt), out.lse, w, ignore, eps);
  REQUIRE(gx.dtype() == dt);
  REQUIRE(gx.sizes() == Shape{rows, classes});
  const Vec xv = vals(x), wv = weighted ? vals(w) : Vec{}, gv = vals(g);
  const Vec loss = vals(out.loss), lse = vals(out.lse), grad = vals(gx);
  int64_t bad = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const RowRef ref = row_ref(xv.data() + r * classes, classes, t[static_cast<size_t>(r)], wv, ignore, eps,
                               gv[static_cast<size_t>(r)]);
    const double a = static_cast<double>(ref.a_sum), l = std::abs(static_cast<double>(ref.lse));
    const double want_loss = t[static_cast<size_t>(r)] == ignore ? 0.0 : static_cast<double>(ref.loss);
    if (!within(acc, loss[static_cast<size_t>(r)], want_loss, {0.5, span + 4, a * (l + span)}) ||
        !within(acc, lse[static_cast<size_t>(r)], static_cast<double>(ref.lse), {0.5, span + 4, l + 1})) {
      UNSCOPED_INFO("row " << r << ": loss " << loss[static_cast<size_t>(r)] << " want " << want_loss << ", lse "
                           << lse[static_cast<size_t>(r)] << " want " << static_cast<double>(ref.lse));
      ++bad;
    }
    const double gr = std::abs(gv[static_cast<size_t>(r)]);
    for (int64_t c = 0; c < classes; ++c) {
      const double want = static_cast<double>(ref.grad[static_cast<size_t>(c)]);
      const double p = std::exp(xv[static_cast<size_t>(r * classes + c)] - static_cast<double>(ref.lse));
      const double mag = gr * (a * p + (weighted ? 2.0 : 1.0));
      const double got = grad[static_cast<size_t>(r * classes + c)];
      if (!within(dt, got, want, {0.5, 2 * l + span + 4, mag})) {
        if (bad < 10) UNSCOPED_INFO("row " << r << " class " << c << ": grad " << got << " want " << want);
        ++bad;
      }
    }
  }
  CHECK(bad == 0);
}

// cross_entropy's unfused path: a weight that requires grad (ones for no weight: the same
// values) makes the composite take log_softmax, gather and the reductions.
Tensor unfused_weight(const Tensor& w, int64_t classes, ScalarType dt) {
  Tensor u = w.defined() ? w.detach().clone() : ones({classes}, of(dt));
  u.requires_grad_(true);
  return u;
}

// The loss and the logits' gradient of cross_entropy (for an upstream of seeded values).
struct LossGrad {
  Vec loss, grad;
};

LossGrad loss_and_grad(const Tensor& x0, const Tensor& t, const Tensor& w, int64_t ignore, Reduction r, double eps) {
  Tensor x = x0.detach().clone();
  x.requires_grad_(true);
  const Tensor y = nnf::cross_entropy(x, t, w, ignore, r, eps);
  const Tensor up = uniform(y.sizes(), y.dtype(), 0.5, 1.5, 7);
  mul(y, up).sum().backward();
  return {vals(y), vals(x.grad())};
}

// The bits of a tensor's values (a contiguous copy).
std::vector<unsigned char> bytes_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<unsigned char> b(static_cast<size_t>(c.numel() * c.element_size()));
  std::memcpy(b.data(), c.data_ptr(), b.size());
  return b;
}

struct IsaReset {
  ~IsaReset() { vec::set_isa_for_testing(std::nullopt); }
};

}  // namespace

TEST_CASE("cross_entropy_rows and its backward match a long-double reference in every floating dtype",
          "[cross_entropy]") {
  unsigned seed = 10;
  for (ScalarType dt : kEvery)
    for (bool weighted : {false, true})
      for (double eps : {0.0, 0.2}) {
        const ScalarType tdt = weighted ? kInt32 : kInt64;
        check_rows(dt, 7, 5, weighted, eps, tdt, seed++);
        check_rows(dt, 5, 37, weighted, eps, tdt, seed++);   // a tail after a whole block of 32 slots
        check_rows(dt, 4, 1, weighted, eps, tdt, seed++);    // one class: loss 0, gradient 0
        check_rows(dt, 70, 64, weighted, eps, tdt, seed++);  // rows spread over threads
      }
}

TEST_CASE("cross_entropy_rows: long rows of 50000 classes and wide logits stay within the bound", "[cross_entropy]") {
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat64, kFloat16}) {
    check_rows(dt, 3, 50000, true, 0.1, kInt64, 90);
    check_rows(dt, 3, 50000, false, 0.0, kInt32, 91);
  }
  check_rows(kFloat32, 6, 300, true, 0.3, kInt64, 92, 60);  // |x - m| up to 60
}

TEST_CASE("cross_entropy_rows: ignored rows, NaN rows, C = 1", "[cross_entropy]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (ScalarType dt : {kFloat32, kFloat64, kBFloat16}) {
    // Rows: a NaN row, an ignored NaN row, a plain row with an ignored target of 0.
    const Tensor x = make({1, nan, 2, nan, 0, 1, 3, 0, 1}, dt, {3, 3});
    const Tensor t = index({2, 0, 1});
    const nnf::CrossEntropyRows out = nnf::cross_entropy_rows(x, index({1, -7, 2}), {}, -7, 0.1);
    const Vec loss = vals(out.loss), lse = vals(out.lse);
    CHECK(std::isnan(loss[0]));
    CHECK(loss[1] == 0);  // ignored: 0 even for NaN logits, as PyTorch's nll_loss
    CHECK(std::isnan(lse[1]));  // lse is still written
    CHECK(std::isfinite(loss[2]));
    const Vec gx = vals(nnf::cross_entropy_rows_backward(ones({3}, of(accumulate_type(dt))), x, index({1, -7, 2}),
                                                         out.lse, {}, -7, 0.1));
    for (int c = 0; c < 3; ++c) {
      CHECK(std::isnan(gx[static_cast<size_t>(c)]));
      CHECK(gx[static_cast<size_t>(3 + c)] == 0);
      CHECK(std::isfinite(gx[static_cast<size_t>(6 + c)]));
    }
    // An ignore_index inside [0, C) ignores that class's rows.
    CHECK(vals(nnf::cross_entropy_rows(x, t, {}, 1).loss)[2] == 0);
  }
  // One class: the loss is 0 and lse is the logit, whatever the smoothing.
  const nnf::CrossEntropyRows one = nnf::cross_entropy_rows(make({3.5, -2}, kFloat32, {2, 1}), index({0, 0}), {}, -100, 0.4);
  CHECK(vals(one.loss) == Vec{0, 0});
  CHECK(vals(one.lse) == Vec{3.5, -2});
}

TEST_CASE("cross_entropy: the fused path matches the unfused path, forward and gradient", "[cross_entropy]") {
  struct Shaped {
    Shape logits;
    Shape target;
  };
  const Shaped shapes[] = {{{6, 5}, {6}}, {{5}, {}}, {{3, 4, 2, 3}, {3, 2, 3}}};
  unsigned seed = 200;
  for (ScalarType dt : kEvery)
    for (const Shaped& s : shapes)
      for (Reduction r : kReductions)
        for (bool weighted : {false, true})
          for (double eps : {0.0, 0.15}) {
            const int64_t classes = s.logits[s.logits.size() == 1 ? 0 : 1];
            const int64_t n = s.target.numel();
            const Tensor x = uniform(s.logits, dt, -4, 4, seed++);
            std::vector<int64_t> tv = targets(n, classes, seed++, n > 1, 2);  // class 2 ignored
            const Tensor t = reshape(from_vector(tv, {n}), s.target);
            const Tensor w = weighted ? uniform({classes}, dt == kFloat64 ? kFloat64 : kFloat32, 0.5, 2, seed++) : Tensor();
            INFO(dtype_name(dt) << " logits " << s.logits << " reduction " << static_cast<int>(r) << " weighted "
                                << weighted << " eps " << eps);
            const LossGrad fused = loss_and_grad(x, t, w, 2, r, eps);
            const LossGrad unfused = loss_and_grad(x, t, unfused_weight(w, classes, w.defined() ? w.dtype() : dt), 2, r, eps);
            REQUIRE(fused.loss.size() == unfused.loss.size());
            // Both compute in float32 (float64) and round to dt: an ulp of dt and 8 roundings of the
            // compute type at the size of the summed terms (|w logp| <= 2 (8 + log C) per row).
            const double terms = (r == Reduction::Sum ? static_cast<double>(n) : 1.0) * 20;
            for (size_t i = 0; i < fused.loss.size(); ++i)
              CHECK(within(dt, fused.loss[i], unfused.loss[i], {1, 8, terms}));
            // Every target ignored under a mean: a NaN loss both ways, and PyTorch's zero gradient
            // (the ignored rows take none) where the unfused path's 0 / 0 gives NaN.
            const bool all_ignored = std::count(tv.begin(), tv.end(), 2) == n;
            for (size_t i = 0; i < fused.grad.size(); ++i) {
              INFO("grad " << i << ": " << fused.grad[i] << " vs " << unfused.grad[i]);
              if (all_ignored && r == Reduction::Mean)
                CHECK(fused.grad[i] == 0);
              else
                CHECK(within(dt, fused.grad[i], unfused.grad[i], {1, 16, 4}));
            }
          }
}

TEST_CASE("cross_entropy: every target ignored gives PyTorch's NaN mean, 0 sum and zero gradients", "[cross_entropy]") {
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat64}) {
    const Tensor x = uniform({3, 4}, dt, -1, 1, 5);
    const Tensor t = index({-100, -100, -100});
    CHECK(std::isnan(nnf::cross_entropy(x, t).item<double>()));
    CHECK(nnf::cross_entropy(x, t, {}, -100, Reduction::Sum, 0.1).item<double>() == 0);
    CHECK(vals(nnf::cross_entropy(x, t, {}, -100, Reduction::None)) == Vec{0, 0, 0});
    for (Reduction r : {Reduction::Sum, Reduction::Mean}) {
      const LossGrad lg = loss_and_grad(x, t, {}, -100, r, 0.1);
      CHECK(lg.grad == Vec(12, 0.0));
    }
  }
}

TEST_CASE("cross_entropy_rows gives the same bits within each group of instruction sets", "[cross_entropy]") {
  // Sums in double in the fixed slot order, no contraction: the bits depend only on exp,
  // whose last bits differ between {scalar, sse4} and {avx2, avx512} (Note [Row kernels and
  // reductions]).
  const IsaReset reset;
  auto run_all = [] {
    std::vector<std::vector<unsigned char>> r;
    for (ScalarType dt : {kFloat32, kBFloat16, kFloat64}) {
      const ScalarType acc = accumulate_type(dt);
      const Tensor x = uniform({9, 1029}, dt, -6, 6, 31);
      const Tensor t = index(targets(9, 1029, 32, true, -100));
      const Tensor w = uniform({1029}, acc, 0.5, 1.5, 33);
      const nnf::CrossEntropyRows out = nnf::cross_entropy_rows(x, t, w, -100, 0.1);
      r.push_back(bytes_of(out.loss));
      r.push_back(bytes_of(out.lse));
      r.push_back(bytes_of(nnf::cross_entropy_rows_backward(uniform({9}, acc, -1, 1, 34), x, t, out.lse, w, -100, 0.1)));
    }
    return r;
  };
  std::vector<std::vector<unsigned char>> groups[2];
  for (int i = 0; i < vec::kIsaCount; ++i) {
    const auto isa = static_cast<vec::Isa>(i);
    if (!vec::isa_supported(isa)) continue;
    INFO(vec::isa_name(isa));
    vec::set_isa_for_testing(isa);
    auto& first = groups[isa >= vec::Isa::Avx2 ? 1 : 0];
    const auto got = run_all();
    if (first.empty())
      first = got;
    else
      CHECK(got == first);
  }
}

TEST_CASE("cross_entropy_rows refuses bad input naming the op and what is wrong", "[cross_entropy]") {
  const Tensor x = uniform({3, 5}, kFloat32, -1, 1, 3);
  const Tensor t = index({0, 4, 2});
  // Targets outside [0, C) that are not ignore_index (PyTorch: "Target 7 is out of bounds.").
  CHECK_THAT(error_of([&] { nnf::cross_entropy_rows(x, index({0, 7, 2})); }),
             Contains("cross_entropy_rows") && Contains("target 7 is out of bounds"));
  CHECK_THAT(error_of([&] { nnf::cross_entropy_rows(x, index({0, -1, 2}, kInt32)); }),
             Contains("cross_entropy_rows") && Contains("target -1"));
  CHECK_THAT(error_of([&] { nnf::cross_entropy(x, index({0, 5, 2})); }),
             Contains("cross_entropy") && Contains("target 5 is out of bounds"));
  const Tensor lse = nnf::cross_entropy_rows(x, t).lse;
  CHECK_THAT(error_of([&] { nnf::cross_entropy_rows_backward(ones({3}), x, index({0, 9, 2}), lse); }),
             Contains("cross_entropy_rows_backward") && Contains("target 9"));
  // Shapes and dtypes.
  CHECK_THAT(error_of([&] { nnf::cross_entropy_rows(uniform({3, 5, 2}, kFloat32, 0, 1, 4), t); }),
             Contains("cross_entropy_rows") && Contains("[3, 5, 2]"));
  CHECK_THAT(error_of([&] { nnf::cross_entropy_rows(x.to(kInt64), t); }), Contains("cross_entropy_rows"));
  CHECK_THAT(error_of([&] { nnf::cross_entropy_rows(x, index({0, 1})); }), Contains("cross_entropy_rows") && Contains("[2]"));
  CHECK_THAT(error_of([&] { nnf::cross_entropy_rows(x, t.to(kFloat32)); }),
             Contains("cross_entropy_rows") && Contains("float32"));
  CHECK_THAT(error_of([&] { nnf::cross_entropy_rows(x, t.to(kInt8)); }), Contains("cross_entropy_rows") && Contains("int8"));
  CHECK_THAT(error_of([&] { nnf::cross_entropy_rows(x, t, ones({5}, of(kFloat64))); }),
             Contains("cross_entropy_rows") && Contains("weight") && Contains("float64"));
  CHECK_THAT(error_of([&] { nnf::cross_entropy_rows(x, t, ones({4})); }),
             Contains("cross_entropy_rows") && Contains("weight") && Contains("[4]"));
  CHECK_THAT(error_of([&] { nnf::cross_entropy_rows(x, t, {}, -100, 1.5); }),
             Contains("cross_entropy_rows") && Contains("label_smoothing"));
  CHECK_THAT(error_of([&] { nnf::cross_entropy_rows(empty({3, 0}), t); }), Contains("cross_entropy_rows"));
  CHECK_THAT(error_of([&] { nnf::cross_entropy_rows_backward(ones({3}, of(kFloat64)), x, t, lse); }),
             Contains("cross_entropy_rows_backward") && Contains("grad_loss"));
  CHECK_THAT(error_of([&] { nnf::cross_entropy_rows_backward(ones({3}), x, t, ones({4})); }),
             Contains("cross_entropy_rows_backward") && Contains("lse"));
  // Devices: every input on the logits' device.
  const Tensor meta_t = empty({3}, {.dtype = kInt64, .device = Device::meta()});
  CHECK_THAT(error_of([&] { nnf::cross_entropy_rows(x, meta_t); }), Contains("cross_entropy_rows") && Contains("meta"));
  // Differentiable in the logits only: a weight that requires grad is refused (cross_entropy
  // takes its unfused path for it), lse comes back detached, and the backward op raises.
  Tensor wg = ones({5});
  wg.requires_grad_(true);
  CHECK_THAT(error_of([&] { nnf::cross_entropy_rows(x, t, wg); }), Contains("cross_entropy_rows") && Contains("weight"));
  Tensor xg = x.clone();
  xg.requires_grad_(true);
  const nnf::CrossEntropyRows out = nnf::cross_entropy_rows(xg, t);
  CHECK(out.loss.requires_grad());
  CHECK_FALSE(out.lse.requires_grad());
  Tensor gl = ones({3});
  gl.requires_grad_(true);
  CHECK_THAT(error_of([&] { nnf::cross_entropy_rows_backward(gl, x, t, lse).sum().backward(); }),
             Contains("cross_entropy_rows_backward"));
}

TEST_CASE("cross_entropy_rows on the meta device: shapes and dtypes, and cross_entropy's fused path", "[cross_entropy]") {
  const TensorOptions meta{.dtype = kBFloat16, .device = Device::meta()};
  const Tensor x = empty({4, 7}, meta), t = empty({4}, {.dtype = kInt32, .device = Device::meta()});
  const nnf::CrossEntropyRows out = nnf::cross_entropy_rows(x, t);
  CHECK(out.loss.is_meta());
  CHECK(out.loss.dtype() == kFloat32);
  CHECK(out.lse.sizes() == Shape{4});
  const Tensor gx = nnf::cross_entropy_rows_backward(empty({4}, {.dtype = kFloat32, .device = Device::meta()}), x, t,
                                                     out.lse);
  CHECK(gx.is_meta());
  CHECK(gx.dtype() == kBFloat16);
  CHECK(gx.sizes() == Shape{4, 7});
  const Tensor y = nnf::cross_entropy(empty({2, 7, 3}, meta), empty({2, 3}, {.dtype = kInt64, .device = Device::meta()}),
                                      {}, -100, Reduction::None);
  CHECK(y.is_meta());
  CHECK(y.dtype() == kBFloat16);
  CHECK(y.sizes() == Shape{2, 3});
  CHECK(nnf::cross_entropy(x, t).sizes() == Shape{});
  CHECK_THAT(error_of([&] { nnf::cross_entropy_rows(x, empty({5}, {.dtype = kInt64, .device = Device::meta()})); }),
             Contains("cross_entropy_rows") && Contains("[5]"));
}
