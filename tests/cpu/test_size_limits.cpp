// Sizes at the integer boundaries (2^31, 2^32, 2^62, 2^63 - 1) and products
// that wrap, through every factory, view, reduction, index op and the
// convolution geometry: each either works exactly or raises mixt::Error naming
// the op; none wraps, crashes or touches memory outside its tensor.
// See Note [Checked size arithmetic] and Note [Storage covers the view].
#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <mixt/mixt.h>

using namespace mixt;
namespace F = mixt::nn::functional;

namespace {

constexpr int64_t P31 = int64_t{1} << 31;
constexpr int64_t P32 = int64_t{1} << 32;
constexpr int64_t P62 = int64_t{1} << 62;
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
// 3 * 6148914691236517206 wraps to 2 in 64-bit arithmetic.
constexpr int64_t kWrapsToTwoTimesThree = 6148914691236517206;

struct Refusal {
  const char* what;
  const char* op;  // the op the error must name
  std::function<void()> call;
};

// Runs every case: each must raise mixt::Error whose text names its op.
void expect_refusals(const std::vector<Refusal>& cases) {
  for (const Refusal& r : cases) {
    INFO(r.what);
    bool raised = false;
    try {
      r.call();
    } catch (const Error& e) {
      raised = true;
      INFO(e.what());
      CHECK(std::string(e.what()).find(r.op) != std::string::npos);
    }
    CHECK(raised);
  }
}

Tensor i64(std::vector<int64_t> v) { return from_vector(v); }
Tensor small() { return arange(4, {.dtype = kFloat32}); }
// A valid view of 2^62 elements over one float (expand: stride 0).
Tensor huge_view() { return zeros({1}).expand({P62}); }

}  // namespace

TEST_CASE("factories refuse sizes whose element or byte count overflows", "[size-limits]") {
  std::vector<Refusal> cases;
  const std::vector<std::pair<const char*, Shape>> shapes = {
      {"[2^62] float32 (bytes wrap)", {P62}},
      {"[2^63-1]", {kMax}},
      {"[2^62 - 1] float32 (bytes wrap to -4)", {P62 - 1}},
      {"[2^31, 2^32] (2^63 elements)", {P31, P32}},
      {"[2^32, 2^32] (wraps to 0)", {P32, P32}},
      {"[3, 6148914691236517206] (wraps to 2)", {3, kWrapsToTwoTimesThree}},
      {"[2^40, 2^40] (wraps to 0)", {int64_t{1} << 40, int64_t{1} << 40}},
      {"[0, 2^62, 2^62]: empty, but the other sizes wrap", {0, P62, P62}},
      {"[2^31, 2^31] float32: 2^62 elements, 2^64 bytes", {P31, P31}},
  };
  for (const auto& [what, s] : shapes) {
    cases.push_back({what, "empty", [s = s] { empty(s); }});
    cases.push_back({what, "full", [s = s] { zeros(s); }});
    cases.push_back({what, "full", [s = s] { ones(s, {.dtype = kFloat64}); }});
    cases.push_back({what, "full", [s = s] { full(s, 2.5); }});
    cases.push_back({what, "empty", [s = s] { rand(s); }});
    cases.push_back({what, "empty", [s = s] { randn(s); }});
    cases.push_back({what, "empty", [s = s] { randint(0, 5, s); }});
  }
  cases.push_back({"eye(2^40): 2^80 elements", "eye", [] { eye(int64_t{1} << 40); }});
  cases.push_back({"eye(2^62, 4)", "eye", [] { eye(P62, 4); }});
  cases.push_back({"eye(2^31, 2^31) float32", "eye", [] { eye(P31, P31); }});
  cases.push_back({"eye(2^63-1, 1) float32", "eye", [] { eye(kMax, 1); }});
  cases.push_back({"arange(2^62)", "arange", [] { arange(P62); }});
  cases.push_back({"arange(INT64_MIN, INT64_MAX)", "arange", [] { arange(kMin, kMax); }});
  cases.push_back({"arange(0, 1e300, 1e-300)", "arange", [] { arange(0.0, 1e300, 1e-300); }});
  cases.push_back({"linspace with 2^62 steps", "linspace", [] { linspace(0.0, 1.0, P62); }});
  cases.push_back({"linspace with 2^63-1 steps", "linspace", [] { linspace(0.0, 1.0, kMax); }});
  // Arithmetic fits (2^62 bytes) but no machine has the memory: a clean refusal, not a crash.
  cases.push_back({"[2^62] uint8: 2^62 bytes", "empty", [] { empty({P62}, {.dtype = kUInt8}); }});
  cases.push_back({"[2^63-1] bool", "full", [] { zeros({kMax}, {.dtype = kBool}); }});
  expect_refusals(cases);
}

TEST_CASE("from_blob refuses geometry that overflows", "[size-limits]") {
  float data[4] = {1, 2, 3, 4};
  CHECK_THROWS_AS(from_blob(data, {P62}, {}, kFloat32), Error);
  CHECK_THROWS_AS(from_blob(data, {2}, {kMax}, kFloat32), Error);
  CHECK_THROWS_AS(from_blob(data, {P32, P32}, {1, 1}, kFloat32), Error);
  CHECK_THROWS_AS(from_blob(data, {3, kWrapsToTwoTimesThree}, {}, kFloat32), Error);
  CHECK(from_blob(data, {2, 2}, {2, 1}, kFloat32).sum().item<double>() == 10.0);
}

TEST_CASE("views refuse geometry whose products wrap", "[size-limits]") {
  expect_refusals({
      {"view [-1, 2^62, 4]", "view", [] { small().view({-1, P62, 4}); }},
      {"view [2^62, 2^62]", "view", [] { small().view({P62, P62}); }},
      {"view [2^32, 2^32, 0] of an empty tensor", "view", [] { zeros({0}).view({P32, P32, 0}); }},
      {"reshape [2^62, 4]", "reshape", [] { small().reshape({P62, 4}); }},
      {"expand to [2^62, 4]", "expand", [] { zeros({1}).expand({P62, 4}); }},
      {"expand to [2^31, 2^32]", "expand", [] { zeros({1}).expand({P31, P32}); }},
      {"expand to [2^32, 2^32]", "expand", [] { zeros({1, 1}).expand({P32, P32}); }},
      {"expand to [3, 6148914691236517206]", "expand", [] { zeros({1, 1}).expand({3, kWrapsToTwoTimesThree}); }},
      {"as_strided stride 2^62 + 16 (the (size-1)*stride bound wraps)", "as_strided",
       [] { as_strided(small(), {3}, {P62 + 16}); }},
      {"as_strided stride 2^63-1", "as_strided", [] { as_strided(small(), {2}, {kMax}); }},
      {"as_strided [2^31] stride 2^32", "as_strided", [] { as_strided(small(), {P31}, {P32}); }},
      {"as_strided at offset 2^63-1", "as_strided", [] { as_strided(small(), {1}, {1}, kMax); }},
      {"as_strided [2^62, 2] (2^63 elements)", "as_strided", [] { as_strided(small(), {P62, 2}, {0, 1}); }},
      {"as_strided past the storage", "as_strided", [] { as_strided(small(), {2}, {3}, 1); }},
      {"narrow length 2^63-1", "narrow", [] { narrow(small(), 0, 1, kMax); }},
      {"narrow start 2^63-1", "narrow", [] { narrow(small(), 0, kMax, 1); }},
      {"select index 2^62", "select", [] { select(small(), 0, P62); }},
      {"select index INT64_MIN", "select", [] { select(small(), 0, kMin); }},
      {"split_with_sizes summing past 2^63", "split_with_sizes",
       [] { split_with_sizes(small(), {kMax, kMax, 2}); }},
      {"a huge view made contiguous", "clone", [] { huge_view().contiguous(); }},
      {"a huge view cast", "to", [] { huge_view().to(kFloat64); }},
      {"a huge view added", "add", [] { add(huge_view(), huge_view()); }},
      {"a huge view reshaped (needs a copy)", "clone",
       [] { as_strided(small(), {P31, int64_t{1} << 30, 2}, {0, 0, 1}).permute({2, 0, 1}).reshape({-1}); }},
  });
}

TEST_CASE("views at the boundaries that are valid work exactly", "[size-limits]") {
  // Flattening an expanded tensor is a view (every element is one location).
  CHECK(zeros({1, 1}).expand({P31, P31}).reshape({-1}).strides() == Shape{0});
  // 2^63 - 1 elements viewing one float: allowed (no memory), and indexable at both ends.
  const Tensor v = full({1}, 7.0f).expand({kMax});
  CHECK(v.numel() == kMax);
  CHECK(v.select(0, kMax - 1).item<float>() == 7.0f);
  CHECK(v.select(0, -kMax).item<float>() == 7.0f);
  // A step of 2^63 - 1 keeps one element; start/end far outside clamp.
  const Tensor s = slice(small(), 0, kMin, kMax, kMax);
  CHECK(s.sizes() == Shape{1});
  CHECK(s.item<float>() == 0.0f);
  const Tensor s2 = slice(v, 0, 1, kMax, kMax - 2);
  CHECK(s2.sizes() == Shape{2});
  // split / chunk with sizes of 2^63 - 1.
  CHECK(split(small(), kMax).size() == 1);
  CHECK(chunk(small(), kMax).size() == 4);
  // as_strided: 2^32 elements over element 3, and a row of a [2^32, 4] view.
  const Tensor rows = as_strided(small(), {P32, 4}, {0, 1});
  CHECK(rows.numel() == 4 * P32);
  CHECK(rows.select(0, P32 - 1).to_vector<float>() == std::vector<float>{0, 1, 2, 3});
  CHECK(as_strided(small(), {P32}, {0}, 3).select(0, P32 - 1).item<float>() == 3.0f);
  // index ops on the big view, with indices beyond 2^31 and 2^32.
  CHECK(index_select(rows, 0, i64({P32 - 1, P31, 0})).sizes() == Shape{3, 4});
  CHECK(index_select(rows, 0, i64({P32 - 1})).to_vector<float>() == std::vector<float>{0, 1, 2, 3});
  CHECK(gather(rows, 1, i64({3, 1}).view({1, 2})).to_vector<float>() == std::vector<float>{3, 1});
  CHECK(index_select(v, 0, i64({kMax - 1, -1})).to_vector<float>() == std::vector<float>{7, 7});
}

TEST_CASE("reductions whose result would not fit refuse", "[size-limits]") {
  // A valid empty tensor whose reduction over dim 0 would have 2^63 - 1 elements.
  const Tensor z = zeros({0, kMax});
  CHECK(z.numel() == 0);
  CHECK(sum(z).item<double>() == 0.0);
  CHECK(sum(z, {1}).sizes() == Shape{0});
  CHECK(cumsum(z, 1).numel() == 0);
  expect_refusals({
      {"sum dim 0", "sum", [&] { sum(z, {0}); }},
      {"mean dim 0", "mean", [&] { mean(z, {0}); }},
      {"prod dim 0", "prod", [&] { prod(z, {0}); }},
      {"amax dim 0", "amax", [&] { amax(z, {0}); }},
      {"amin dim 0", "amin", [&] { amin(z, {0}); }},
      {"argmax dim 0", "argmax", [&] { argmax(z, 0); }},
      {"var dim 0", "var", [&] { var(z, {0}); }},
      {"std dim 0", "std", [&] { mixt::std(z, {0}); }},
      {"norm dim 0", "norm", [&] { norm(z, 2.0, {0}); }},
      {"logsumexp dim 0", "logsumexp", [&] { logsumexp(z, {0}); }},
      {"all dim 0", "all", [&] { all(z, {0}); }},
      {"any dim 0", "any", [&] { any(z, {0}); }},
  });
}

TEST_CASE("index, movement and matmul ops refuse boundary indices and sizes", "[size-limits]") {
  expect_refusals({
      {"index_select 2^62", "index_select", [] { index_select(small(), 0, i64({P62})); }},
      {"index_select INT64_MIN", "index_select", [] { index_select(small(), 0, i64({kMin})); }},
      {"index_select 2^63-1", "index_select", [] { index_select(small(), 0, i64({kMax})); }},
      {"gather 2^32", "gather", [] { gather(small(), 0, i64({P32})); }},
      {"scatter 2^63-1", "scatter", [] { scatter(small(), 0, i64({kMax}), ones({1})); }},
      {"scatter_add INT64_MIN", "scatter_add", [] { scatter_add(small(), 0, i64({kMin}), ones({1})); }},
      {"embedding 2^32", "embedding", [] { F::embedding(i64({P32}), ones({4, 2})); }},
      {"embedding INT64_MIN", "embedding", [] { F::embedding(i64({kMin}), ones({4, 2})); }},
      {"cat of two 2^62 views", "cat", [] { cat({huge_view(), huge_view()}); }},
      {"cat of 2^63-1 and 1", "cat",
       [] { cat({zeros({1}).expand({kMax}), zeros({1})}); }},
      {"stack of two 2^62 views", "stack", [] { stack({huge_view(), huge_view()}); }},
      {"where over a 2^62 view", "where", [] { where(zeros({1}, {.dtype = kBool}).expand({P62}), huge_view(), 1.0); }},
      {"mm of [2^32, 1] x [1, 2^32]", "mm",
       [] { mm(zeros({1, 1}).expand({P32, 1}), zeros({1, 1}).expand({1, P32})); }},
      // Composites name the op that refused (outer and mv run mm).
      {"outer of two 2^62 vectors", "mm", [] { outer(huge_view(), huge_view()); }},
      {"mv of a [2^62, 1] matrix", "mm", [] { mv(zeros({1, 1}).expand({P62, 1}), ones({1})); }},
  });
}

TEST_CASE("convolution geometry refuses attributes whose arithmetic overflows", "[size-limits]") {
  const Tensor x1 = ones({1, 1, 4}), w1 = ones({1, 1, 2});
  const Tensor x2 = ones({1, 1, 4, 4}), w2 = ones({1, 1, 2, 2});
  expect_refusals({
      {"conv1d padding 2^62 (2 * padding wraps)", "conv1d", [&] { F::conv1d(x1, w1, Tensor(), 1, P62); }},
      {"conv1d padding 2^63-1", "conv1d", [&] { F::conv1d(x1, w1, Tensor(), 1, kMax); }},
      {"conv1d dilation 2^63-1", "conv1d", [&] { F::conv1d(x1, w1, Tensor(), 1, 0, kMax); }},
      {"conv2d padding 2^31 each (2^64 output positions)", "im2col",
       [&] { F::conv2d(x2, w2, Tensor(), {1, 1}, {P31, P31}); }},
      {"im2col padding 2^62", "im2col", [&] { F::im2col(x2, {2, 2}, {1, 1}, {P62, 0}, {1, 1}); }},
      {"im2col kernel 2^62 x 4", "im2col", [&] { F::im2col(x2, {P62, 4}, {1, 1}, {0, 0}, {1, 1}); }},
      {"im2col dilation 2^63-1", "im2col", [&] { F::im2col(x2, {2, 2}, {1, 1}, {0, 0}, {kMax, 1}); }},
      {"col2im to [2^62, 4]", "col2im",
       [&] { F::col2im(ones({1, 4, 9}), {P62, 4}, {2, 2}, {1, 1}, {0, 0}, {1, 1}); }},
  });
  // A stride of 2^63 - 1 is fine: one output position.
  CHECK(F::conv1d(x1, w1, Tensor(), kMax).sizes() == Shape{1, 1, 1});
}

TEST_CASE("undefined tensors raise instead of dereferencing null", "[size-limits]") {
  Tensor t;
  CHECK_THROWS_AS(t.dim(), Error);
  CHECK_THROWS_AS(t.numel(), Error);
  CHECK_THROWS_AS(t.sizes(), Error);
  CHECK_THROWS_AS(t.dtype(), Error);
  CHECK_THROWS_AS(t.requires_grad_(), Error);
  CHECK_THROWS_AS(t.requires_grad(), Error);
  CHECK_THROWS_AS(t.data_ptr(), Error);
  CHECK_THROWS_AS(t.grad(), Error);
  CHECK_THROWS_AS(t.is_leaf(), Error);
  CHECK_THROWS_WITH(t.numel(), Catch::Contains("undefined"));
  CHECK_FALSE(t.defined());
  CHECK(t.describe() == "undefined");
}
