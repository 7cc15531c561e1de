// Autocast on the CPU: the policy at work on a small model, the cast cache,
// a float32 island, CUDA's policy rehearsed on CPU tensors, a bfloat16 region,
// and the explain report.
#include <iostream>

#include <mixt/autocast/autocast.h>
#include <mixt/autocast/explain.h>
#include <mixt/mixt.h>

#include "example_support.h"  // MIXT_EXAMPLE_DEVICE: the GPU check runs this example on CUDA

using namespace mixt;
namespace F = mixt::nn::functional;

int main() {
  manual_seed(0);
  nn::Linear layer(16, 8);
  Tensor x = randn({4, 16});
  Tensor target = randint(0, 8, {4});
  int failures = 0;
  auto expect = [&](bool ok, const char* what) {
    std::cout << (ok ? "ok   " : "FAIL ") << what << "\n";
    failures += ok ? 0 : 1;
  };

  autocast::Explain report;  // records every op while it lives
  report.track(layer.named_parameters());
  {
    autocast::Guard guard({.device = x.device().type(), .dtype = kBFloat16});  // the inputs' device
    Tensor logits = layer.forward(x);           // linear: "lower" -> bfloat16
    Tensor loss = F::cross_entropy(logits, target);  // losses: "fp32" -> float32
    expect(logits.dtype() == kBFloat16, "linear computes in bfloat16");
    // float32 under both devices' policies (PyTorch's CUDA list reaches it through the
    // decomposition, log_softmax and nll_loss, both float32).
    expect(loss.dtype() == kFloat32, "cross_entropy computes in float32");

    layer.forward(x);  // the weight's bfloat16 copy comes from the cast cache
    expect(autocast::cache_stats().hits >= 1, "second forward hits the cast cache");

    {
      autocast::Island island;  // precision-sensitive code: float32 inside
      expect(layer.forward(x).dtype() == kFloat32, "an island computes in float32");
    }
    loss.backward();
  }
  expect(layer.parameters()[0].grad().dtype() == kFloat32, "gradients reach the float32 master weights");

  // CUDA's float16 policy rehearsed on CPU tensors: what a GPU run decides, checked without one
  // (explain shows these ops as "cpu<cuda").
  {
    const Tensor xc = x.to(Device::cpu()), tc = target.to(Device::cpu());
    const Tensor wc = layer.parameters()[0].detach().to(Device::cpu());
    autocast::Guard cuda({.device = DeviceType::CUDA, .dtype = kFloat16, .rehearse_on = Device::cpu()});
    Tensor logits = F::linear(xc, wc);  // "lower" -> float16
    expect(logits.dtype() == kFloat16, "CUDA's policy (rehearsed): linear computes in float16");
    expect(F::cross_entropy(logits, tc).dtype() == kFloat32, "CUDA's policy (rehearsed): cross_entropy in float32");
  }

  // A region computes in a low dtype even where autocast is off; the functional
  // form casts its result back to the outer dtype.
  Tensor r = autocast::region(kBFloat16, [&] { return matmul(x, x.t()); });
  expect(r.dtype() == kFloat32, "region result is cast back to float32");

  std::cout << "\n" << report.table() << "\n" << report.parameter_table() << "\n";
  std::cout << "casts: " << report.casts() << ", cache hits: " << report.cache_hits()
            << ", bytes cast: " << report.bytes_cast() << "\n";
  return failures == 0 ? 0 : 1;
}
