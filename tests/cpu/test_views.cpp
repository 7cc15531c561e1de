// Views share storage and compute the right geometry; reshape copies only when
// it must; bad dims raise mixt::Error.
#include <catch2/catch.hpp>

#include <mixt/mixt.h>

using namespace mixt;

namespace {
Tensor iota(const Shape& shape) {
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return from_vector(v, shape);
}
}  // namespace

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
