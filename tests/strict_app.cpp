// A tiny application of mixt, compiled by header_check.sh with -Wall -Wextra
// -Wpedantic -Werror (and none of the project's own flags) against the in-tree and
// the installed headers: what an embedding application sees must not warn. It uses
// the header templates and inline functions an application instantiates; it is
// compiled, not run.
#include <cstdint>
#include <vector>

#include <mixt/mixt.h>

using namespace mixt;
namespace F = mixt::nn::functional;

int main() {
  const Tensor x = from_vector(std::vector<float>{1.0f, 2.0f, 3.0f, 4.0f}, {2, 2});
  const Tensor bits = x.view(kInt32);
  const std::vector<int32_t> raw = bits.to_vector<int32_t>();
  const float first = x.data_ptr<float>()[0] + x.item<float>() * 0.0f;
  const int32_t n = Scalar(3.7).to<int32_t>() + Scalar(true).to<int32_t>();
  nn::Sequential model(nn::Linear(2, 4), nn::GELU(), nn::Linear(4, 2));
  optim::AdamW opt(model.parameters(), {.lr = 1e-3});
  amp::GradScaler scaler({.initial_scale = 1024.0, .enabled = false});
  Tensor loss;
  {
    autocast::Guard ac({.device = DeviceType::CPU, .dtype = kBFloat16});
    loss = F::cross_entropy(model.forward(x), from_vector(std::vector<int64_t>{0, 1}));
  }
  scaler.scale(loss).backward();
  const bool stepped = scaler.step(opt);
  scaler.update();
  const Tensor same = x == x.clone();
  const bool ok = equal(x, x) && all(same).item<bool>() && (x > 2).sum().item<int64_t>() == 2;
  OpCall call(OpId::add);
  call.attrs.get<attrs::Alpha>().alpha = 2;
  return ok && stepped && first == 1.0f && n == 4 && !raw.empty() && call.op == OpId::add ? 0 : 1;
}
