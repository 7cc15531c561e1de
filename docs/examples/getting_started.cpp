// Getting started: create tensors, run ops, move between dtypes and devices. It checks
// the values it prints and exits with 1 when one is wrong.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>

#include <mixt/mixt.h>

#include "example_support.h"

int main() {
  using namespace mixt;
  using example::require;
  // The ops below run on the CPU as written; every op also has a CUDA kernel or a
  // composite (docs/op_support.md), and with MIXT_EXAMPLE_DEVICE=cuda the whole program
  // runs on cuda:0 (where CUDA code has run: docs/cuda.md#status).
  manual_seed(0);
  Tensor x = randn({4, 3});
  Tensor w = randn({2, 3});
  Tensor b = zeros({2});

  // y = x @ w^T + b, as nn.Linear computes it.
  Tensor y = nn::functional::linear(x, w, b);
  std::cout << "y: " << y.sizes().str() << " " << dtype_name(y.dtype()) << "\n";
  require(y.sizes() == Shape{4, 2} && y.dtype() == kFloat32, "linear's result shape or dtype");
  const auto xv = x.to_vector<double>(), wv = w.to_vector<double>(), yv = y.to_vector<double>();
  double magnitude = 0;  // the largest sum of |x_ik w_jk| over k
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 2; ++j) {
      double dot = 0, size = 0;
      for (int k = 0; k < 3; ++k) {
        dot += xv[i * 3 + k] * wv[j * 3 + k];
        size += std::abs(xv[i * 3 + k] * wv[j * 3 + k]);
      }
      magnitude = std::max(magnitude, size);
      require(std::abs(yv[i * 2 + j] - dot) <= 1e-6 * size, "linear's values");
    }

  // Broadcasting, scalars and reductions.
  Tensor centered = y - y.mean({0}, /*keepdim=*/true);
  Tensor total = centered.sum();
  std::cout << "column sums after centering (≈0): " << total.item<double>() << "\n";
  require(std::abs(total.item<double>()) < 1e-5, "centered columns sum to 0");

  // Low precision: bfloat16 operands with a float32 result.
  Tensor y16 = nn::functional::linear(x.to(kBFloat16), w.to(kBFloat16), Tensor(), /*out_dtype=*/kFloat32);
  Tensor err = max((y16 - y).abs());
  std::cout << "bf16 vs f32 max abs difference: " << err.item<double>() << "\n";
  // Each bfloat16 operand is within 2^-9 (relative) of its float32 value, so each
  // product within about 2^-8 of the exact one.
  require(y16.dtype() == kFloat32 && err.item<double>() > 0 && err.item<double>() <= 0x1p-8 * 1.01 * magnitude,
          "bfloat16 result within rounding of float32");

  // Views share storage; in-place ops bump the shared version counter.
  Tensor row = y.select(0, 0);
  row.mul_(0.0);
  const double first_row = y.select(0, 0).abs().sum().item<double>();
  std::cout << "first row zeroed through a view: " << first_row << "\n";
  require(first_row == 0.0 && y.select(0, 1).abs().sum().item<double>() > 0, "the view wrote into y's first row");

  // Bad input raises mixt::Error naming the op and the inputs.
  bool raised = false;
  try {
    mm(x, x);
  } catch (const Error& e) {
    std::cout << "error: " << e.what() << "\n";
    raised = std::string(e.what()).find("mm") != std::string::npos;
  }
  require(raised, "mm of [4, 3] by [4, 3] raises mixt::Error naming mm");

  // On a CUDA device: elementwise ops and casts give the CPU's bits.
  if (cuda::is_available()) {
    const Device gpu = Device::cuda(0);
    Tensor g = (x.to(gpu) * 2.0 + x.to(gpu, kBFloat16).to(kFloat32)).cpu();
    Tensor c = x * 2.0 + x.to(kBFloat16).to(kFloat32);
    std::cout << "on " << gpu.str() << ": 2x + bf16(x) matches the CPU\n";
    require(g.to_vector<float>() == c.to_vector<float>(), "GPU add/mul/casts give the CPU's bits");
  }
  return 0;
}
