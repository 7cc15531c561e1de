// Bad input in every op family raises mixt::Error with a readable message
// (op name, offending shapes/dtypes/devices) — never a crash. Also: zero-size
// tensors and non-contiguous inputs work.
#include <catch2/catch.hpp>

#include <mixt/mixt.h>

using namespace mixt;
namespace F = mixt::nn::functional;
using Catch::Contains;

namespace {
Tensor f32(const Shape& s) { return ones(s); }
Tensor i64(std::vector<int64_t> v) { return from_vector(v); }
// A tensor that claims to live on cuda:0 (host memory; never read by a correct
// device check, which must refuse before touching it).
Tensor fake_cuda(std::vector<float>& storage) {
  return from_blob(storage.data(), {static_cast<int64_t>(storage.size())}, {}, kFloat32, nullptr, nullptr,
                   Device::cuda(0));
}
}  // namespace

TEST_CASE("mismatched shapes", "[bad-input]") {
  CHECK_THROWS_WITH(add(f32({2, 3}), f32({4})), Contains("add") && Contains("[2, 3]") && Contains("[4]"));
  CHECK_THROWS_WITH(mm(f32({2, 3}), f32({2, 3})), Contains("mm") && Contains("[2, 3]"));
  CHECK_THROWS_AS(bmm(f32({2, 3, 4}), f32({3, 4, 5})), Error);
  CHECK_THROWS_AS(matmul(f32({3}), f32({4})), Error);
  CHECK_THROWS_AS(F::linear(f32({2, 3}), f32({4, 5})), Error);
  CHECK_THROWS_AS(addmm(f32({7}), f32({2, 3}), f32({3, 4})), Error);
  CHECK_THROWS_AS(cat({f32({2, 3}), f32({2, 4})}, 0), Error);
  CHECK_THROWS_AS(stack({f32({2}), f32({3})}), Error);
  CHECK_THROWS_AS(where(ones({3}, {.dtype = kBool}), f32({2}), f32({3})), Error);
  CHECK_THROWS_AS(gather(f32({2, 3}), 1, from_vector(std::vector<int64_t>{0, 1, 2}, {1, 1, 3})), Error);
  CHECK_THROWS_AS(masked_fill(f32({2, 3}), ones({4}, {.dtype = kBool}), 0), Error);
  CHECK_THROWS_AS(f32({6}).view({4, 2}), Error);
  CHECK_THROWS_AS(f32({2, 3}).expand({4, 3}), Error);
  Tensor dst = f32({2, 2});
  CHECK_THROWS_AS(dst.copy_(f32({3})), Error);
  Tensor inplace = f32({3});
  CHECK_THROWS_WITH(add_(inplace, f32({2, 3})), Contains("add_") && Contains("[2, 3]"));
}

TEST_CASE("mismatched or unsupported dtypes", "[bad-input]") {
  Tensor e4 = f32({2}).to(kFloat8_e4m3fn);
  CHECK_THROWS_WITH(add(e4, f32({2})), Contains("add") && Contains("float8_e4m3fn") && Contains("float32"));
  CHECK_THROWS_WITH(mm(f32({2, 2}), f32({2, 2}).to(kFloat64)), Contains("mm") && Contains("float64"));
  CHECK_THROWS_AS(index_select(f32({3}), 0, f32({1})), Error);
  CHECK_THROWS_AS(gather(f32({3}), 0, f32({1})), Error);
  CHECK_THROWS_AS(masked_fill(f32({3}), f32({3}), 0), Error);
  CHECK_THROWS_AS(where(f32({3}), f32({3}), f32({3})), Error);
  CHECK_THROWS_AS(mean(i64({1, 2})), Error);
  CHECK_THROWS_AS(var(i64({1, 2})), Error);
  Tensor ints = i64({1, 2});
  CHECK_THROWS_WITH(exp_(ints), Contains("exp_") && Contains("int64"));
  CHECK_THROWS_AS(sub(ones({2}, {.dtype = kBool}), ones({2}, {.dtype = kBool})), Error);
  CHECK_THROWS_AS(neg(ones({2}, {.dtype = kBool})), Error);
  CHECK_THROWS_AS(F::embedding(f32({2}), f32({4, 2})), Error);
  CHECK_THROWS_AS(mm(ones({2, 2}, {.dtype = kBool}), ones({2, 2}, {.dtype = kBool})), Error);
  CHECK_THROWS_AS(mm(f32({2, 2}), f32({2, 2}), kFloat16), Error);  // out_dtype only widens narrow operands
}

TEST_CASE("mismatched devices", "[bad-input]") {
  std::vector<float> storage(4, 1.f);
  Tensor g = fake_cuda(storage);
  CHECK(g.device() == Device::cuda(0));
  CHECK_THROWS_AS(add(f32({4}), g), Error);
  CHECK_THROWS_AS(mul(g, f32({4})), Error);
  CHECK_THROWS_AS(mm(f32({4, 1}), g.view({1, 4})), Error);
  CHECK_THROWS_AS(cat({f32({4}), g}), Error);
  CHECK_THROWS_AS(index_select(f32({4}), 0, i64({0}).to(Device::cuda(0))), Error);
}

TEST_CASE("out-of-range dims and indices", "[bad-input]") {
  Tensor t = f32({2, 3});
  CHECK_THROWS_WITH(sum(t, {2}), Contains("sum") && Contains("2"));
  CHECK_THROWS_AS(sum(t, {0, 0}), Error);
  CHECK_THROWS_AS(amax(t, {-3}), Error);
  CHECK_THROWS_AS(max(t, 5), Error);
  CHECK_THROWS_AS(argmax(t, 2), Error);
  CHECK_THROWS_AS(cumsum(t, 2), Error);
  CHECK_THROWS_AS(t.select(0, 2), Error);
  CHECK_THROWS_AS(t.transpose(0, 2), Error);
  CHECK_THROWS_AS(t.unsqueeze(-4), Error);
  CHECK_THROWS_AS(cat({t, t}, 2), Error);
  CHECK_THROWS_AS(stack({t, t}, 4), Error);
  CHECK_THROWS_WITH(index_select(t, 1, i64({0, 3})), Contains("index_select") && Contains("3"));
  CHECK_THROWS_AS(index_select(t, 1, i64({-4})), Error);
  CHECK_THROWS_AS(gather(t, 1, from_vector(std::vector<int64_t>{0, 7}, {1, 2})), Error);
  CHECK_THROWS_AS(scatter(t, 0, from_vector(std::vector<int64_t>{5}, {1, 1}), Scalar(1)), Error);
  CHECK_THROWS_AS(F::embedding(i64({4}), f32({4, 2})), Error);
  CHECK_THROWS_AS(split(t, 0, 0), Error);
}

TEST_CASE("zero-size tensors", "[bad-input]") {
  Tensor z = zeros({0, 3});
  CHECK(add(z, z).sizes() == Shape{0, 3});
  CHECK(exp(z).sizes() == Shape{0, 3});
  CHECK(sum(z).item<double>() == 0.0);
  CHECK(sum(z, {0}).sizes() == Shape{3});
  CHECK(prod(z).item<double>() == 1.0);
  CHECK(mm(zeros({2, 0}), zeros({0, 3})).sizes() == Shape{2, 3});
  CHECK(sum(mm(zeros({2, 0}), zeros({0, 3}))).item<double>() == 0.0);
  CHECK(cat({z, ones({2, 3})}).sizes() == Shape{2, 3});
  CHECK(z.clone().numel() == 0);
  CHECK(z.to(kFloat16).dtype() == kFloat16);
  CHECK(cumsum(z, 0).sizes() == Shape{0, 3});
  CHECK_THROWS_AS(max(z), Error);
  CHECK_THROWS_AS(max(z, 0), Error);
  CHECK(max(z, 1).values.sizes() == Shape{0});
  CHECK(empty({0}).numel() == 0);
}

TEST_CASE("non-contiguous inputs give the same values as contiguous ones", "[bad-input]") {
  manual_seed(5);
  Tensor base = randn({6, 4});
  Tensor nc = base.t();  // [4, 6], strides (1, 4)
  Tensor c = nc.contiguous();
  REQUIRE_FALSE(nc.is_contiguous());
  auto same = [](const Tensor& a, const Tensor& b) { return a.to_vector<float>() == b.to_vector<float>(); };
  CHECK(same(exp(nc), exp(c)));
  CHECK(same(add(nc, nc.slice(0, 0, 1)), add(c, c.slice(0, 0, 1))));
  CHECK(same(sum(nc, {1}), sum(c, {1})));
  CHECK(same(amax(nc, {0}), amax(c, {0})));
  CHECK(same(cumsum(nc, 1), cumsum(c, 1)));
  CHECK(same(mm(nc, base), mm(c, base)));
  CHECK(same(where(gt(nc, 0), nc, c), where(gt(c, 0), c, c)));
  CHECK(same(index_select(nc, 1, i64({5, 0})), index_select(c, 1, i64({5, 0}))));
  CHECK(same(nc.slice(1, 0, 6, 2).clone(), c.slice(1, 0, 6, 2).contiguous()));
}

TEST_CASE("CUDA work without a usable GPU says that CUDA is not available, and why", "[bad-input]") {
  if (cuda::is_available()) {
    WARN("a GPU is present: nothing to check");
    return;
  }
  const std::string reason = cuda::unavailable_reason();
  REQUIRE_FALSE(reason.empty());
  // A factory and a copy reach the CUDA backend's entry (a kernel or the allocator).
  CHECK_THROWS_WITH(zeros({2}, {.device = Device::cuda(0)}), Contains("CUDA is not available") && Contains(reason));
  CHECK_THROWS_WITH(f32({2}).to(Device::cuda(0)), Contains("CUDA is not available") && Contains(reason));
  if (!cuda::is_compiled()) {
    CHECK_THAT(reason, Contains("no CUDA in this build"));
    // An op on a tensor that claims to live on a GPU (the dispatcher finds no CUDA kernel).
    std::vector<float> storage(4, 1.f);
    CHECK_THROWS_WITH(exp(fake_cuda(storage)), Contains("exp") && Contains("CUDA is not available") &&
                                                   Contains(reason));
  }
}
