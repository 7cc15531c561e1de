// The spatial nn ops beyond their op cases (tests/support/op_cases_spatial.cpp checks
// values against references, gradients and the meta device): bad geometry raises
// naming the op and the shapes, max_pool's indices address the input plane, the
// pad and interpolate front ends pick their ops, and the layers of runtime/nn/modules.h.
#include <catch2/catch.hpp>

#include <cmath>

#include <mixt/mixt.h>

#include "op_case_builder.h"
#include "test_util.h"

using namespace mixt;
using namespace mixt::testing;
using Catch::Contains;
namespace F = mixt::nn::functional;

namespace {
std::vector<double> vals(const Tensor& t) { return t.to(kFloat64).contiguous().to_vector<double>(); }
std::vector<int64_t> ints(const Tensor& t) { return t.contiguous().to_vector<int64_t>(); }
}  // namespace

TEST_CASE("transposed convolutions: output sizes, and bad geometry raises naming the op", "[nn][conv]") {
  const Tensor x = ones({1, 4, 5, 5});
  CHECK(F::conv_transpose2d(x, ones({4, 3, 3, 3}), {}, {2}, {1}, {1}).sizes() == Shape{1, 3, 10, 10});
  CHECK(F::conv_transpose1d(ones({4, 5}), ones({4, 2, 3}), {}, 2, 0, 1, 2).sizes() == Shape{4, 12});
  CHECK(F::conv_transpose3d(ones({1, 2, 2, 2, 2}), ones({2, 1, 2, 2, 2})).sizes() == Shape{1, 1, 3, 3, 3});
  // The transposed convolution is conv2d's adjoint: <conv(y), x> == <y, conv_transpose(x)>.
  const Tensor w = data(kFloat64, {4, 3, 3, 2}, -1, 1, 5);
  const Tensor a = data(kFloat64, {1, 3, 7, 6}, -1, 1, 6);
  const Tensor ya = F::conv2d(a, w, {}, {2, 1}, {1, 0}, {1, 2});
  const Tensor b = data(kFloat64, ya.sizes(), -1, 1, 7);
  const Tensor tb = F::conv_transpose2d(b, w, {}, {2, 1}, {1, 0}, {0, 0}, 1, {1, 2});
  REQUIRE(tb.sizes() == a.sizes());
  CHECK(sum(mul(ya, b)).item<double>() == Approx(sum(mul(a, tb)).item<double>()).epsilon(1e-12));

  CHECK_THAT(error_of([&] { F::conv_transpose2d(x, ones({3, 3, 3, 3})); }),
             Contains("conv_transpose2d") && Contains("input channels") && Contains("[3, 3, 3, 3]"));
  CHECK_THAT(error_of([&] { F::conv_transpose2d(x, ones({4, 3, 3, 3}), {}, {1}, {0}, {1}); }),
             Contains("conv_transpose2d") && Contains("output_padding"));
  CHECK_THAT(error_of([&] { F::conv_transpose2d(x, ones({4, 3, 3, 3}), {}, {1}, {4}); }),
             Contains("conv_transpose2d") && Contains("not positive"));
  CHECK_THAT(error_of([&] { F::conv_transpose2d(x, ones({4, 3, 3, 3}), ones({4})); }), Contains("bias"));
  CHECK_THAT(error_of([&] { F::conv_transpose1d(x, ones({4, 3, 3})); }), Contains("conv_transpose1d"));
  // A 4-D input is an unbatched one: 1 channel.
  CHECK_THAT(error_of([&] { F::conv3d(x, ones({2, 4, 3, 3, 3})); }), Contains("conv3d") && Contains("input channels"));
  CHECK_THAT(error_of([&] { F::conv3d(ones({1, 1, 2, 2, 2}), ones({1, 1, 3, 3, 3})); }),
             Contains("conv3d") && Contains("does not fit"));
}

TEST_CASE("pooling: PyTorch's output sizes, flat plane indices, and bad geometry raises", "[nn][pool]") {
  // ceil_mode: (5 + 2 - 3) / 2 rounded up is 2, + 1; the last window starts inside the input.
  CHECK(F::max_pool2d(ones({1, 1, 5, 5}), {3}, {2}, {1}, {1}, true).sizes() == Shape{1, 1, 3, 3});
  CHECK(F::avg_pool1d(ones({1, 1, 6}), 3, 2, 0, true).sizes() == Shape{1, 1, 3});
  CHECK(F::avg_pool1d(ones({1, 1, 6}), 3, 2, 0, false).sizes() == Shape{1, 1, 2});
  // A window that would start in the right padding is dropped: 3 windows, not 4.
  CHECK(F::avg_pool1d(ones({1, 1, 5}), 2, 2, 1, true).sizes() == Shape{1, 1, 3});
  // Indices: the flat position in the [H, W] plane, as PyTorch's return_indices.
  const Tensor x = from_vector(std::vector<double>{1, 9, 2, 3, 4, 5, 8, 6, 7, 0, 11, 10}, {1, 1, 3, 4});
  const F::PoolWithIndices r = F::max_pool2d_with_indices(x, {2, 2}, {1, 2});
  CHECK(vals(r.values) == std::vector<double>{9, 8, 7, 11});
  CHECK(ints(r.indices) == std::vector<int64_t>{1, 6, 8, 10});
  CHECK(r.indices.dtype() == kInt64);
  // count_include_pad: the corner window [pad, x] divides by 2 or by 1.
  const Tensor y = from_vector(std::vector<double>{4, 8}, {1, 1, 2});
  CHECK(vals(F::avg_pool1d(y, 2, 2, 1, false, true)) == std::vector<double>{2, 4});
  CHECK(vals(F::avg_pool1d(y, 2, 2, 1, false, false)) == std::vector<double>{4, 8});
  // Adaptive windows overlap: 5 -> 3 averages [0, 2), [1, 4), [3, 5).
  CHECK(vals(F::adaptive_avg_pool1d(from_vector(std::vector<double>{0, 3, 6, 9, 12}, {1, 5}), 3)) ==
        std::vector<double>{1.5, 6, 10.5});

  CHECK_THAT(error_of([] { F::max_pool2d(ones({1, 1, 5, 5}), {2}, {1}, {2}); }),
             Contains("max_pool2d") && Contains("half the kernel"));
  CHECK_THAT(error_of([] { F::avg_pool2d(ones({1, 5, 5}, of(kInt64)), {2}); }), Contains("avg_pool2d"));
  CHECK_THAT(error_of([] { F::avg_pool2d(ones({5, 5}), {2}); }), Contains("avg_pool2d") && Contains("[5, 5]"));
  CHECK_THAT(error_of([] { F::max_pool1d(ones({1, 1, 2}), 3); }), Contains("max_pool1d") && Contains("does not fit"));
  CHECK_THAT(error_of([] { F::adaptive_avg_pool2d(ones({1, 4, 4}), {0, 2}); }), Contains("adaptive_avg_pool2d"));
}

TEST_CASE("pad picks the op of its mode; reflect pads stay below the dim", "[nn][pad]") {
  const Tensor x = from_vector(std::vector<double>{1, 2, 3}, {1, 3});
  CHECK(vals(F::pad(x, {2, 1}, "reflect")) == std::vector<double>{3, 2, 1, 2, 3, 2});
  CHECK(vals(F::pad(x, {2, 1}, "replicate")) == std::vector<double>{1, 1, 1, 2, 3, 3});
  CHECK(vals(F::pad(x, {1, -1}, "constant", 7)) == std::vector<double>{7, 1, 2});
  CHECK(F::pad(ones({2, 3}, of(kInt32)), {1, 1, 1, 1}).dtype() == kInt32);
  CHECK_THAT(error_of([&] { F::pad(x, {3, 0}, "reflect"); }), Contains("reflection_pad1d") && Contains("[1, 3]"));
  CHECK_THAT(error_of([&] { F::pad(x, {1, 1}, "circular"); }), Contains("pad") && Contains("circular"));
  CHECK_THAT(error_of([&] { F::pad(x, {1, 1, 1}, "constant"); }), Contains("constant_pad_nd"));
  CHECK_THAT(error_of([&] { F::pad(x, {-2, -2}); }), Contains("constant_pad_nd"));
  CHECK_THAT(error_of([&] { F::pad(x, {1, 1}, "replicate", 0.0); }), Contains("constant"));
}

TEST_CASE("interpolate and grid_sample: sizes, modes and errors", "[nn][resample]") {
  const Tensor x = from_vector(std::vector<double>{0, 1, 2, 3}, {1, 1, 2, 2});
  CHECK(vals(F::interpolate(x, {}, {2.0})) ==
        std::vector<double>{0, 0, 1, 1, 0, 0, 1, 1, 2, 2, 3, 3, 2, 2, 3, 3});
  // align_corners: the corners stay, the middle is their mean.
  CHECK(vals(F::interpolate(x, {3, 3}, {}, "bilinear", true)) ==
        std::vector<double>{0, 0.5, 1, 1, 1.5, 2, 2, 2.5, 3});
  // The identity grid with align_corners reads the input back.
  const Tensor grid = from_vector(std::vector<double>{-1, -1, 1, -1, -1, 1, 1, 1}, {1, 2, 2, 2});
  CHECK(vals(F::grid_sample(x, grid, "bilinear", "zeros", true)) == vals(x));
  CHECK(vals(F::grid_sample(x, grid, "nearest", "border", true)) == vals(x));
  // Outside points read 0 with zeros padding and the edge with border padding.
  const Tensor far = from_vector(std::vector<double>{3, 3}, {1, 1, 1, 2});
  CHECK(vals(F::grid_sample(x, far)) == std::vector<double>{0});
  CHECK(vals(F::grid_sample(x, far, "bilinear", "border")) == std::vector<double>{3});

  CHECK_THAT(error_of([&] { F::interpolate(x, {3, 3}, {2.0}); }), Contains("interpolate") && Contains("both"));
  CHECK_THAT(error_of([&] { F::interpolate(x, {3, 3}, {}, "bicubic"); }), Contains("bicubic"));
  // A scale factor whose output size leaves int64 raises naming interpolate (it was a double to
  // int64 conversion out of range, undefined behaviour).
  CHECK_THAT(error_of([&] { F::interpolate(x, {}, {1e30}); }), Contains("interpolate") && Contains("too large"));
  CHECK_THAT(error_of([&] { F::interpolate(x, {3, 3}, {}, "linear"); }), Contains("linear"));
  CHECK_THAT(error_of([&] { F::interpolate(x, {3, 3}, {}, "nearest", true); }), Contains("align_corners"));
  CHECK_THAT(error_of([&] { F::grid_sample(x, ones({1, 2, 2, 3})); }),
             Contains("grid_sampler_2d") && Contains("[1, 2, 2, 3]"));
  CHECK_THAT(error_of([&] { F::grid_sample(x, grid, "bicubic"); }), Contains("grid_sample"));
  CHECK_THAT(error_of([&] { F::grid_sample(x, grid.to(kFloat32)); }), Contains("one dtype"));
}

TEST_CASE("Conv1d/2d/3d, ConvTranspose1d/2d, the pools and Upsample call their functions", "[nn][modules]") {
  nn::ConvTranspose2d up(4, 6, {3}, {2}, {1}, {1}, 2);
  CHECK(up.weight().sizes() == Shape{4, 3, 3, 3});
  CHECK(up.bias().sizes() == Shape{6});
  const Tensor x = data(kFloat32, {2, 4, 5, 5}, -1, 1, 3);
  CHECK(vals(up.forward(x)) == vals(F::conv_transpose2d(x, up.weight(), up.bias(), {2}, {1}, {1}, 2)));
  CHECK(up.forward(x).sizes() == Shape{2, 6, 10, 10});
  // PyTorch's init: |w| <= 1 / sqrt(weight.size(1) * prod(kernel)).
  CHECK(amax(abs(up.weight())).item<double>() <= 1 / std::sqrt(27.0));
  CHECK_THAT(up.str(), Contains("ConvTranspose2d(4, 6, kernel_size=[3, 3]") && Contains("output_padding"));

  nn::ConvTranspose1d up1(3, 2, 4, 2, 1, 0, 1, false);
  CHECK(!up1.bias().defined());
  CHECK(up1.forward(ones({1, 3, 5})).sizes() == Shape{1, 2, 10});
  nn::Conv3d c3(2, 4, {3}, {1}, {1});
  CHECK(c3.weight().sizes() == Shape{4, 2, 3, 3, 3});
  CHECK(c3.forward(ones({1, 2, 4, 4, 4})).sizes() == Shape{1, 4, 4, 4, 4});
  CHECK(c3.num_parameters() == 4 * 2 * 27 + 4);
  CHECK_THAT(error_of([] { nn::Conv3d(3, 4, {3}, {1}, {0}, {1}, 2); }), Contains("Conv3d") && Contains("groups"));

  nn::Conv2d c2(4, 6, {3, 1}, {2}, {1, 0}, {1}, 2);
  CHECK(c2.weight().sizes() == Shape{6, 2, 3, 1});
  CHECK(vals(c2.forward(x)) == vals(F::conv2d(x, c2.weight(), c2.bias(), {2, 2}, {1, 0}, {1, 1}, 2)));
  CHECK(c2.forward(x).sizes() == Shape{2, 6, 3, 3});
  CHECK(amax(abs(c2.weight())).item<double>() <= 1 / std::sqrt(6.0));
  CHECK_THAT(c2.str(), Contains("Conv2d(4, 6, kernel_size=[3, 1], stride=[2, 2], padding=[1, 0]"));
  nn::Conv1d c1(3, 5, 3, 1, 1, 2, 1, false);
  const Tensor sig = data(kFloat32, {2, 3, 9}, -1, 1, 6);
  CHECK(!c1.bias().defined());
  CHECK(vals(c1.forward(sig)) == vals(F::conv1d(sig, c1.weight(), Tensor(), 1, 1, 2)));
  CHECK(c1.forward(sig).sizes() == Shape{2, 5, 7});
  CHECK_THAT(error_of([] { nn::Conv2d(3, 4, {3}, {1}, {0}, {1}, 2); }), Contains("Conv2d") && Contains("groups"));

  const Tensor img = data(kFloat32, {1, 2, 6, 6}, -1, 1, 4);
  CHECK(vals(nn::MaxPool2d({2}).forward(img)) == vals(F::max_pool2d(img, {2})));
  CHECK(vals(nn::AvgPool2d({3}, {2}, {1}).forward(img)) == vals(F::avg_pool2d(img, {3}, {2}, {1})));
  const Tensor seq = data(kFloat32, {1, 2, 7}, -1, 1, 5);
  CHECK(vals(nn::MaxPool1d(3, 2).forward(seq)) == vals(F::max_pool1d(seq, 3, 2)));
  CHECK(vals(nn::AvgPool1d(2).forward(seq)) == vals(F::avg_pool1d(seq, 2)));
  CHECK(nn::Upsample({}, {2.0}, "bilinear", false).forward(img).sizes() == Shape{1, 2, 12, 12});
  CHECK_THAT(nn::Upsample({9, 9}).str(), Contains("size=[9, 9]") && Contains("nearest"));
}
