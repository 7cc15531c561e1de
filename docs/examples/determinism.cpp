// set_deterministic(true): the same inputs give the same bits, run after run. Two
// identical training runs end with identical parameters, byte for byte.
#include <cstdio>
#include <cstring>

#include <mixt/mixt.h>

#include "example_support.h"

using namespace mixt;
namespace F = mixt::nn::functional;

// Trains a small MLP for 20 steps from seed 0 and returns its parameters (on the CPU).
std::vector<Tensor> train_once() {
  manual_seed(0);
  nn::Sequential model(nn::Linear(32, 64), nn::GELU(), nn::Linear(64, 8));
  optim::AdamW opt(model.parameters(), {.lr = 1e-2});
  const Tensor x = randn({128, 32}), target = randn({128, 8});
  for (int step = 0; step < 20; ++step) {
    opt.zero_grad();
    F::mse_loss(model.forward(x), target).backward();
    opt.step();
  }
  std::vector<Tensor> params;
  for (const Tensor& p : model.parameters()) params.push_back(p.detach().cpu().contiguous());
  return params;
}

int main() {
  set_deterministic(true);  // no timed GEMM autotuning, no atomic reductions: the same bits every run
  const std::vector<Tensor> a = train_once(), b = train_once();
  for (size_t i = 0; i < a.size(); ++i)
    example::require(std::memcmp(a[i].data_ptr(), b[i].data_ptr(), static_cast<size_t>(a[i].nbytes())) == 0,
                     "parameter " + std::to_string(i) + " differs between the two runs");
  std::printf("two runs, %zu parameters, identical bits (deterministic: %s)\n", a.size(),
              is_deterministic() ? "on" : "off");
  return 0;
}
