// index_select, gather, scatter(_), scatter_add(_), masked_fill(_) and embedding:
// expected values computed here with plain loops over row-major data, negative dims
// and indices, non-contiguous operands, several dtypes, and every error case.
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <mixt/mixt.h>

#include "test_util.h"

using namespace mixt;
using namespace mixt::testing;
namespace F = mixt::nn::functional;

namespace {

using I64 = std::vector<int64_t>;
using F64 = std::vector<double>;

Tensor idx(const I64& values, const Shape& shape = {}) { return from_vector(values, shape); }

// A 0-dim tensor of `dtype` (explicit options: the header's default argument warns under -Wextra).
Tensor scalar(const Scalar& v, ScalarType dtype) { return scalar_tensor(v, of(dtype)); }

// The message of the mixt::Error `f` throws ("" when it throws none).

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Row-major coordinates of `flat` in `sizes`, and back.
I64 unravel(int64_t flat, const I64& sizes) {
  I64 c(sizes.size());
  for (int d = static_cast<int>(sizes.size()) - 1; d >= 0; --d) {
    c[d] = flat % sizes[d];
    flat /= sizes[d];
  }
  return c;
}
int64_t ravel(const I64& c, const I64& sizes) {
  int64_t f = 0;
  for (size_t d = 0; d < sizes.size(); ++d) f = f * sizes[d] + c[d];
  return f;
}

// Reference gather over row-major vectors: out[c] = self[c with c[dim] = index[c]].
F64 ref_gather(const F64& self, const I64& ssizes, const I64& index, const I64& isizes, int dim) {
  F64 out(index.size());
  for (size_t i = 0; i < index.size(); ++i) {
    I64 c = unravel(static_cast<int64_t>(i), isizes);
    c[dim] = index[i] < 0 ? index[i] + ssizes[dim] : index[i];
    out[i] = self[ravel(c, ssizes)];
  }
  return out;
}

// Reference scatter (add = false) or scatter_add over row-major vectors.
F64 ref_scatter(F64 self, const I64& ssizes, const I64& index, const I64& isizes, const F64& src,
                const I64& srcsizes, int dim, bool add) {
  for (size_t i = 0; i < index.size(); ++i) {
    const I64 c = unravel(static_cast<int64_t>(i), isizes);
    I64 t = c;
    t[dim] = index[i] < 0 ? index[i] + ssizes[dim] : index[i];
    const double v = src[ravel(c, srcsizes)];
    double& dst = self[ravel(t, ssizes)];
    dst = add ? dst + v : v;
  }
  return self;
}

}  // namespace

TEST_CASE("index_select picks slices along a dim", "[index]") {
  Tensor t = iota({3, 4});
  Tensor r = index_select(t, 0, idx({2, 0, 2}));
  CHECK(r.sizes() == Shape{3, 4});
  CHECK(r.to_vector<double>() == ref_gather(t.to_vector<double>(), {3, 4}, {2, 2, 2, 2, 0, 0, 0, 0, 2, 2, 2, 2},
                                            {3, 4}, 0));
  Tensor c = index_select(t, -1, from_vector(std::vector<int32_t>{3, 1}));
  CHECK(c.sizes() == Shape{3, 2});
  CHECK(c.to_vector<float>() == std::vector<float>{3, 1, 7, 5, 11, 9});
  CHECK(index_select(t, 0, idx({-1, 0})).to_vector<float>() == std::vector<float>{8, 9, 10, 11, 0, 1, 2, 3});
  // Non-contiguous self: t^T[i][k] = t[k][i].
  Tensor tt = t.t();
  CHECK(index_select(tt, 0, idx({1})).to_vector<float>() == std::vector<float>{1, 5, 9});
  CHECK(index_select(tt, 1, idx({2, 0})).to_vector<float>() == std::vector<float>{8, 0, 9, 1, 10, 2, 11, 3});
  // 3-D permuted self, dim 1.
  Tensor p = iota({2, 3, 4}).permute({2, 0, 1});  // [4, 2, 3]: p[a][b][c] = b*12 + c*4 + a
  Tensor ps = index_select(p, 1, idx({1, 1, 0}));
  REQUIRE(ps.sizes() == Shape{4, 3, 3});
  const auto pv = ps.to_vector<float>();
  const int64_t pick[3] = {1, 1, 0};
  for (int a = 0; a < 4; ++a)
    for (int k = 0; k < 3; ++k)
      for (int cc = 0; cc < 3; ++cc) CHECK(pv[(a * 3 + k) * 3 + cc] == static_cast<float>(pick[k] * 12 + cc * 4 + a));
  // Empty index and 0-dim self.
  CHECK(index_select(t, 0, idx({})).sizes() == Shape{0, 4});
  Tensor s = index_select(scalar(5.0, kFloat64), 0, idx({0}));
  CHECK(s.dim() == 0);
  CHECK(s.item<double>() == 5.0);
}

TEST_CASE("index_select in several dtypes", "[index]") {
  for (ScalarType dt : {kInt64, kUInt8, kBool, kBFloat16, kFloat16, kFloat64, kFloat8_e4m3fn}) {
    INFO(dtype_name(dt));
    Tensor src = iota({4, 3}).to(dt);
    const auto sv = src.to_vector<double>();
    Tensor r = index_select(src, 1, idx({2, 2, 0}));
    CHECK(r.dtype() == dt);
    CHECK(r.to_vector<double>() == ref_gather(sv, {4, 3}, {2, 2, 0, 2, 2, 0, 2, 2, 0, 2, 2, 0}, {4, 3}, 1));
  }
}

TEST_CASE("index_select errors", "[index]") {
  Tensor t = iota({3, 4});
  const std::string msg = error_of([&] { index_select(t, 0, idx({0, 3})); });
  CHECK(contains(msg, "index_select"));
  CHECK(contains(msg, "index 3"));
  CHECK_THROWS_AS(index_select(t, 0, idx({-4})), Error);
  CHECK_THROWS_AS(index_select(t, 1, idx({4})), Error);
  CHECK_THROWS_AS(index_select(t, 0, from_vector(std::vector<float>{0})), Error);
  CHECK_THROWS_AS(index_select(t, 0, idx({0, 1}, {1, 2})), Error);
  CHECK_THROWS_AS(index_select(t, 2, idx({0})), Error);
  CHECK_THROWS_AS(index_select(t, -3, idx({0})), Error);
  CHECK_THROWS_AS(index_select(scalar(1.0, kFloat64), 0, idx({0, 0})), Error);
  CHECK_THROWS_AS(index_select(zeros({0, 2}), 0, idx({0})), Error);
}

TEST_CASE("gather follows the index along dim", "[index]") {
  Tensor t = iota({3, 4});
  const F64 tv = t.to_vector<double>();
  const I64 i1{0, 0, 1, 0, 3, 2};
  Tensor g1 = gather(t, 1, idx(i1, {3, 2}));
  CHECK(g1.sizes() == Shape{3, 2});
  CHECK(g1.to_vector<float>() == std::vector<float>{0, 0, 5, 4, 11, 10});
  CHECK(gather(t, -1, idx(i1, {3, 2})).to_vector<double>() == ref_gather(tv, {3, 4}, i1, {3, 2}, 1));
  const I64 i0{2, 1, 0, 2, 0, 0, 1, 1};
  CHECK(gather(t, 0, idx(i0, {2, 4})).to_vector<double>() == ref_gather(tv, {3, 4}, i0, {2, 4}, 0));
  const I64 small{1, -1, 0, -3};  // index smaller than self off dim; negative values count from the end
  CHECK(gather(t, 0, idx(small, {2, 2})).to_vector<double>() == ref_gather(tv, {3, 4}, small, {2, 2}, 0));
  // Non-contiguous self and index.
  Tensor tt = t.t();  // [4, 3]
  const F64 ttv = tt.to_vector<double>();
  Tensor it = idx({0, 1, 2, 3, 3, 2}, {2, 3}).t();  // [3, 2] non-contiguous: [[0,3],[1,3],[2,2]]
  CHECK(gather(tt, 0, it).to_vector<double>() == ref_gather(ttv, {4, 3}, {0, 3, 1, 3, 2, 2}, {3, 2}, 0));
  // 3-D, int32 and bfloat16.
  Tensor x = iota({2, 3, 4}).to(kInt32);
  const I64 i3{3, 0, 1, 2, 2, 2, 1, 0, 0, 3, 3, 1};
  CHECK(gather(x, 2, idx(i3, {2, 2, 3})).to_vector<double>() ==
        ref_gather(x.to_vector<double>(), {2, 3, 4}, i3, {2, 2, 3}, 2));
  Tensor xb = x.to(kBFloat16);
  CHECK(gather(xb, 1, idx(I64(12, 2), {2, 2, 3})).to_vector<double>() ==
        ref_gather(xb.to_vector<double>(), {2, 3, 4}, I64(12, 2), {2, 2, 3}, 1));
  // Empty index, 0-dim self.
  CHECK(gather(t, 1, idx({}, {3, 0})).sizes() == Shape{3, 0});
  CHECK(gather(scalar(4.0, kFloat64), 0, scalar(0, kInt64)).item<double>() == 4.0);
}

TEST_CASE("gather errors", "[index]") {
  Tensor t = iota({3, 4});
  const std::string msg = error_of([&] { gather(t, 1, idx({0, 7, 1}, {3, 1})); });
  CHECK(contains(msg, "gather"));
  CHECK(contains(msg, "index 7"));
  CHECK_THROWS_AS(gather(t, 1, idx({-5, 0, 0}, {3, 1})), Error);
  CHECK_THROWS_AS(gather(t, 1, idx({0, 0, 0, 0}, {4, 1})), Error);  // 4 > 3 rows off dim
  CHECK_THROWS_AS(gather(t, 1, idx({0, 0})), Error);                // 1-D index on 2-D self
  CHECK_THROWS_AS(gather(t, 2, idx({0}, {1, 1})), Error);
  CHECK_THROWS_AS(gather(t, 0, from_vector(std::vector<double>{0}, {1, 1})), Error);
  CHECK_THROWS_AS(gather(t, 0, from_vector(std::vector<bool>{false}, {1, 1})), Error);
}

TEST_CASE("scatter writes src or a value along dim", "[index]") {
  const F64 srcv{1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  Tensor src = from_vector(std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {2, 5});
  Tensor self = zeros({3, 5});
  const I64 i0{0, 1, 2, 0};
  Tensor r = scatter(self, 0, idx(i0, {1, 4}), src);
  CHECK(r.to_vector<float>() == std::vector<float>{1, 0, 0, 4, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0});
  CHECK(self.to_vector<float>() == std::vector<float>(15, 0.f));  // out of place: self unchanged
  const I64 i1{0, 1, 2, 2, 0, 4};
  CHECK(scatter(self, -1, idx(i1, {2, 3}), src).to_vector<double>() ==
        ref_scatter(F64(15, 0.0), {3, 5}, i1, {2, 3}, srcv, {2, 5}, 1, false));
  Tensor v = scatter(zeros({2, 4}), 1, idx({1, -2}, {2, 1}), 1.25);
  CHECK(v.to_vector<float>() == std::vector<float>{0, 1.25f, 0, 0, 0, 0, 1.25f, 0});
  // In place on a non-contiguous self.
  Tensor base = zeros({5, 3});
  Tensor st = base.t();  // [3, 5]
  const uint32_t v0 = base.version();
  scatter_(st, 1, idx(i1, {2, 3}), src);
  CHECK(base.version() > v0);
  CHECK(st.to_vector<double>() == ref_scatter(F64(15, 0.0), {3, 5}, i1, {2, 3}, srcv, {2, 5}, 1, false));
  scatter_(st, 0, idx({2}, {1, 1}), -7);
  CHECK(st.to_vector<float>()[10] == -7.f);
  // int64 and fp8 dtypes; a float value truncates into an integer tensor.
  Tensor li = scatter(zeros({4}, of(kInt64)), 0, idx({3, 1}), 2.9);
  CHECK(li.to_vector<int64_t>() == I64{0, 2, 0, 2});
  Tensor f8src = from_vector(std::vector<float>{0.75f}).to(kFloat8_e5m2);
  Tensor f8 = scatter(zeros({3}, of(kFloat8_e5m2)), 0, idx({1}), f8src);
  CHECK(f8.to_vector<float>() == std::vector<float>{0, 0.75f, 0});
  // Empty index: a copy of self.
  CHECK(scatter(iota({2}), 0, idx({}), iota({2})).to_vector<float>() == std::vector<float>{0, 1});
}

TEST_CASE("scatter_add accumulates duplicates", "[index]") {
  CHECK(scatter_add(zeros({3}), 0, idx({0, 1, 0, 2, 0}), ones({5})).to_vector<float>() ==
        std::vector<float>{3, 1, 1});
  const I64 i1{0, 0, 2, 1, 1, 1};
  const F64 sv{1, 2, 3, 4, 5, 6};
  Tensor src = from_vector(sv, {2, 3});
  CHECK(scatter_add(zeros({2, 3}, of(kFloat64)), 1, idx(i1, {2, 3}), src).to_vector<double>() ==
        F64{3, 0, 3, 0, 15, 0});
  for (ScalarType dt : {kInt32, kInt8, kBFloat16, kFloat16, kFloat32}) {
    INFO(dtype_name(dt));
    Tensor self = iota({3, 3}).to(dt);
    const I64 i0{2, 0, 2, 2, 2, 1};
    Tensor s = src.to(dt);
    const F64 expect =
        ref_scatter(self.to_vector<double>(), {3, 3}, i0, {2, 3}, s.to_vector<double>(), {2, 3}, 0, true);
    CHECK(scatter_add(self, -2, idx(i0, {2, 3}), s).to_vector<double>() == expect);
    scatter_add_(self, 0, idx(i0, {2, 3}), s);
    CHECK(self.to_vector<double>() == expect);
  }
  Tensor b = zeros({3}, of(kBool));
  scatter_add_(b, 0, idx({2, 2}), from_vector(std::vector<bool>{true, false}));
  CHECK(b.to_vector<bool>() == std::vector<bool>{false, false, true});
  // src aliasing self reads the values from before the call.
  Tensor a = iota({4});
  scatter_add_(a, 0, idx({1, 2, 3}), a.slice(0, 0, 3));
  CHECK(a.to_vector<float>() == std::vector<float>{0, 1, 3, 5});
}

TEST_CASE("scatter errors", "[index]") {
  Tensor self = zeros({3, 4});
  Tensor src = ones({2, 4});
  const std::string msg = error_of([&] { scatter(self, 0, idx({0, 3}, {1, 2}), src); });
  CHECK(contains(msg, "scatter"));
  CHECK(contains(msg, "index 3"));
  CHECK_THROWS_AS(scatter(self, 0, idx({-4}, {1, 1}), src), Error);
  CHECK_THROWS_AS(scatter(self, 1, idx({4}, {1, 1}), 1.0), Error);
  CHECK_THROWS_AS(scatter(self, 0, idx({0, 0, 0}, {3, 1}), src), Error);        // 3 > src's 2 rows
  CHECK_THROWS_AS(scatter(self, 0, idx({0, 0, 0, 0, 0}, {1, 5}), ones({2, 5})), Error);  // 5 > self's 4 columns
  CHECK_THROWS_AS(scatter(self, 0, idx({0}), src), Error);                      // 1-D index
  CHECK_THROWS_AS(scatter(self, 0, idx({0}, {1, 1}), ones({4})), Error);        // 1-D src
  CHECK_THROWS_AS(scatter(self, 0, idx({0}, {1, 1}), ones({2, 4}, of(kFloat64))), Error);  // dtype mismatch
  CHECK_THROWS_AS(scatter(self, 0, from_vector(std::vector<float>{0}, {1, 1}), src), Error);
  CHECK_THROWS_AS(scatter(self, 2, idx({0}, {1, 1}), src), Error);
  CHECK_THROWS_AS(scatter_add(self, 0, idx({5}, {1, 1}), src), Error);
  CHECK_THROWS_AS(scatter_add(self, 0, idx({0}, {1, 1}), ones({1, 1}, of(kInt32))), Error);
  Tensor expanded = zeros({1, 4}).expand({3, 4});
  CHECK_THROWS_AS(scatter_(expanded, 0, idx({0}, {1, 1}), src), Error);
  // A failed in-place scatter leaves self untouched (indices are checked first).
  Tensor keep = zeros({3});
  CHECK_THROWS_AS(scatter_(keep, 0, idx({0, 9}), ones({2})), Error);
  CHECK(keep.to_vector<float>() == std::vector<float>(3, 0.f));
}

TEST_CASE("masked_fill", "[index]") {
  Tensor t = iota({2, 3});
  Tensor row = from_vector(std::vector<bool>{true, false, true});
  Tensor r = masked_fill(t, row, -1);
  CHECK(r.to_vector<float>() == std::vector<float>{-1, 1, -1, -1, 4, -1});
  CHECK(t.to_vector<float>() == std::vector<float>{0, 1, 2, 3, 4, 5});
  const uint32_t v0 = t.version();
  masked_fill_(t, from_vector(std::vector<bool>{false, true}, {2, 1}), 9.5);
  CHECK(t.version() > v0);
  CHECK(t.to_vector<float>() == std::vector<float>{0, 1, 2, 9.5f, 9.5f, 9.5f});
  // Non-contiguous self: t^T is [3, 2].
  Tensor base = iota({2, 3});
  Tensor tt = base.t();
  masked_fill_(tt, from_vector(std::vector<bool>{true, false, false, false, false, true}, {3, 2}), 7);
  CHECK(base.to_vector<float>() == std::vector<float>{7, 1, 2, 3, 4, 7});
  // The out-of-place result broadcasts self and mask together.
  Tensor b = masked_fill(iota({3}), from_vector(std::vector<bool>{true, false, false, false, false, true}, {2, 3}), 5);
  CHECK(b.sizes() == Shape{2, 3});
  CHECK(b.to_vector<float>() == std::vector<float>{5, 1, 2, 0, 1, 5});
  // Dtypes: values convert like a cast.
  CHECK(masked_fill(iota({3}).to(kInt32), row, 2.9).to_vector<int32_t>() == std::vector<int32_t>{2, 1, 2});
  CHECK(masked_fill(zeros({3}, of(kBool)), row, true).to_vector<bool>() == std::vector<bool>{true, false, true});
  CHECK(masked_fill(zeros({3}, of(kFloat8_e4m3fn)), row, 0.5).to_vector<float>() == std::vector<float>{0.5f, 0, 0.5f});
  CHECK(masked_fill(zeros({3}, of(kFloat64)), scalar(true, kBool), -2).to_vector<double>() == F64{-2, -2, -2});
  CHECK(masked_fill(zeros({0, 3}), row, 1).sizes() == Shape{0, 3});
  // Errors.
  const std::string msg = error_of([&] { masked_fill(iota({3}), iota({3}).to(kUInt8), 1); });
  CHECK(contains(msg, "masked_fill"));
  CHECK(contains(msg, "uint8"));
  CHECK_THROWS_AS(masked_fill(iota({3}), from_vector(std::vector<bool>{true, false}), 1), Error);
  Tensor small = iota({3});
  CHECK_THROWS_AS(masked_fill_(small, from_vector(std::vector<bool>(6, true), {2, 3}), 1), Error);
  Tensor expanded = zeros({1}).expand({3});
  CHECK_THROWS_AS(masked_fill_(expanded, row, 1), Error);
}

TEST_CASE("embedding looks up rows", "[index]") {
  Tensor w = iota({5, 3});
  Tensor e = F::embedding(idx({0, 4, 2, -1}, {2, 2}), w);
  CHECK(e.sizes() == Shape{2, 2, 3});
  CHECK(e.to_vector<float>() == std::vector<float>{0, 1, 2, 12, 13, 14, 6, 7, 8, 12, 13, 14});
  Tensor e32 = F::embedding(from_vector(std::vector<int32_t>{1, 1, 3}), w, 0);
  CHECK(e32.sizes() == Shape{3, 3});
  CHECK(e32.to_vector<float>() == std::vector<float>{3, 4, 5, 3, 4, 5, 9, 10, 11});
  Tensor e0 = F::embedding(scalar(2, kInt64), w);
  CHECK(e0.sizes() == Shape{3});
  CHECK(e0.to_vector<float>() == std::vector<float>{6, 7, 8});
  // Non-contiguous weight: wt[r][j] = j * 5 + r.
  Tensor wt = iota({3, 5}).t();
  CHECK(F::embedding(idx({4, 0}), wt).to_vector<float>() == std::vector<float>{4, 9, 14, 0, 5, 10});
  Tensor wb = w.to(kBFloat16);
  Tensor eb = F::embedding(idx({3}), wb);
  CHECK(eb.dtype() == kBFloat16);
  CHECK(eb.to_vector<float>() == std::vector<float>{9, 10, 11});
  CHECK(F::embedding(idx({}), w).sizes() == Shape{0, 3});
}

TEST_CASE("embedding errors", "[index]") {
  Tensor w = iota({5, 3});
  const std::string msg = error_of([&] { F::embedding(idx({1, 5}), w); });
  CHECK(contains(msg, "embedding"));
  CHECK(contains(msg, "index 5"));
  CHECK_THROWS_AS(F::embedding(idx({-6}), w), Error);
  CHECK_THROWS_AS(F::embedding(idx({0}), w, 5), Error);
  CHECK_THROWS_AS(F::embedding(idx({0}), w, -6), Error);  // (-1 is the last row, -5 the first)
  CHECK_THROWS_AS(F::embedding(idx({0}), iota({5})), Error);
  CHECK_THROWS_AS(F::embedding(from_vector(std::vector<float>{0}), w), Error);
  CHECK_THROWS_AS(F::embedding(iota({1, 1, 1, 1, 1, 1, 1, 1}).to(kInt64), w), Error);  // result beyond 8 dims
}

TEST_CASE("large inputs take the parallel loops and agree with the reference", "[index]") {
  const int64_t rows = 300, cols = 400;
  Tensor t = iota({rows, cols}).to(kFloat64);
  const F64 tv = t.to_vector<double>();
  I64 gi(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < gi.size(); ++i) gi[i] = static_cast<int64_t>((i * 7919) % cols);
  CHECK(gather(t, 1, idx(gi, {rows, cols})).to_vector<double>() == ref_gather(tv, {rows, cols}, gi, {rows, cols}, 1));
  // Non-contiguous self takes the strided path.
  Tensor tt = t.t();
  CHECK(gather(tt, 0, idx(gi, {cols, rows})).to_vector<double>() ==
        ref_gather(tt.to_vector<double>(), {cols, rows}, gi, {cols, rows}, 0));
  I64 si(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < si.size(); ++i) si[i] = static_cast<int64_t>((i * 31) % 200);
  CHECK(scatter_add(zeros({200, cols}, of(kFloat64)), 0, idx(si, {rows, cols}), t).to_vector<double>() ==
        ref_scatter(F64(200 * cols, 0.0), {200, cols}, si, {rows, cols}, tv, {rows, cols}, 0, true));
  I64 rowsel(rows);
  for (int64_t i = 0; i < rows; ++i) rowsel[i] = rows - 1 - i;
  const auto rev = index_select(t, 0, idx(rowsel)).to_vector<double>();
  const auto revt = index_select(tt, 1, idx(rowsel)).to_vector<double>();
  bool ok = true, okt = true;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      ok = ok && rev[i * cols + j] == tv[(rows - 1 - i) * cols + j];
      okt = okt && revt[j * rows + i] == tv[(rows - 1 - i) * cols + j];
    }
  CHECK(ok);
  CHECK(okt);
  std::vector<bool> mv(static_cast<size_t>(rows * cols));
  for (size_t i = 0; i < mv.size(); ++i) mv[i] = i % 3 == 0;
  const auto mf = masked_fill(t, from_vector(mv, {rows, cols}), -1).to_vector<double>();
  int64_t bad = 0;
  for (size_t i = 0; i < mf.size(); ++i) bad += mf[i] != (mv[i] ? -1.0 : tv[i]);
  CHECK(bad == 0);
}

// ---- index_add, index_put, masked_select, nonzero, sort, argsort, topk, unique ----

TEST_CASE("index_add adds scaled slices; repeated indices add up", "[index][index_add]") {
  const Tensor self = zeros({2, 3}, of(kFloat64));
  const Tensor src = from_vector(F64{1, 2, 3, 4}, {2, 2});
  const Tensor r = index_add(self, 1, idx({2, -1}), src, 0.5);  // both to column 2
  CHECK(r.to_vector<double>() == F64{0, 0, 1.5, 0, 0, 3.5});
  CHECK(self.to_vector<double>() == F64(6, 0.0));  // out of place
  // Integers, a 1-D self.
  CHECK(index_add(from_vector(I64{1, 1, 1}), 0, idx({0, 0, 2}), from_vector(I64{5, 6, 7})).to_vector<int64_t>() ==
        I64{12, 1, 8});
  const std::string m = error_of([&] { index_add(self, 1, idx({3}), from_vector(F64{1, 2}, {2, 1})); });
  CHECK(contains(m, "index_add"));
  CHECK(contains(m, "out of bounds"));
  const Tensor one = ones({2, 1}, of(kFloat64));
  CHECK(contains(error_of([&] { index_add(self, 1, idx({0}), ones({3, 1}, of(kFloat64))); }), "[2, 3]"));  // shape
  CHECK(contains(error_of([&] { index_add(self, 2, idx({0}), one); }), "out of range"));
  CHECK(contains(error_of([&] { index_add(self, 1, from_vector(F64{0}), one); }), "int64"));
  CHECK(contains(error_of([&] { index_add(self, 1, idx({0}), ones({2, 1})); }), "one dtype"));
}

TEST_CASE("index_put writes or accumulates at broadcast index tuples", "[index][index_put]") {
  const Tensor x = zeros({3, 2}, of(kFloat64));
  // Rows [0, 2] x column 1, then the rows as a whole with one index.
  CHECK(index_put(x, {idx({0, 2}), idx({1})}, from_vector(F64{5})).to_vector<double>() == F64{0, 5, 0, 0, 0, 5});
  CHECK(index_put(x, {idx({-1})}, from_vector(F64{1, 2})).to_vector<double>() == F64{0, 0, 0, 0, 1, 2});
  // accumulate: the repeated (1, 0) adds up, in order.
  const Tensor acc = index_put(x, {idx({1, 1, 0}), idx({0, 0, 1})}, from_vector(F64{1, 2, 4}), true);
  CHECK(acc.to_vector<double>() == F64{0, 4, 3, 0, 0, 0});
  const std::string m = error_of([&] { index_put(x, {idx({3})}, from_vector(F64{1})); });
  CHECK(contains(m, "index_put"));
  CHECK(contains(m, "out of bounds"));
  CHECK(contains(error_of([&] { index_put(x, {idx({0, 1}), idx({0, 1, 0})}, from_vector(F64{1})); }), "broadcast"));
  CHECK(contains(error_of([&] { index_put(x, {idx({0}), idx({0}), idx({0})}, from_vector(F64{1})); }), "too many"));
  CHECK(contains(error_of([&] { index_put(x, {idx({0})}, from_vector(F64{1, 2, 3})); }), "do not broadcast"));
  CHECK_THROWS_AS(index_put(x, {from_vector(F64{0})}, from_vector(F64{1})), Error);
}

TEST_CASE("index_add and index_put are deterministic with many repeated indices", "[index][determinism]") {
  // 4096 additions into two positions, in float32: the sum depends on the order, which is the index order.
  const int64_t n = 4096;
  I64 where(n);
  F64 v(n);
  for (int64_t i = 0; i < n; ++i) where[i] = i % 2, v[i] = 1.0 + static_cast<double>(i % 7) * 1e-3 + 1e-7 * i;
  const Tensor src = from_vector(v).to(kFloat32);
  const Tensor a = index_put(zeros({2}), {idx(where)}, src, true);
  float expect[2] = {0, 0};
  for (int64_t i = 0; i < n; ++i) expect[i % 2] += static_cast<float>(v[i]);
  CHECK(a.to_vector<float>() == std::vector<float>{expect[0], expect[1]});
  CHECK(index_add(zeros({2}), 0, idx(where), src).to_vector<float>() == a.to_vector<float>());
}

TEST_CASE("masked_select and nonzero follow row-major order", "[index][masked_select]") {
  const Tensor x = from_vector(F64{1, 0, 3, 0, 5, 6}, {2, 3});
  const Tensor mask = from_vector(std::vector<bool>{true, false, true});
  CHECK(masked_select(x, mask).to_vector<double>() == F64{1, 3, 0, 6});  // the mask broadcasts over rows
  CHECK(nonzero(x).sizes() == Shape{4, 2});
  CHECK(nonzero(x).to_vector<int64_t>() == I64{0, 0, 0, 2, 1, 1, 1, 2});
  CHECK(nonzero(scalar(0.0, kFloat32)).sizes() == Shape{0, 0});
  CHECK(nonzero(from_vector(F64{std::nan(""), -0.0})).to_vector<int64_t>() == I64{0});  // NaN is nonzero, -0 is not
  CHECK(contains(error_of([&] { masked_select(x, ones({2, 3})); }), "bool"));
  CHECK(contains(error_of([&] { masked_select(x, from_vector(std::vector<bool>{true, false})); }), "[2, 3]"));
  // On meta tensors the result size is unknown: a clear error, as PyTorch's meta kernels give.
  const std::string m = error_of([&] { nonzero(x.to(Device::meta())); });
  CHECK(contains(m, "nonzero"));
  CHECK(contains(m, "depends on the input's values"));
  CHECK(contains(error_of([&] { unique(x.to(Device::meta())); }), "unique"));
  // Gradients go back to the selected elements, summed over the broadcast.
  Tensor w = from_vector(F64{1, 2, 3}).set_requires_grad(true);
  sum(mul(masked_select(w.expand({2, 3}), from_vector(std::vector<bool>{true, false, true, true, true, false}, {2, 3})),
          2.0))
      .backward();
  CHECK(w.grad().to_vector<double>() == F64{4, 2, 2});
}

TEST_CASE("masked_select and nonzero of large tensors: chunks over the threads, random masks", "[index][masked_select]") {
  // Sizes past several chunks, odd extents (chunks end inside rows), 1-D to 3-D, and every
  // element size; the expected results are built one element at a time.
  for (const Shape& shape : {Shape{300007}, Shape{517, 613}, Shape{3, 211, 199}}) {
    INFO(shape);
    const Tensor keep = gt(rand(shape), 0.5);
    const std::vector<bool> kv = keep.to_vector<bool>();
    const int64_t n = shape.numel(), nd = static_cast<int64_t>(shape.size());
    std::vector<int64_t> coords;
    for (int64_t i = 0; i < n; ++i) {
      if (!kv[static_cast<size_t>(i)]) continue;
      std::vector<int64_t> c(static_cast<size_t>(nd));
      int64_t rem = i;
      for (int64_t d = nd - 1; d >= 0; --d) {
        c[static_cast<size_t>(d)] = rem % shape[static_cast<int>(d)];
        rem /= shape[static_cast<int>(d)];
      }
      coords.insert(coords.end(), c.begin(), c.end());
    }
    const Tensor nz = nonzero(keep);
    CHECK(nz.sizes() == Shape{static_cast<int64_t>(coords.size()) / nd, nd});
    CHECK(nz.to_vector<int64_t>() == coords);
    for (ScalarType dt : {kUInt8, kBFloat16, kFloat32, kInt64}) {
      INFO(dt);
      const Tensor x = arange(0, n, 1, of(kInt64)).reshape(shape).to(dt);
      const std::vector<double> xv = x.to(kFloat64).to_vector<double>();
      F64 want;
      for (int64_t i = 0; i < n; ++i)
        if (kv[static_cast<size_t>(i)]) want.push_back(xv[static_cast<size_t>(i)]);
      CHECK(masked_select(x, keep).to(kFloat64).to_vector<double>() == want);
    }
  }
  // Mask bytes other than 0 and 1 (a bool blob from outside) select; float flags: -0 does not.
  std::vector<uint8_t> raw(100000, 0);
  for (size_t i = 0; i < raw.size(); i += 3) raw[i] = static_cast<uint8_t>(1 + i % 255);
  const Tensor stray = from_blob(raw.data(), {100000}, {1}, kBool);
  CHECK(masked_select(arange(0, 100000, 1, of(kInt64)), stray).numel() == 33334);
  CHECK(nonzero(stray).sizes() == Shape{33334, 1});
  CHECK(nonzero(from_vector(F64{0.0, -0.0, 2.0})).to_vector<int64_t>() == I64{2});
  // Empty tensors, a size of 0 among their dims (once a division by zero).
  CHECK(nonzero(zeros({0, 3})).sizes() == Shape{0, 2});
  CHECK(nonzero(zeros({3, 0, 2})).sizes() == Shape{0, 3});
  CHECK(masked_select(zeros({3, 0}), zeros({3, 0}, of(kBool))).sizes() == Shape{0});
}

TEST_CASE("sort, argsort and topk: NaN as the largest value, ties in input order", "[index][sort]") {
  const double nan = std::nan("");
  const Tensor x = from_vector(F64{2, nan, 1, 2, -1});
  const ValuesIndices up = sort(x);
  CHECK(up.indices.to_vector<int64_t>() == I64{4, 2, 0, 3, 1});
  const ValuesIndices down = sort(x, 0, true, true);
  CHECK(down.indices.to_vector<int64_t>() == I64{1, 0, 3, 2, 4});  // equal 2s keep their order
  CHECK(std::isnan(down.values.to_vector<double>()[0]));
  CHECK(argsort(x, -1, true).to_vector<int64_t>() == down.indices.to_vector<int64_t>());
  const ValuesIndices t = topk(from_vector(F64{3, 1, 4, 1, 5, 9}, {2, 3}), 2, 1);
  CHECK(t.values.to_vector<double>() == F64{4, 3, 9, 5});
  CHECK(t.indices.to_vector<int64_t>() == I64{2, 0, 2, 1});
  CHECK(topk(x, 2, 0, false).indices.to_vector<int64_t>() == I64{4, 2});  // the smallest skip the NaN
  CHECK(sort(from_vector(I64{INT64_MAX, INT64_MAX - 1})).indices.to_vector<int64_t>() == I64{1, 0});  // exact int64
  const std::string m = error_of([&] { topk(x, 6); });
  CHECK(contains(m, "topk"));
  CHECK(contains(m, "[5]"));
  CHECK(contains(error_of([&] { sort(x, 1); }), "out of range"));
  CHECK(topk(x.to(Device::meta()), 3).values.sizes() == Shape{3});
  // The gradient of the sorted values goes back to where they came from.
  Tensor w = from_vector(F64{3, 1, 2}).set_requires_grad(true);
  sum(mul(topk(w, 2).values, from_vector(F64{10, 1}))).backward();
  CHECK(w.grad().to_vector<double>() == F64{10, 0, 1});
}

TEST_CASE("unique: sorted distinct values, inverse and counts", "[index][unique]") {
  const UniqueResult u = unique(from_vector(I64{3, 1, 3, 2, 1, 3}, {2, 3}), true, true, true);
  CHECK(u.values.to_vector<int64_t>() == I64{1, 2, 3});
  CHECK(u.inverse.sizes() == Shape{2, 3});
  CHECK(u.inverse.to_vector<int64_t>() == I64{2, 0, 2, 1, 0, 2});
  CHECK(u.counts.to_vector<int64_t>() == I64{2, 1, 3});
  CHECK_FALSE(unique(from_vector(I64{1})).inverse.defined());
  CHECK(unique(from_vector(F64{std::nan(""), 1, std::nan("")})).values.numel() == 3);  // each NaN is distinct
  CHECK(unique(zeros({0})).values.numel() == 0);
}
