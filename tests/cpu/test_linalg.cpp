// The linear-algebra composites beyond the op-case table (tests/support/op_cases_linalg.cpp checks
// their values on every dtype, meta and the gradients): beta = 0 ignoring NaN, the order
// multi_dot chooses, gelu's form per device, autocast's decisions, and bad input — malformed
// einsum equations, fuzzed — raising mixt::Error that names the op.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <mixt/mixt.h>

using namespace mixt;
namespace F = mixt::nn::functional;

namespace {

Tensor values(std::vector<double> v, const Shape& shape) { return from_vector(v, shape).to(kFloat32); }

// Expects a mixt::Error from `f` naming `op` and mentioning `needle`.
template <class Fn>
void check_error(Fn&& f, const std::string& op, const std::string& needle) {
  try {
    f();
    FAIL("no error raised for " << op << " (" << needle << ")");
  } catch (const Error& e) {
    INFO(e.what());
    CHECK(e.op() == op);
    CHECK(std::string(e.what()).find(needle) != std::string::npos);
  }
}

bool all_zero(const Tensor& t) {
  for (double v : t.to(kFloat64).to_vector<double>())
    if (v != 0) return false;
  return true;
}

}  // namespace

TEST_CASE("beta = 0 ignores NaN and Inf in self, as addmm does", "[linalg]") {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  const Tensor m = ones({2, 3}), v = ones({3});
  const Tensor bad2 = values({nan, inf}, {2}), bad22 = values({nan, inf, -inf, nan}, {2, 2});
  CHECK(addmv(bad2, m, v, 0, 1).to_vector<float>() == std::vector<float>{3, 3});
  CHECK(addr(bad22, ones({2}), ones({2}), 0, 2).to_vector<float>() == std::vector<float>{2, 2, 2, 2});
  CHECK(addbmm(bad22, ones({4, 2, 3}), ones({4, 3, 2}), 0, 1).to_vector<float>() == std::vector<float>(4, 12));
  CHECK(addmm_activation(bad2, ones({3, 2}), ones({2, 2}), 0, -1).to_vector<float>() == std::vector<float>(6, 0));
  // Any other beta lets NaN through.
  CHECK(std::isnan(addmv(bad2, m, v, 1, 1).to_vector<float>()[0]));
}

TEST_CASE("chain_matmul and linalg_multi_dot multiply in the cheapest order", "[linalg]") {
  // a [10, 1] b [1, 10] c [10, 1]: a (b c) costs 20 multiplications, (a b) c 200. b c sums
  // +-2^100 to exactly 0 in any order (every partial sum k * 2^100 is exact; with 1e30 the
  // partial sums round, and OpenBLAS's AVX-512 kernel summed them to a nonzero value), while
  // a b overflows float32 to Inf (and Inf - Inf is NaN): only the cheap order gives zeros.
  std::vector<double> alternating(10);
  for (size_t i = 0; i < alternating.size(); ++i) alternating[i] = i % 2 ? -1 : 1;
  const double big = std::ldexp(1.0, 100);
  const Tensor big_col = full({10, 1}, big), big_row = full({1, 10}, big);
  const Tensor signs_col = values(alternating, {10, 1}), signs_row = values(alternating, {1, 10});
  const Tensor right_first = chain_matmul({big_col, big_row, signs_col});
  CHECK(right_first.sizes() == Shape{10, 1});
  CHECK(all_zero(right_first));
  // a [1, 10] b [10, 1] c [1, 10]: (a b) c costs 20, a (b c) 200.
  const Tensor left_first = linalg_multi_dot({signs_row, big_col, big_row});
  CHECK(left_first.sizes() == Shape{1, 10});
  CHECK(all_zero(left_first));
  // 1-D ends drop their dims; one matrix is returned as a copy.
  CHECK(linalg_multi_dot({ones({3}), ones({3, 4}), ones({4})}).dim() == 0);
  CHECK(linalg_multi_dot({ones({3}), ones({3, 4}), ones({4})}).item<double>() == 12);
  CHECK(linalg_multi_dot({ones({3, 4}), ones({4})}).sizes() == Shape{3});
  const Tensor one = ones({2, 2});
  const Tensor copy = chain_matmul({one});
  CHECK(!copy.is_same(one));
  CHECK(copy.to_vector<float>() == one.to_vector<float>());
}

TEST_CASE("addmm_activation: relu, and the exact gelu on every device", "[linalg]") {
  const Tensor self = values({0.5, -3}, {2}), a = values({1, -2, 0.5, 0.25}, {2, 2}), b = values({1, 1, -1, 2}, {2, 2});
  const Tensor plain = addmm(self, a, b, 1, 2);
  CHECK(addmm_activation(self, a, b, 1, 2).to_vector<float>() == relu(plain).to_vector<float>());
  // The exact (erf) form, as PyTorch's CPU kernel (its CUDA kernel takes the tanh form; mixt does not).
  CHECK(addmm_activation(self, a, b, 1, 2, true).to_vector<float>() == F::gelu(plain).to_vector<float>());
  CHECK(addmm_activation(self, a, b, 1, 2, true).to_vector<float>() != F::gelu(plain, "tanh").to_vector<float>());
  check_error([&] { addmm_activation(self.to(kInt32), a.to(kInt32), b.to(kInt32), 1, 1, true); }, "addmm_activation",
              "int32");
}

TEST_CASE("einsum: implicit and explicit outputs, diagonals, ellipsis", "[linalg]") {
  const Tensor x = arange(0, 6).to(kFloat32).view({2, 3}), sq = arange(0, 9).to(kFloat32).view({3, 3});
  CHECK(einsum("ij->ji", {x}).to_vector<float>() == x.t().contiguous().to_vector<float>());
  CHECK(!einsum("ij->ij", {x}).is_same(x));
  CHECK(einsum("ii", {sq}).item<double>() == 12);
  CHECK(einsum("ii->i", {sq}).to_vector<float>() == std::vector<float>{0, 4, 8});
  CHECK(einsum("ij", {x}).to_vector<float>() == x.to_vector<float>());  // implicit: i, j once each
  CHECK(einsum("ji", {x}).sizes() == Shape{3, 2});                       // implicit: alphabetical
  CHECK(einsum(" i j , j k -> i k ", {x, sq}).to_vector<float>() == mm(x, sq).to_vector<float>());
  CHECK(einsum("...j,j->...", {ones({2, 4, 3}), ones({3})}).sizes() == Shape{2, 4});
  CHECK(einsum("i,i", {ones({3}), ones({3})}).item<double>() == 3);
  CHECK(einsum("i,j", {ones({3}), ones({2})}).sizes() == Shape{3, 2});
  CHECK(einsum(",->", {full({}, 2.0), full({}, 3.0)}).item<double>() == 6);
}

TEST_CASE("malformed einsum equations raise mixt::Error naming einsum", "[linalg]") {
  const Tensor x = ones({2, 3}), sq = ones({3, 3});
  check_error([&] { einsum("ij->ji->ij", {x}); }, "einsum", "more than one");
  check_error([&] { einsum("i.j", {x}); }, "einsum", "'.'");
  check_error([&] { einsum("......", {x}); }, "einsum", "more than one \"...\"");
  check_error([&] { einsum("ij->ii", {x}); }, "einsum", "more than once");
  check_error([&] { einsum("ij->k", {x}); }, "einsum", "'k'");
  check_error([&] { einsum("i-j", {x}); }, "einsum", "'-'");
  check_error([&] { einsum("ij,jk", {x}); }, "einsum", "2 input terms for 1 operands");
  check_error([&] { einsum("ijk", {x}); }, "einsum", "[2, 3]");
  check_error([&] { einsum("i1", {x}); }, "einsum", "invalid character");
  check_error([&] { einsum("ii", {x}); }, "einsum", "size 3");
  check_error([&] { einsum("ii", {ones({3, 1})}); }, "einsum", "different sizes");
  check_error([&] { einsum("ij,ij", {x, sq}); }, "einsum", "size 3");
  check_error([&] { einsum("ij,jk->ik,i", {x, sq}); }, "einsum", "','");
  check_error([&] { einsum(std::string(200, 'i'), {x}); }, "einsum", "characters");
  check_error([&] { einsum(std::string("i\0j", 3), {x}); }, "einsum", "NUL");
  check_error([&] { einsum("ij", {}); }, "einsum", "at least one");
  check_error([&] { einsum("ij,jk", {x, sq.to(kFloat64)}); }, "einsum", "float64");
  check_error([&] { einsum("ij", {x.to(kBool)}); }, "einsum", "bool");
}

TEST_CASE("einsum fuzz: random equations either work or raise mixt::Error", "[linalg]") {
  const std::string alphabet = "iijjkI,,-->... !1";
  std::mt19937 rng(7);
  int ran = 0, refused = 0;
  for (int trial = 0; trial < 5000; ++trial) {
    std::string eq;
    const int len = static_cast<int>(rng() % 10);
    for (int i = 0; i < len; ++i) eq += alphabet[rng() % alphabet.size()];
    std::vector<Tensor> ops;
    const int n = 1 + static_cast<int>(rng() % 3);
    for (int i = 0; i < n; ++i) {
      Shape s;
      const int rank = static_cast<int>(rng() % 4);
      for (int d = 0; d < rank; ++d) s.push_back(1 + static_cast<int64_t>(rng() % 3));
      ops.push_back(ones(s));
    }
    try {
      const Tensor r = einsum(eq, ops);
      CHECK(r.dtype() == kFloat32);
      ++ran;
    } catch (const Error& e) {
      CHECK(e.op() == "einsum");
      ++refused;
    } catch (const std::exception& e) {
      FAIL("\"" << eq << "\": a non-mixt exception: " << e.what());
    }
  }
  CHECK(ran > 50);  // the fuzz reaches the contractions, not only the parser
  CHECK(refused > 1000);
}

TEST_CASE("the linear-algebra ops refuse bad shapes and dtypes, naming the op and shapes", "[linalg]") {
  check_error([] { addmv(ones({3}), ones({3, 4}), ones({5})); }, "addmv", "[5]");
  check_error([] { addmv(ones({4}), ones({3, 4}), ones({4})); }, "addmv", "[4]");
  check_error([] { addmv(ones({3}), ones({3, 4}), ones({4}).to(kFloat64)); }, "addmv", "float64");
  check_error([] { addr(ones({3, 4}), ones({3, 1}), ones({4})); }, "addr", "[3, 1]");
  check_error([] { addr(ones({2, 4}), ones({3}), ones({4})); }, "addr", "[2, 4]");
  check_error([] { addbmm(ones({3, 5}), ones({2, 3, 4}), ones({3, 4, 5})); }, "addbmm", "[3, 4, 5]");
  check_error([] { vdot(ones({3}), ones({4})); }, "vdot", "3 and 4");
  check_error([] { vdot(ones({3, 1}), ones({3})); }, "vdot", "[3, 1]");
  check_error([] { linalg_vecdot(ones({2, 3}), ones({4})); }, "linalg_vecdot", "[4]");
  check_error([] { linalg_vecdot(ones({2, 3}), ones({3}), 2); }, "linalg_vecdot", "dim 2");
  check_error([] { linalg_vecdot(ones({3}).to(kInt32), ones({3}).to(kInt32)); }, "linalg_vecdot", "int32");
  check_error([] { chain_matmul({ones({2, 3}), ones({3})}); }, "chain_matmul", "[3]");
  check_error([] { chain_matmul({ones({2, 3}), ones({4, 2})}); }, "chain_matmul", "[4, 2]");
  check_error([] { chain_matmul({}); }, "chain_matmul", "non-empty");
  check_error([] { linalg_multi_dot({ones({3, 3})}); }, "linalg_multi_dot", "at least 2");
  check_error([] { linalg_multi_dot({ones({3}), ones({3}), ones({3})}); }, "linalg_multi_dot", "tensor 1");
  check_error([] { linalg_multi_dot({ones({3, 3}), ones({3, 3}).to(kFloat64)}); }, "linalg_multi_dot", "float64");
  check_error([] { tensordot(ones({2, 3}), ones({4, 2}), 1); }, "tensordot", "size 3");
  check_error([] { tensordot(ones({2, 3}), ones({3, 2}), {1}, {0, 1}); }, "tensordot", "contracted dims");
  check_error([] { tensordot(ones({2, 3}), ones({3, 2}), {1, 1}, {0, 0}); }, "tensordot", "twice");
  check_error([] { tensordot(ones({2, 3}), ones({3, 2}), {2}, {0}); }, "tensordot", "out of range");
  check_error([] { tensordot(ones({2, 3}), ones({3, 2}), 3); }, "tensordot", "[2, 3]");
  check_error([] { F::bilinear(ones({2, 3}), ones({2, 4}), ones({5, 3, 3})); }, "bilinear", "[5, 3, 3]");
  check_error([] { F::bilinear(ones({2, 3}), ones({3, 4}), ones({5, 3, 4})); }, "bilinear", "[3, 4]");
  check_error([] { F::bilinear(ones({2, 3}), ones({2, 4}), ones({5, 3, 4}), ones({4})); }, "bilinear", "[4]");
}

TEST_CASE("autocast decides the linear-algebra ops as PyTorch's lists do", "[linalg][autocast]") {
  const Tensor m = ones({3, 4}), v = ones({4}), s = ones({3});
  {
    autocast::Guard g({.device = DeviceType::CPU, .dtype = kBFloat16});
    CHECK(linalg_vecdot(m, m).dtype() == kBFloat16);
    CHECK(addbmm(ones({3, 5}), ones({2, 3, 4}), ones({2, 4, 5})).dtype() == kBFloat16);
    CHECK(addmm_activation(s, ones({3, 2}), ones({2, 3})).dtype() == kBFloat16);
    CHECK(einsum("ij,j->i", {m, v}).dtype() == kBFloat16);  // PyTorch's einsum runs a lowered bmm
    CHECK(tensordot(m, v, 1).dtype() == kBFloat16);
    CHECK(addmv(s, m, v).dtype() == kFloat32);  // not on the CPU list
    CHECK(vdot(v, v).dtype() == kFloat32);
    CHECK(F::bilinear(m, m, ones({2, 4, 4})).dtype() == kFloat32);
  }
  {
    autocast::Guard g({.device = DeviceType::CUDA, .dtype = kFloat16, .rehearse_on = Device::cpu()});
    CHECK(addmv(s, m, v).dtype() == kFloat16);
    CHECK(addr(ones({3, 4}), s, v).dtype() == kFloat16);
    CHECK(linalg_multi_dot({m, m.t(), m}).dtype() == kFloat16);
    CHECK(vdot(v, v.to(kFloat16)).dtype() == kFloat32);  // promote: the widest input
    CHECK(tensordot(m.to(kFloat16), v.to(kFloat16), 1).dtype() == kFloat16);
    CHECK(F::bilinear(m, m.to(kFloat16), ones({2, 4, 4}).to(kFloat16)).dtype() == kFloat32);
    CHECK(addmm_activation(s, ones({3, 2}), ones({2, 3})).dtype() == kFloat32);  // not on CUDA's list
  }
}
