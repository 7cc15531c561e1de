// Getting started: create tensors, run ops, move between dtypes and devices.
#include <iostream>

#include <mixt/mixt.h>

int main() {
  using namespace mixt;
  // Pick the GPU when there is one; everything below runs on either device.
  const Device dev = cuda::is_available() ? Device::cuda(0) : Device::cpu();
  std::cout << "device: " << dev.str() << "\n";

  manual_seed(0);
  Tensor x = randn({4, 3}, {.device = dev});
  Tensor w = randn({2, 3}, {.device = dev});
  Tensor b = zeros({2}, {.device = dev});

  // y = x @ w^T + b, as nn.Linear computes it.
  Tensor y = linear(x, w, b);
  std::cout << "y: " << y.sizes().str() << " " << dtype_name(y.dtype()) << "\n";

  // Broadcasting, scalars and reductions.
  Tensor centered = y - y.mean({0}, /*keepdim=*/true);
  Tensor total = centered.sum();
  std::cout << "column sums after centering (≈0): " << total.item<double>() << "\n";

  // Low precision: bfloat16 operands with a float32 result.
  Tensor y16 = linear(x.to(kBFloat16), w.to(kBFloat16), Tensor(), /*out_dtype=*/kFloat32);
  Tensor err = max((y16 - y).abs());
  std::cout << "bf16 vs f32 max abs difference: " << err.item<double>() << "\n";

  // Views share storage; in-place ops bump the shared version counter.
  Tensor row = y.select(0, 0);
  row.mul_(0.0);
  std::cout << "first row zeroed through a view: " << y.cpu().select(0, 0).abs().sum().item<double>() << "\n";

  // Bad input raises mixt::Error naming the op and the inputs.
  try {
    mm(x, x);
  } catch (const Error& e) {
    std::cout << "error: " << e.what() << "\n";
  }
  return 0;
}
