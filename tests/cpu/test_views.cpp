// Views share storage and compute the right geometry; reshape copies only when
// it must; bad dims raise mixt::Error; view(dtype) reads the same bytes as another dtype.
#include <bit>
#include <cstring>
#include <string>

#include <catch2/catch.hpp>

#include <mixt/mixt.h>

#include "test_util.h"

using namespace mixt;
using namespace mixt::testing;

TEST_CASE("view and reshape share or copy as needed", "[views]") {
  Tensor t = iota({2, 3, 4});
  Tensor v = t.view({6, 4});
  CHECK(v.sizes() == Shape{6, 4});
  CHECK(v.shares_storage(t));
  CHECK(t.view({-1}).sizes() == Shape{24});
  CHECK(t.view({4, -1, 2}).sizes() == Shape{4, 3, 2});
  CHECK_THROWS_AS(t.view({5, -1}), Error);
  CHECK_THROWS_AS(t.view({-1, -1}), Error);

  Tensor tt = t.transpose(0, 2);  // [4, 3, 2], not contiguous
  CHECK_FALSE(tt.is_contiguous());
  CHECK_THROWS_AS(tt.view({24}), Error);
  Tensor r = tt.reshape({24});
  CHECK_FALSE(r.shares_storage(t));
  const auto vals = r.to_vector<float>();
  // tt[i][j][k] = t[k][j][i] = k*12 + j*4 + i
  CHECK(vals[0] == 0.f);
  CHECK(vals[1] == 12.f);
  CHECK(vals[2] == 4.f);
  CHECK(t.reshape({3, 8}).shares_storage(t));
}

TEST_CASE("permute, transpose, select, slice, narrow", "[views]") {
  Tensor t = iota({2, 3, 4});
  Tensor p = t.permute({2, 0, 1});
  CHECK(p.sizes() == Shape{4, 2, 3});
  CHECK(p.strides() == Shape{1, 12, 4});
  CHECK_THROWS_AS(t.permute({0, 0, 1}), Error);
  CHECK_THROWS_AS(t.permute({0, 1}), Error);

  Tensor s = t.select(1, -1);  // t[:, 2, :]
  CHECK(s.sizes() == Shape{2, 4});
  CHECK(s.to_vector<float>()[0] == 8.f);
  CHECK_THROWS_AS(t.select(1, 3), Error);
  CHECK_THROWS_AS(t.select(3, 0), Error);

  Tensor sl = t.slice(2, 1, 4, 2);  // columns 1, 3
  CHECK(sl.sizes() == Shape{2, 3, 2});
  CHECK(sl.to_vector<float>() == std::vector<float>{1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23});
  CHECK(t.slice(0, -1, 100).sizes() == Shape{1, 3, 4});
  CHECK_THROWS_AS(t.slice(0, 0, 2, 0), Error);
  CHECK(t.narrow(1, 1, 2).sizes() == Shape{2, 2, 4});
  CHECK_THROWS_AS(t.narrow(1, 2, 2), Error);
}

TEST_CASE("expand, squeeze, unsqueeze, flatten, split, chunk", "[views]") {
  Tensor t = iota({3, 1});
  Tensor e = t.expand({2, 3, 4});
  CHECK(e.sizes() == Shape{2, 3, 4});
  CHECK(e.strides() == Shape{0, 1, 0});
  CHECK(e.to_vector<float>()[5] == 1.f);
  CHECK_THROWS_AS(t.expand({3, 2, 2}), Error);
  CHECK(t.expand({-1, 5}).sizes() == Shape{3, 5});

  Tensor u = t.unsqueeze(0).unsqueeze(-1);
  CHECK(u.sizes() == Shape{1, 3, 1, 1});
  CHECK(u.squeeze().sizes() == Shape{3});
  CHECK(u.squeeze(0).sizes() == Shape{3, 1, 1});
  CHECK(u.squeeze(1).sizes() == Shape{1, 3, 1, 1});
  CHECK_THROWS_AS(t.unsqueeze(3), Error);

  Tensor f = iota({2, 3, 4});
  CHECK(f.flatten().sizes() == Shape{24});
  CHECK(f.flatten(1).sizes() == Shape{2, 12});
  CHECK(f.flatten(0, 1).sizes() == Shape{6, 4});

  auto parts = split(f, 2, 2);
  REQUIRE(parts.size() == 2);
  CHECK(parts[1].sizes() == Shape{2, 3, 2});
  CHECK(parts[1].to_vector<float>()[0] == 2.f);
  auto chunks = chunk(iota({5}), 2);
  REQUIRE(chunks.size() == 2);
  CHECK(chunks[0].numel() == 3);
  CHECK(chunks[1].numel() == 2);
  CHECK_THROWS_AS(split_with_sizes(iota({5}), {2, 2}), Error);
}

TEST_CASE("as_strided checks the storage bounds", "[views]") {
  Tensor t = iota({6});
  Tensor w = as_strided(t, {2, 2}, {1, 2}, 1);
  CHECK(w.to_vector<float>() == std::vector<float>{1, 3, 2, 4});
  CHECK_THROWS_AS(as_strided(t, {2, 4}, {3, 1}, 0), Error);
}

TEST_CASE("views of 0-dim tensors", "[views]") {
  Tensor s = scalar_tensor(2.5);
  CHECK(s.dim() == 0);
  CHECK(s.view({1}).sizes() == Shape{1});
  CHECK(s.unsqueeze(0).sizes() == Shape{1});
  CHECK(s.flatten().sizes() == Shape{1});
  CHECK(s.item<double>() == 2.5);
}

// ---- bit-cast views: view(dtype) (Note [Bit-cast views]) ----

namespace {
template <class To, class From>
std::vector<To> bit_casts(const std::vector<From>& v) {
  std::vector<To> out;
  for (From x : v) out.push_back(std::bit_cast<To>(x));
  return out;
}
}  // namespace

TEST_CASE("view(dtype) with one element size reads the same bits", "[views][view_dtype]") {
  const std::vector<int32_t> bits{0, int32_t(0x80000000u), 0x3f800000, int32_t(0xff800000u), 0x7fc00001, 1};
  const Tensor i = from_vector(bits, {2, 3});
  const Tensor f = i.view(kFloat32);
  CHECK(f.dtype() == kFloat32);
  CHECK(f.sizes() == Shape{2, 3});
  CHECK(f.strides() == Shape{3, 1});
  CHECK(f.shares_storage(i));
  CHECK(f.data_ptr() == i.data_ptr());
  // +0, -0, 1, -Inf, a NaN with a payload, the smallest subnormal; and back, bit-exact.
  CHECK(bit_casts<int32_t>(f.to_vector<float>()) == bits);
  CHECK(f.view(kInt32).to_vector<int32_t>() == bits);
  CHECK(view(f, kInt32).to_vector<int32_t>() == bits);
  // A non-contiguous view keeps its geometry.
  const Tensor ft = f.t().view(kInt32);
  CHECK(ft.sizes() == Shape{3, 2});
  CHECK(ft.strides() == Shape{1, 3});
  CHECK(ft.to_vector<int32_t>() == i.t().contiguous().to_vector<int32_t>());
  // float16 <-> bfloat16 <-> int8 pairs of one size.
  const Tensor h = from_vector(std::vector<float>{1.0f, -2.5f}).to(kFloat16);
  CHECK(h.view(kBFloat16).view(kFloat16).to_vector<float>() == std::vector<float>{1.0f, -2.5f});
  CHECK(from_vector(std::vector<uint8_t>{0x38, 0xff}).view(kInt8).to_vector<int>() == std::vector<int>{0x38, -1});
  CHECK(from_vector(std::vector<uint8_t>{0x38}).view(kFloat8_e4m3fn).item<float>() == 1.0f);
  // Writes through the view land in the base, and the version counter is shared.
  Tensor ones = zeros({3});
  const uint32_t v0 = ones.version();
  ones.view(kInt32).fill_(0x3f800000);
  CHECK(ones.to_vector<float>() == std::vector<float>{1, 1, 1});
  CHECK(ones.version() != v0);
  // A 0-dim tensor, same element size.
  CHECK(scalar_tensor(1.0f).view(kInt32).item<int32_t>() == 0x3f800000);
  CHECK(scalar_tensor(1.0f).view(kInt32).dim() == 0);
}

TEST_CASE("view(dtype) with another element size scales the last dimension", "[views][view_dtype]") {
  const std::vector<float> fv{1.0f, -2.0f, 0.5f, 3.0f, -0.0f, 1e-40f};
  const Tensor f = from_vector(fv, {2, 3});
  const Tensor bytes = f.view(kUInt8);
  CHECK(bytes.sizes() == Shape{2, 12});
  CHECK(bytes.strides() == Shape{12, 1});
  CHECK(bytes.shares_storage(f));
  std::vector<uint8_t> want(24);
  std::memcpy(want.data(), fv.data(), want.size());
  CHECK(bytes.to_vector<uint8_t>() == want);
  CHECK(bytes.view(kFloat32).sizes() == Shape{2, 3});
  CHECK(bytes.view(kFloat32).to_vector<float>() == fv);
  // Growing: two int32 make one int64 (little-endian: the first is the low half).
  const Tensor pairs = from_vector(std::vector<int32_t>{1, 2, -1, 0x7fffffff}).view(kInt64);
  CHECK(pairs.sizes() == Shape{2});
  CHECK(pairs.to_vector<int64_t>() == std::vector<int64_t>{(int64_t{2} << 32) | 1, (int64_t{0x7fffffff} << 32) | 0xffffffff});
  // float64 -> float16 -> float64 is bit-exact, NaN payloads included.
  const std::vector<int64_t> dbits{0x7ff0000000000001, int64_t(0x8000000000000000u), 0x3ff0000000000000, 42};
  const Tensor d = from_vector(dbits, {2, 2}).view(kFloat64);
  const Tensor halves = d.view(kFloat16);
  CHECK(halves.sizes() == Shape{2, 8});
  CHECK(halves.view(kFloat64).view(kInt64).to_vector<int64_t>() == dbits);
  // A slice: the offset and the outer stride scale too.
  const Tensor m = arange(24, {.dtype = kInt32}).view({4, 6});
  const Tensor s = m.slice(1, 2, 6);  // [4, 4], strides [6, 1], offset 2
  const Tensor s64 = s.view(kInt64);
  CHECK(s64.sizes() == Shape{4, 2});
  CHECK(s64.strides() == Shape{3, 1});
  CHECK(s64.storage_offset() == 1);
  CHECK(s64.view(kInt32).to_vector<int32_t>() == s.to_vector<int32_t>());
  const Tensor s8 = s.view(kInt8);
  CHECK(s8.sizes() == Shape{4, 16});
  CHECK(s8.strides() == Shape{24, 1});
  CHECK(s8.storage_offset() == 8);
  CHECK(s8.to_vector<int8_t>()[4] == 3);  // m[0][3]'s low byte
  // A size-1 dim's stride is never used, so it need not divide.
  const Tensor row = arange(18, {.dtype = kInt8}).view({3, 6}).slice(0, 1, 2).slice(1, 2, 6);  // [1, 4], strides [6, 1]
  const Tensor word = row.view(kInt32);
  CHECK(word.sizes() == Shape{1, 1});
  CHECK(word.item<int32_t>() == 0x0b0a0908);
  // An empty last dim stays empty.
  CHECK(empty({3, 0}).view(kFloat64).sizes() == Shape{3, 0});
  CHECK(empty({3, 0}).view(kUInt8).sizes() == Shape{3, 0});
}

TEST_CASE("view(dtype) refuses what it cannot view, naming the shapes and dtypes", "[views][view_dtype]") {
  const Tensor f = iota({2, 3});
  // The last dim's bytes do not make whole float64s.
  std::string msg = error_of([&] { f.view(kFloat64); });
  CHECK_THAT(msg, Catch::Contains("view_dtype") && Catch::Contains("float32[2, 3]") && Catch::Contains("float64") &&
                      Catch::Contains("the last dimension's size 3 is not divisible by 2"));
  // The last dim must be dense.
  msg = error_of([&] { f.t().view(kUInt8); });
  CHECK_THAT(msg, Catch::Contains("float32[3, 2]") && Catch::Contains("uint8") && Catch::Contains("stride 1"));
  // The storage offset in float64s is not whole.
  msg = error_of([&] { iota({4}).slice(0, 1, 3).view(kFloat64); });
  CHECK_THAT(msg, Catch::Contains("the storage offset 1 is not divisible by 2"));
  // An outer stride in float64s is not whole.
  msg = error_of([&] { iota({3, 3}).slice(1, 0, 2).view(kFloat64); });
  CHECK_THAT(msg, Catch::Contains("a stride 3 is not divisible by 2"));
  // A 0-dim tensor has no last dim to scale.
  msg = error_of([&] { scalar_tensor(1.0f).view(kUInt8); });
  CHECK_THAT(msg, Catch::Contains("0-dim float32") && Catch::Contains("uint8"));
  // bool is viewed only from bool; bool as bytes is fine.
  CHECK_THROWS_AS(from_vector(std::vector<uint8_t>{2}).view(kBool), Error);
  CHECK_THROWS_AS(f.view(kBool), Error);
  CHECK(from_vector(std::vector<bool>{true, false}).view(kUInt8).to_vector<int>() == std::vector<int>{1, 0});
  CHECK_THROWS_AS(f.view(ScalarType::Undefined), Error);
  CHECK_THROWS_AS(Tensor().view(kInt32), Error);
  // Memory from the caller that is not aligned for the new dtype.
  alignas(8) uint8_t buf[16] = {};
  const Tensor odd = from_blob(buf + 1, {8}, {}, kUInt8);
  CHECK_THAT(error_of([&] { odd.view(kInt64); }), Catch::Contains("not aligned"));
  CHECK(from_blob(buf + 8, {8}, {}, kUInt8).view(kInt64).item<int64_t>() == 0);
  // Checked arithmetic: 2^62 rows of one float64 are 2^65 bytes.
  const Tensor huge = zeros({1, 1}, {.dtype = kFloat64}).expand({int64_t{1} << 62, 1});
  CHECK(huge.view(kInt64).sizes() == Shape{int64_t{1} << 62, 1});
  CHECK_THROWS_AS(huge.view(kUInt8), Error);
}

TEST_CASE("view(dtype) is not differentiable, as in PyTorch", "[views][view_dtype][autograd]") {
  Tensor x = iota({4});
  x.requires_grad_();
  const Tensor bits = x.view(kInt32);
  CHECK_FALSE(bits.requires_grad());
  CHECK(bits.shares_storage(x));
  const Tensor same = x.view(kFloat32);
  CHECK_FALSE(same.requires_grad());
  CHECK_THROWS_AS(same.sum().backward(), Error);
  // The rest of the graph is untouched.
  (x * 2).sum().backward();
  CHECK(x.grad().to_vector<float>() == std::vector<float>{2, 2, 2, 2});
}

TEST_CASE("view(dtype) on meta tensors gives the CPU's geometry", "[views][view_dtype][meta]") {
  const Tensor m = empty({1 << 20, 1 << 20}, {.dtype = kBFloat16, .device = Device::meta()});  // 2 TiB, no memory
  const Tensor w = m.view(kFloat32);
  CHECK(w.is_meta());
  CHECK(w.dtype() == kFloat32);
  CHECK(w.sizes() == Shape{1 << 20, 1 << 19});
  CHECK(w.strides() == Shape{1 << 19, 1});
  CHECK(m.view(kInt8).sizes() == Shape{1 << 20, 1 << 21});
  CHECK(m.view(kFloat16).sizes() == m.sizes());
  const Tensor odd = empty({2, 3}, {.device = Device::meta()});
  CHECK_THAT(error_of([&] { odd.view(kFloat64); }), Catch::Contains("float32[2, 3]") && Catch::Contains("float64"));
  CHECK_THROWS_AS(odd.t().view(kUInt8), Error);
  // The same geometry the CPU computes, slices included.
  const Tensor cpu = empty({4, 6}, {.dtype = kInt32}).slice(1, 2, 6);
  const Tensor meta = empty({4, 6}, {.dtype = kInt32, .device = Device::meta()}).slice(1, 2, 6);
  for (ScalarType dt : {kInt8, kFloat16, kFloat32, kInt64}) {
    INFO(dtype_name(dt));
    CHECK(meta.view(dt).sizes() == cpu.view(dt).sizes());
    CHECK(meta.view(dt).strides() == cpu.view(dt).strides());
    CHECK(meta.view(dt).storage_offset() == cpu.view(dt).storage_offset());
  }
}
