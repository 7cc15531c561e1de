// Autocast tools: the policy table of a device, and an explain run over the
// forward of the demo's model (a small character-level transformer).
#include <cstdio>
#include <cstring>
#include <string>

#include <mixt/mixt.h>

#include "bench_autocast.h"

namespace mixt::bench {

int run_policy(int argc, char** argv) {
  const bool cuda = argc > 0 && std::strcmp(argv[0], "cuda") == 0;
  const DeviceType d = cuda ? DeviceType::CUDA : DeviceType::CPU;
  std::printf("autocast policies on %s (PyTorch 2.11's lists for mixt's ops; table version %d)\n",
              std::string(device_type_name(d)).c_str(), autocast::kPolicyTableVersion);
  std::printf("%s", autocast::describe_policies(d, /*markdown=*/false).c_str());
  return 0;
}

int run_explain(int argc, char** argv) {
  std::string json;
  for (int i = 0; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], "--json")) json = argv[i + 1];
  manual_seed(0);
  // The demo's model: embeddings, two pre-norm transformer blocks, a head.
  nn::Embedding tok(76, 128), pos(64, 128);
  nn::Sequential blocks(nn::TransformerBlock(128, 4), nn::TransformerBlock(128, 4));
  nn::LayerNorm norm(Shape{128});
  nn::Linear head(128, 76);
  const Tensor ids = randint(0, 76, {16, 64}), targets = randint(0, 76, {16, 64});
  autocast::Explain ex;
  ex.track(head.named_parameters());
  {
    autocast::Guard g({.device = DeviceType::CPU, .dtype = kBFloat16});
    Tensor x = add(tok.forward(ids), pos.forward(arange(64)));
    Tensor logits = head.forward(norm.forward(blocks.forward(x)));
    nn::functional::cross_entropy(logits.reshape({-1, 76}), targets.reshape({-1}));
  }
  std::printf("explain: the demo model's forward under CPU bfloat16 autocast\n%s\n%s", ex.table().c_str(),
              ex.parameter_table().c_str());
  if (!json.empty()) {
    ex.write_json(json);
    std::printf("JSON written to %s\n", json.c_str());
  }
  return 0;
}

}  // namespace mixt::bench
