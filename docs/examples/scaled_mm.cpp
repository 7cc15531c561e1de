// The float8 GEMM: quantise an activation and a weight to float8 with per-tensor scales,
// multiply them with scaled_mm into bfloat16 (and into float8 with an amax), and compare
// with the float32 product. It checks what it prints and exits with 1 when a value is wrong.
#include <cmath>
#include <cstdio>

#include <mixt/mixt.h>

#include "example_support.h"

int main() {
  using namespace mixt;
  using example::require;

  const Tensor x = randn({64, 256});   // activations [M, K]
  const Tensor w = randn({128, 256});  // a linear layer's weight [N, K]

  // Current per-tensor scaling: scale = 448 / amax maps each tensor onto e4m3's range;
  // scaled_mm takes the inverse scales (dequantisation multipliers).
  auto quantise = [](const Tensor& t, Tensor& inverse_scale) {
    const Tensor scale = div(full({}, 448.0), amax(abs(t)));
    inverse_scale = reciprocal(scale);
    return mul(t, scale).to(kFloat8_e4m3fn);  // saturating cast: never beyond +-448
  };
  Tensor sx, sw;
  const Tensor x8 = quantise(x, sx), w8 = quantise(w, sw);

  // y = x @ w^T: w8.t() is the [K, N] operand (the column-major layout Hopper's kernels want).
  const ScaledMmResult y = scaled_mm(x8, w8.t(), sx, sw, {.out_dtype = kBFloat16});
  const Tensor exact = mm(x, w.t());
  const double error = amax(abs(sub(y.out.to(kFloat32), exact))).item<double>();
  const double size = amax(abs(exact)).item<double>();
  std::printf("bfloat16 result %s, largest error %.3g of %.3g\n", y.out.describe().c_str(), error, size);
  require(y.out.dtype() == kBFloat16 && y.out.sizes() == Shape{64, 128}, "a [64, 128] bfloat16 result");
  require(!y.amax.defined(), "amax comes only with float8 results");
  require(error < 0.1 * size, "float8 operands keep the product within 10% of its range");

  // A float8 result for the next layer: amax (taken before scale_result) gives the next scale.
  const Tensor out_scale = full({}, 448.0 / size);
  const ScaledMmResult y8 =
      scaled_mm(x8, w8.t(), sx, sw, {.scale_result = out_scale, .out_dtype = kFloat8_e4m3fn});
  std::printf("float8 result %s, amax %.4g\n", y8.out.describe().c_str(), y8.amax.item<double>());
  require(y8.out.dtype() == kFloat8_e4m3fn, "a float8 result");
  require(std::abs(y8.amax.item<double>() - size) < 0.1 * size, "amax is the largest |result| before scaling");
  require(amax(abs(y8.out.to(kFloat32))).item<double>() <= 448, "float8 results saturate at 448");

  // fp8 GEMMs are not differentiable, and autocast leaves their inputs alone.
  {
    autocast::Guard g({.device = DeviceType::CPU, .dtype = kBFloat16});
    require(equal(scaled_mm(x8, w8.t(), sx, sw, {.out_dtype = kBFloat16}).out, y.out), "autocast casts nothing");
  }
  return 0;
}
