// The meta device: a model far larger than this machine's memory is built and run
// on tensors that have sizes, strides and dtypes but no memory; then CUDA's float16
// casting policy is rehearsed on such tensors, with no GPU. See docs/meta.md.
#include <cstdio>

#include <mixt/mixt.h>

#include "example_support.h"

using namespace mixt;
using example::require;

int main() {
  // 1. A transformer block of width 8192 on a batch of 8 x 4096 tokens: about 800M
  //    parameters and 268M activations per tensor, and no byte of either allocated.
  {
    DefaultDeviceGuard on_meta(Device::meta());  // factories and parameters go to meta
    nn::TransformerBlock block(/*dim=*/8192, /*num_heads=*/64);
    int64_t params = 0;
    for (const Tensor& p : block.parameters()) params += p.numel();
    const Tensor x = empty({8, 4096, 8192});
    const Tensor y = block.forward(x);
    std::printf("block: %lld parameters, output %s\n", static_cast<long long>(params), y.describe().c_str());
    require(y.is_meta() && y.sizes() == x.sizes() && y.dtype() == kFloat32, "the block keeps shape and dtype");
    require(params > 800'000'000, "the block has its full parameter count");
  }

  // 2. Shape errors show up on meta as on any device, from shapes alone.
  try {
    mm(empty({4, 5}, {.device = Device::meta()}), empty({6, 7}, {.device = Device::meta()}));
    require(false, "mm with mismatched inner sizes raises on meta");
  } catch (const Error& e) {
    std::printf("refused: %s\n", e.what());
  }

  // 3. CUDA's float16 policy rehearsed on meta tensors: the same casts as on a GPU.
  {
    autocast::Explain explain;
    autocast::Guard fp16({.device = DeviceType::CUDA, .dtype = kFloat16, .rehearse_on = Device::meta()});
    const TensorOptions meta{.device = Device::meta()};
    const Tensor x = empty({32, 512}, meta), w = empty({1024, 512}, meta);
    const Tensor h = nn::functional::linear(x, w);   // CUDA lowers linear to float16
    const Tensor p = nn::functional::softmax(h, -1);  // and computes softmax in float32
    require(h.dtype() == kFloat16, "linear runs in float16 under CUDA's policy");
    require(p.dtype() == kFloat32, "softmax runs in float32 under CUDA's policy");
    std::printf("%s", explain.table().c_str());
  }
  return 0;
}
