// The vectorised row kernels and reductions (kernels/cpu/vec/rows.h, reduce_loops.h):
// their accuracy claims (docs/notes/cpu-vectorisation.md, Note [Row kernels and
// reductions]), the long-row, strided and outer-dim paths against float64 references
// computed here, the special rows of softmax, and the instruction sets that must agree
// bit for bit.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <iomanip>
#include <random>
#include <vector>

#include <mixt/kernels/cpu/vec/isa.h>
#include <mixt/mixt.h>

#include "test_util.h"
#include "ulps.h"

using namespace mixt;
using namespace mixt::testing;
namespace nnf = mixt::nn::functional;
namespace vec = mixt::cpu::vec;

namespace {

using Vec = std::vector<double>;

// n values uniform in [lo, hi) from a fixed seed, exact in `dt`.
Vec uniform(int64_t n, double lo, double hi, unsigned seed, ScalarType dt = kFloat32) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(lo, hi);
  Vec v(static_cast<size_t>(n));
  for (double& x : v) x = u(rng);
  return values(make(v, kFloat64).to(dt));
}

// softmax (log_softmax) of one line in double.
Vec softmax_ref(const Vec& x, bool log) {
  double m = -INFINITY;
  for (double v : x) m = std::max(m, v);
  double s = 0;
  for (double v : x) s += std::exp(v - m);
  Vec y;
  for (double v : x) y.push_back(log ? v - m - std::log(s) : std::exp(v - m) / s);
  return y;
}

// The line of `t` ([outer, n, inner] around dim) that starts at (o, 0, k), as doubles.
Vec line(const Vec& v, int64_t n, int64_t inner, int64_t o, int64_t k) {
  Vec l;
  for (int64_t j = 0; j < n; ++j) l.push_back(v[static_cast<size_t>((o * n + j) * inner + k)]);
  return l;
}

// softmax's tolerance (tests/support/op_cases_nn.cpp): x - m rounded in float at |x - m| <= span, then
// exp (within a few float ulps) and the product with 1 / sum: span + 4 float roundings relative to y.
Tolerance softmax_tol(double span) { return {0.5, span + 4}; }

// Counts the elements of `got` outside the tolerance of `ref`.
int64_t misses(ScalarType dt, const Vec& got, const Vec& ref, const Tolerance& tol) {
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) bad += within(dt, got[i], ref[i], tol) ? 0 : 1;
  return bad;
}

// The instruction sets this CPU runs, weakest first.
std::vector<vec::Isa> supported_isas() {
  std::vector<vec::Isa> isas;
  for (int i = 0; i < vec::kIsaCount; ++i)
    if (vec::isa_supported(static_cast<vec::Isa>(i))) isas.push_back(static_cast<vec::Isa>(i));
  return isas;
}

// Restores the default instruction set when it goes out of scope.
struct IsaReset {
  ~IsaReset() { vec::set_isa_for_testing(std::nullopt); }
};

// The bytes of a tensor's values (contiguous copy), for bit comparisons.
std::vector<unsigned char> bytes_of(const Tensor& t) {
  const Tensor c = t.contiguous();
  std::vector<unsigned char> b(static_cast<size_t>(c.numel() * c.element_size()));
  std::memcpy(b.data(), c.data_ptr(), b.size());
  return b;
}

}  // namespace

TEST_CASE("sums accumulate in double: 2^24 + 16 ones in float32 sum exactly", "[vec_rows]") {
  // A float32 accumulator stops at 2^24 (2^24 + 1 rounds back to 2^24); double holds every count.
  const int64_t n = (int64_t{1} << 24) + 16;
  const Tensor x = ones({n}, of(kFloat32));
  CHECK(sum(x).item<double>() == static_cast<double>(n));
  CHECK(mean(x).item<double>() == 1.0);
  // The same count as row sums (2^23 + 8 each) and as a reduction over the outer dim.
  const Tensor rows = ones({2, n / 2}, of(kFloat32));
  CHECK(values(sum(rows, {1})) == Vec{static_cast<double>(n / 2), static_cast<double>(n / 2)});
  CHECK(values(sum(ones({n / 4, 4}, of(kFloat32)), {0})) == Vec(4, static_cast<double>(n / 4)));
}

TEST_CASE("sums of many small values match a float64 reference within the stated bound", "[vec_rows]") {
  // Rows of 100003 values in [0, 1): the sums in double are within (terms per slot + 5) * 2^-53 * sum|x|
  // of the exact sum (far below float32's half ulp), then rounded once to the dtype.
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat16, kFloat64}) {
    INFO(dtype_name(dt));
    const int64_t n = 100003;
    const Vec v = uniform(3 * n, 0, 1, 7, dt);
    const Tensor x = make(v, dt, {3, n});
    const Tensor xt = x.t().contiguous();  // its columns: the reduction over dim 0 streams the rows
    const Vec rows_sum = values(sum(x, {1})), rows_mean = values(mean(x, {1})), cols_sum = values(sum(xt, {0}));
    for (int64_t r = 0; r < 3; ++r) {
      double exact = 0, abs_sum = 0;
      for (int64_t j = 0; j < n; ++j) exact += v[static_cast<size_t>(r * n + j)];
      for (int64_t j = 0; j < n; ++j) abs_sum += std::abs(v[static_cast<size_t>(r * n + j)]);
      // The rows: 32 slots of about n / 32 terms each, then a tree of 5 additions. The columns
      // (one running sum per output): n roundings.
      const Tolerance slots{0.5, n / 32.0 + 5, abs_sum, kFloat64}, running{0.5, static_cast<double>(n), abs_sum, kFloat64};
      CHECK(within(dt, rows_sum[static_cast<size_t>(r)], exact, slots));
      CHECK(within(dt, rows_mean[static_cast<size_t>(r)], exact / n, {0.5, n / 32.0 + 6, abs_sum / n, kFloat64}));
      CHECK(within(dt, cols_sum[static_cast<size_t>(r)], exact, running));
    }
  }
}

TEST_CASE("reductions over the outer dim and strided runs agree with float64", "[vec_rows]") {
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat16, kFloat64}) {
    INFO(dtype_name(dt));
    const int64_t rows = 517, cols = 4133;  // odd sizes: vector tails everywhere
    const Vec v = uniform(rows * cols, -2, 3, 11, dt);
    const Tensor x = make(v, dt, {rows, cols});
    const Vec s0 = values(sum(x, {0})), a0 = values(amax(x, {0})), m0 = values(amin(x, {0})), var0 = values(var(x, {0}));
    const Vec s1 = values(sum(x, {1})), a1 = values(amax(x, {1})), var1 = values(var(x, {1}));
    for (int64_t c = 0; c < cols; c += 97) {
      double s = 0, a = -INFINITY, m = INFINITY;
      for (int64_t r = 0; r < rows; ++r) {
        const double e = v[static_cast<size_t>(r * cols + c)];
        s += e, a = std::max(a, e), m = std::min(m, e);
      }
      double q = 0;
      for (int64_t r = 0; r < rows; ++r) q += std::pow(v[static_cast<size_t>(r * cols + c)] - s / rows, 2);
      CHECK(within(dt, s0[static_cast<size_t>(c)], s, {0.5, 64, 3.0 * rows, kFloat64}));
      CHECK(a0[static_cast<size_t>(c)] == a);
      CHECK(m0[static_cast<size_t>(c)] == m);
      CHECK(within(dt, var0[static_cast<size_t>(c)], q / (rows - 1), {0.5, 1e3, 0, kFloat64}));
    }
    for (int64_t r = 0; r < rows; r += 37) {
      double s = 0, a = -INFINITY;
      for (int64_t c = 0; c < cols; ++c) s += v[static_cast<size_t>(r * cols + c)];
      for (int64_t c = 0; c < cols; ++c) a = std::max(a, v[static_cast<size_t>(r * cols + c)]);
      double q = 0;
      for (int64_t c = 0; c < cols; ++c) q += std::pow(v[static_cast<size_t>(r * cols + c)] - s / cols, 2);
      CHECK(within(dt, s1[static_cast<size_t>(r)], s, {0.5, 256, 3.0 * cols, kFloat64}));
      CHECK(a1[static_cast<size_t>(r)] == a);
      CHECK(within(dt, var1[static_cast<size_t>(r)], q / (cols - 1), {0.5, 1e3, 0, kFloat64}));
    }
    // A strided view (every other column): the runs are not contiguous.
    const Tensor strided = x.slice(1, 0, cols, 2);
    const Vec ss = values(sum(strided, {1}));
    double s = 0;
    for (int64_t c = 0; c < cols; c += 2) s += v[static_cast<size_t>(c)];
    CHECK(within(dt, ss[0], s, {0.5, 64, 3.0 * cols, kFloat64}));
  }
}

TEST_CASE("reductions over dim 0 of many rows stream chunks of rows and agree with float64", "[vec_rows]") {
  // 1100 rows: chunks of 512, 512 and 76 rows, combined in order; 37 columns: a vector tail.
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat16, kFloat64}) {
    INFO(dtype_name(dt));
    const int64_t rows = 1100, cols = 37;
    Vec v = uniform(rows * cols, -2, 3, 17, dt);
    v[static_cast<size_t>(700 * cols + 5)] = kNan;  // column 5 holds a NaN (in the second chunk)
    const Tensor x = make(v, dt, {rows, cols});
    const Vec s = values(sum(x, {0})), mx = values(amax(x, {0})), mn = values(amin(x, {0})), vr = values(var(x, {0}));
    const Vec n2 = values(norm(x, 2.0, {0})), n1 = values(norm(x, 1.0, {0})), mu = values(mean(x, {0}));
    for (int64_t c = 0; c < cols; ++c) {
      INFO("column " << c);
      const size_t k = static_cast<size_t>(c);
      double sm = 0, a = -INFINITY, b = INFINITY, sq = 0, ab = 0;
      for (int64_t r = 0; r < rows; ++r) {
        const double e = v[static_cast<size_t>(r * cols + c)];
        sm += e, sq += e * e, ab += std::abs(e);
        a = std::isnan(a) || std::isnan(e) ? kNan : std::max(a, e);
        b = std::isnan(b) || std::isnan(e) ? kNan : std::min(b, e);
      }
      double q = 0;
      for (int64_t r = 0; r < rows; ++r) q += std::pow(v[static_cast<size_t>(r * cols + c)] - sm / rows, 2);
      const Tolerance t{0.5, 2.0 * rows, 3.0 * rows, kFloat64};  // the kernel's and the reference's n roundings
      CHECK(within(dt, s[k], sm, t));
      CHECK(within(dt, mu[k], sm / rows, {0.5, 2.0 * rows, 3.0, kFloat64}));
      CHECK(same_values({mx[k]}, {a}));
      CHECK(same_values({mn[k]}, {b}));
      CHECK(within(dt, vr[k], q / (rows - 1), {0.5, 1e4, 0, kFloat64}));
      CHECK(within(dt, n2[k], std::sqrt(sq), {0.5, 2.0 * rows, 0, kFloat64}));
      CHECK(within(dt, n1[k], ab, {0.5, 2.0 * rows, 0, kFloat64}));
    }
  }
}

TEST_CASE("logsumexp and the 1- and 2-norms of long rows match float64", "[vec_rows]") {
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat16, kFloat64}) {
    INFO(dtype_name(dt));
    const int64_t rows = 5, n = 20011;
    const Vec v = uniform(rows * n, -4, 4, 13, dt);
    const Tensor x = make(v, dt, {rows, n});
    const Vec lse = values(logsumexp(x, {1})), n2 = values(norm(x, 2.0, {1})), n1 = values(norm(x, 1.0, {1}));
    const Vec lse0 = values(logsumexp(x.t().contiguous(), {0}));
    for (int64_t r = 0; r < rows; ++r) {
      double m = -INFINITY, s = 0, sq = 0, ab = 0;
      for (int64_t j = 0; j < n; ++j) m = std::max(m, v[static_cast<size_t>(r * n + j)]);
      for (int64_t j = 0; j < n; ++j) {
        const double e = v[static_cast<size_t>(r * n + j)];
        s += std::exp(e - m), sq += e * e, ab += std::abs(e);
      }
      // Sums in double (n / 32 + 5 roundings of the terms' size) and exp within a few double ulps.
      const Tolerance in_double{0.5, n / 32.0 + 16, 0, kFloat64};
      CHECK(within(dt, lse[static_cast<size_t>(r)], m + std::log(s), in_double));
      CHECK(within(dt, lse0[static_cast<size_t>(r)], m + std::log(s), {0.5, n + 16.0, 0, kFloat64}));
      CHECK(within(dt, n2[static_cast<size_t>(r)], std::sqrt(sq), in_double));
      CHECK(within(dt, n1[static_cast<size_t>(r)], ab, in_double));
    }
    // Special rows: NaN wins, +Inf gives +Inf, only -Inf gives -Inf.
    Vec special = uniform(3 * 100, -1, 1, 14, dt);
    special[37] = kNan;
    special[100 + 99] = kInf;
    for (int j = 200; j < 300; ++j) special[static_cast<size_t>(j)] = -kInf;
    const Vec got = values(logsumexp(make(special, dt, {3, 100}), {1}));
    CHECK(std::isnan(got[0]));
    CHECK(got[1] == kInf);
    CHECK(got[2] == -kInf);
  }
}

TEST_CASE("amax and amin propagate NaN through the vector path", "[vec_rows]") {
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat64}) {
    INFO(dtype_name(dt));
    Vec v = uniform(1000, -1, 1, 3, dt);
    v[517] = kNan;
    const Tensor x = make(v, dt, {1, 1000});
    CHECK(std::isnan(amax(x, {1}).item<double>()));
    CHECK(std::isnan(amin(x, {1}).item<double>()));
    CHECK(std::isnan(values(amax(x.t().contiguous(), {0}))[0]));
  }
}

TEST_CASE("softmax and log_softmax: long rows, other dims and every floating dtype", "[vec_rows]") {
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat16, kFloat64}) {
    INFO(dtype_name(dt));
    SECTION("a long row (100007 values, a vector tail)") {
      const Vec v = uniform(100007, -8, 8, 5, dt);
      const Tensor x = make(v, dt, {1, 100007});
      for (bool log : {false, true}) {
        INFO("log " << log);
        const Vec got = values(log ? nnf::log_softmax(x, 1) : nnf::softmax(x, 1));
        const Tolerance tol = log ? Tolerance{0.5, 4, 24} : softmax_tol(16);
        CHECK(misses(dt, got, softmax_ref(v, log), tol) == 0);
      }
    }
    SECTION("dims that are not the innermost") {
      // 19 lines: gathered tiles of 16 and 3; 133 and 2100 lines: column blocks (2100 = 2048 + 52).
      for (const Shape& shape : {Shape{3, 301, 19}, Shape{2, 67, 133}, Shape{1, 9, 2100}}) {
        const int64_t outer = shape[0], n = shape[1], inner = shape[2];
        INFO("shape " << outer << "x" << n << "x" << inner);
        const Vec v = uniform(outer * n * inner, -6, 6, 9, dt);
        const Tensor x = make(v, dt, shape);
        for (bool log : {false, true}) {
          INFO("log " << log);
          const Vec got = values(log ? nnf::log_softmax(x, 1) : nnf::softmax(x, 1));
          int64_t bad = 0;
          for (int64_t o = 0; o < outer; ++o)
            for (int64_t k = 0; k < inner; ++k)
              bad += misses(dt, line(got, n, inner, o, k), softmax_ref(line(v, n, inner, o, k), log),
                            log ? Tolerance{0.5, 4, 18} : softmax_tol(12));
          CHECK(bad == 0);
        }
      }
      const Tensor x = make(uniform(3 * 301 * 19, -6, 6, 9, dt), dt, {3, 301, 19});
      // The input as a transposed (non-contiguous) view: the same values as its contiguous copy.
      const Tensor xt = x.transpose(0, 2);
      CHECK(values(nnf::softmax(xt, 1)) == values(nnf::softmax(xt.contiguous(), 1)));
    }
  }
}

TEST_CASE("softmax backward over long rows and other dims matches float64", "[vec_rows]") {
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat64}) {
    INFO(dtype_name(dt));
    for (const int64_t inner : {int64_t{3}, int64_t{80}}) {  // gathered tiles, column blocks
    INFO("inner " << inner);
    const int64_t outer = 2, n = inner == 3 ? 5003 : 301;
    const Vec g = uniform(outer * n * inner, -1, 1, 21, dt);
    const Tensor gt = make(g, dt, {outer, n, inner});
    const Tensor y = nnf::softmax(make(uniform(outer * n * inner, -3, 3, 22, dt), dt, {outer, n, inner}), 1);
    const Tensor ly = nnf::log_softmax(make(uniform(outer * n * inner, -3, 3, 23, dt), dt, {outer, n, inner}), 1);
    const Vec yv = values(y), lyv = values(ly);
    const Vec got = values(nnf::softmax_backward(gt, y, 1)), lgot = values(nnf::log_softmax_backward(gt, ly, 1));
    int64_t bad = 0;
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t k = 0; k < inner; ++k) {
        const Vec gl = line(g, n, inner, o, k), yl = line(yv, n, inner, o, k), lyl = line(lyv, n, inner, o, k);
        double dot = 0, gs = 0, dot_abs = 0, gs_abs = 0;
        for (int64_t j = 0; j < n; ++j) dot += gl[static_cast<size_t>(j)] * yl[static_cast<size_t>(j)];
        for (int64_t j = 0; j < n; ++j) gs += gl[static_cast<size_t>(j)];
        for (int64_t j = 0; j < n; ++j) dot_abs += std::abs(gl[static_cast<size_t>(j)] * yl[static_cast<size_t>(j)]);
        for (int64_t j = 0; j < n; ++j) gs_abs += std::abs(gl[static_cast<size_t>(j)]);
        // The line sums in double: within (n / 32 + 5) double roundings of the sum of |terms|.
        const double sum_error = (n / 32.0 + 5) * 0x1p-53;
        Vec ref, lref;
        for (int64_t j = 0; j < n; ++j) {
          ref.push_back(yl[static_cast<size_t>(j)] * (gl[static_cast<size_t>(j)] - dot));
          lref.push_back(gl[static_cast<size_t>(j)] - std::exp(lyl[static_cast<size_t>(j)]) * gs);
        }
        // k rounded to the compute type, the difference and the product: 3 roundings at |y| (|g| + |k|);
        // log: k, exp (a few ulps), the product and the difference at |g| + |exp(y) k|.
        const Vec gotl = line(got, n, inner, o, k), lgotl = line(lgot, n, inner, o, k);
        for (int64_t j = 0; j < n; ++j) {
          const size_t i = static_cast<size_t>(j);
          const double y0 = yl[i], g0 = gl[i];
          const bool ok = within(dt, gotl[i], ref[i], {0.5, 3, std::abs(y0) * (std::abs(g0) + std::abs(dot))},
                                 std::abs(y0) * sum_error * dot_abs);
          const bool lok = within(dt, lgotl[i], lref[i], {0.5, 6, std::abs(g0) + std::exp(lyl[i]) * std::abs(gs)},
                                  std::exp(lyl[i]) * sum_error * gs_abs);
          if ((!ok || !lok) && bad < 3) {
            UNSCOPED_INFO(std::setprecision(17) << "j " << j << (ok ? " log" : " plain") << ": " << gotl[i] << " vs " << ref[i] << ", log " << lgotl[i] << " vs " << lref[i]);
          }
          bad += (ok ? 0 : 1) + (lok ? 0 : 1);
        }
      }
    CHECK(bad == 0);
    }
  }
}

TEST_CASE("softmax of special rows: NaN, +Inf and -Inf as before", "[vec_rows]") {
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat64}) {
    INFO(dtype_name(dt));
    // 37 values per row so both the vector body and the tail see the special value.
    auto row = [](double special, int at) {
      Vec v(37);
      for (int j = 0; j < 37; ++j) v[static_cast<size_t>(j)] = 0.1 * j - 1;
      v[static_cast<size_t>(at)] = special;
      return v;
    };
    for (int at : {3, 35}) {
      INFO("at " << at);
      for (bool log : {false, true}) {
        // The row path (a [1, 37] row) and the column path (the line as columns 5 and 67 of a
        // [37, 70] block, in a vector body and in a tail, softmax over dim 0).
        for (bool columns : {false, true}) {
          INFO("columns " << columns);
          auto run = [&](const Vec& v) {
            if (!columns) {
              const Tensor x = make(v, dt, {1, 37});
              return values(log ? nnf::log_softmax(x, 1) : nnf::softmax(x, 1));
            }
            Vec block(37 * 70, 0.5);
            for (int j = 0; j < 37; ++j)
              for (int c : {5, 67}) block[static_cast<size_t>(j * 70 + c)] = v[static_cast<size_t>(j)];
            const Vec y = values((log ? nnf::log_softmax(make(block, dt, {37, 70}), 0)
                                      : nnf::softmax(make(block, dt, {37, 70}), 0)));
            Vec out;
            for (int j = 0; j < 37; ++j) {
              CHECK(same_values({y[static_cast<size_t>(j * 70 + 5)]}, {y[static_cast<size_t>(j * 70 + 67)]}));
              out.push_back(y[static_cast<size_t>(j * 70 + 67)]);
            }
            return out;
          };
          for (double special : {kNan, kInf}) {  // NaN propagates; +Inf - +Inf is NaN: the whole line is NaN
            for (double y : run(row(special, at))) CHECK(std::isnan(y));
          }
          for (double y : run(Vec(37, -kInf))) CHECK(std::isnan(y));  // only -Inf: NaN, as PyTorch
          // One -Inf among finite values: probability 0 (log: -Inf), the rest as without it.
          const Vec with = run(row(-kInf, at));
          CHECK(with[static_cast<size_t>(at)] == (log ? -kInf : 0.0));
          for (double y : with) CHECK(!std::isnan(y));
        }
      }
    }
  }
}

TEST_CASE("layer_norm and rms_norm, forward and backward, over long rows", "[vec_rows]") {
  for (ScalarType dt : {kFloat32, kBFloat16, kFloat64}) {
    INFO(dtype_name(dt));
    const int64_t rows = 3, n = 10007;
    const Vec v = uniform(rows * n, -2, 3, 31, dt);
    const Tensor x = make(v, dt, {rows, n});
    const Tensor w = make(uniform(n, 0.5, 1.5, 32, dt), dt, {n}), b = make(uniform(n, -1, 1, 33, dt), dt, {n});
    const Vec wv = values(w), bv = values(b);
    const Vec y = values(nnf::layer_norm(x, {n}, w, b, 1e-5)), r = values(nnf::rms_norm(x, {n}, w, 1e-5));
    int64_t bad = 0;
    for (int64_t i = 0; i < rows; ++i) {
      double m = 0, q = 0, ms = 0;
      for (int64_t j = 0; j < n; ++j) m += v[static_cast<size_t>(i * n + j)] / n;
      for (int64_t j = 0; j < n; ++j) q += std::pow(v[static_cast<size_t>(i * n + j)] - m, 2) / n;
      for (int64_t j = 0; j < n; ++j) ms += std::pow(v[static_cast<size_t>(i * n + j)], 2) / n;
      for (int64_t j = 0; j < n; ++j) {
        const size_t k = static_cast<size_t>(i * n + j);
        const double ln = (v[k] - m) / std::sqrt(q + 1e-5) * wv[static_cast<size_t>(j)] + bv[static_cast<size_t>(j)];
        const double rn = v[k] / std::sqrt(ms + 1e-5) * wv[static_cast<size_t>(j)];
        // Statistics and the affine map in double: a few thousand double roundings at |terms| <= 10.
        bad += within(dt, y[k], ln, {0.5, 1e4, 10, kFloat64}) ? 0 : 1;
        bad += within(dt, r[k], rn, {0.5, 1e4, 10, kFloat64}) ? 0 : 1;
      }
    }
    CHECK(bad == 0);
    // The backward against autograd's float64 evaluation of the same formula.
    const Tensor g = make(uniform(rows * n, -1, 1, 34, dt), dt, {rows, n});
    Tensor x64 = x.to(kFloat64);
    x64.requires_grad_(true);
    const Tensor w64 = w.to(kFloat64);
    const Tensor loss = (nnf::layer_norm(x64, {n}, w64, Tensor(), 1e-5) * g.to(kFloat64)).sum();
    loss.backward();
    const Vec ref = values(x64.grad());
    Tensor xg = x.detach();
    xg.requires_grad_(true);
    (nnf::layer_norm(xg, {n}, w, Tensor(), 1e-5) * g).sum().backward();
    // The statistics reach the backward in the accumulate type (float32 for float32 and bfloat16):
    // their roundings move xhat and rstd by a few float32 ulps, at |terms| <= 10.
    CHECK(misses(dt, values(xg.grad()), ref, {0.5, 16, 10}) == 0);
  }
}

TEST_CASE("sums, var, amax, norms, layer_norm and rms_norm give the same bits on every instruction set", "[vec_rows]") {
  // The sums are taken in the same slot order on every instruction set, and the per-element
  // double arithmetic has no contraction: the docs promise these bits (softmax's exp is
  // only within its ulp bound, see the next test).
  const IsaReset reset;
  const int64_t rows = 7, n = 1029;
  const Tensor x = make(uniform(rows * n, -3, 3, 41), kFloat32, {rows, n});
  const Tensor xb = x.to(kBFloat16), w = make(uniform(n, 0.5, 1.5, 42), kFloat32, {n});
  const Tensor g = make(uniform(rows * n, -1, 1, 43), kFloat32, {rows, n});
  const Tensor y = nnf::softmax(x, 1);  // computed once: exp's bits may differ between instruction sets
  auto run_all = [&] {
    std::vector<std::vector<unsigned char>> r;
    for (const Tensor& t : {x, xb}) {
      r.push_back(bytes_of(sum(t, {1})));
      r.push_back(bytes_of(sum(t, {0})));
      r.push_back(bytes_of(var(t, {1})));
      r.push_back(bytes_of(mean(t)));
      r.push_back(bytes_of(amax(t, {1})));
      r.push_back(bytes_of(norm(t, 2.0, {1})));
      r.push_back(bytes_of(norm(t, 1.0, {0})));
      r.push_back(bytes_of(nnf::layer_norm(t, {n}, w.to(t.dtype()), Tensor(), 1e-5)));
      r.push_back(bytes_of(nnf::rms_norm(t, {n}, w.to(t.dtype()), 1e-5)));
    }
    Tensor xg = x.detach();
    xg.requires_grad_(true);
    (nnf::layer_norm(xg, {n}, Tensor(), Tensor(), 1e-5) * g).sum().backward();
    r.push_back(bytes_of(xg.grad()));
    Tensor xr = x.detach(), wr = w.detach();
    xr.requires_grad_(true);
    wr.requires_grad_(true);
    (nnf::rms_norm(xr, {n}, wr, 1e-5) * g).sum().backward();
    r.push_back(bytes_of(xr.grad()));
    r.push_back(bytes_of(wr.grad()));
    r.push_back(bytes_of(nnf::softmax_backward(g, y, 1)));  // no exp in softmax's backward
    return r;
  };
  const std::vector<vec::Isa> isas = supported_isas();
  REQUIRE(!isas.empty());
  vec::set_isa_for_testing(isas.front());
  const auto first = run_all();
  for (vec::Isa isa : isas) {
    INFO(vec::isa_name(isa));
    vec::set_isa_for_testing(isa);
    const auto got = run_all();
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("result " << i);
      CHECK(got[i] == first[i]);
    }
  }
}

TEST_CASE("softmax on every instruction set stays within its tolerance", "[vec_rows]") {
  const IsaReset reset;
  const Vec v = uniform(4 * 1001, -10, 10, 51);
  const Tensor x = make(v, kFloat32, {4, 1001});
  for (vec::Isa isa : supported_isas()) {
    INFO(vec::isa_name(isa));
    vec::set_isa_for_testing(isa);
    const Vec got = values(nnf::softmax(x, 1)), lgot = values(nnf::log_softmax(x, 1));
    int64_t bad = 0;
    for (int64_t r = 0; r < 4; ++r) {
      const Vec row(v.begin() + r * 1001, v.begin() + (r + 1) * 1001);
      const Vec ref = softmax_ref(row, false), lref = softmax_ref(row, true);
      for (int64_t j = 0; j < 1001; ++j) {
        bad += within(kFloat32, got[static_cast<size_t>(r * 1001 + j)], ref[static_cast<size_t>(j)], softmax_tol(20)) ? 0 : 1;
        bad += within(kFloat32, lgot[static_cast<size_t>(r * 1001 + j)], lref[static_cast<size_t>(j)], {0.5, 4, 30}) ? 0 : 1;
      }
    }
    CHECK(bad == 0);
  }
}

TEST_CASE("amax and amin of rows: a NaN anywhere gives NaN, else the extremum, every length and position",
          "[vec][rows]") {
  // The row kernel keeps several extrema and NaN flags in flight (Note [Row kernels and
  // reductions]): a NaN or the extremum at any offset, in the unrolled body or the tail.
  for (int64_t n : {1, 15, 16, 17, 63, 64, 65, 130, 257}) {
    for (int64_t at = 0; at < n; at += (n > 70 ? 7 : 1)) {
      INFO("n " << n << ", at " << at);
      std::vector<float> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = static_cast<float>((i * 37) % 101) - 50.0f;
      std::vector<float> peak = v, dip = v;
      peak[static_cast<size_t>(at)] = 1000.0f;
      dip[static_cast<size_t>(at)] = -1000.0f;
      CHECK(amax(from_vector(peak), {0}).item<float>() == 1000.0f);
      CHECK(amin(from_vector(dip), {0}).item<float>() == -1000.0f);
      std::vector<float> nan = v;
      nan[static_cast<size_t>(at)] = std::nanf("");
      CHECK(std::isnan(amax(from_vector(nan), {0}).item<float>()));
      CHECK(std::isnan(amin(from_vector(nan), {0}).item<float>()));
    }
  }
}
