// Autocast tools: the policy table of a device, and an explain run over the
// forward of the demo's model (a small character-level transformer).
#include <cstdio>
#include <optional>
#include <string>

#include <mixt/mixt.h>
#include <mixt/runtime/cuda.h>

#include "bench_autocast.h"
#include "bench_json.h"

namespace mixt::bench {

int run_policy(const cli::Args& args) {
  const DeviceType d = args.device().type();
  std::printf("autocast policies on %s (PyTorch 2.11's lists for mixt's ops; table version %d)\n",
              std::string(device_type_name(d)).c_str(), autocast::kPolicyTableVersion);
  std::printf("%s", autocast::describe_policies(d, /*markdown=*/false).c_str());
  Json ops = Json::object();
  for (int i = 0; i < num_ops(); ++i) {
    const OpId op = static_cast<OpId>(i);
    ops[std::string(op_name(op))] = autocast::policy_name(autocast::policy_of(d, op));
  }
  write_figures(args.text("--json"), {{"command", "policy"},
                                      {"device", device_type_name(d)},
                                      {"table_version", autocast::kPolicyTableVersion},
                                      {"ops", ops}});
  return 0;
}

int run_explain(const cli::Args& args) {
  const Device device = args.device();
  if (args.flag("--rehearse") && !device.is_cuda()) throw cli::UsageError("--rehearse needs --device cuda");
  // CUDA's policy runs on CPU tensors when asked, or when no GPU can run it (Note [Policy rehearsal]).
  const bool rehearse = device.is_cuda() && (args.flag("--rehearse") || !cuda::is_available());
  const Device where = rehearse ? Device::cpu() : device;
  const ScalarType dtype = device.is_cuda() ? kFloat16 : kBFloat16;
  manual_seed(0);
  // The demo's model: embeddings, two pre-norm transformer blocks, a head (built on the
  // CPU and moved, so every device sees the same weights).
  nn::Embedding tok(76, 128), pos(64, 128);
  nn::Sequential blocks(nn::TransformerBlock(128, 4), nn::TransformerBlock(128, 4));
  nn::LayerNorm norm(Shape{128});
  nn::Linear head(128, 76);
  tok.to(where);
  pos.to(where);
  blocks.to(where);
  norm.to(where);
  head.to(where);
  const Tensor ids = randint(0, 76, {16, 64}).to(where), targets = randint(0, 76, {16, 64}).to(where);
  autocast::Explain ex;
  ex.track(head.named_parameters());
  {
    autocast::Guard g({.device = device.type(),
                       .dtype = dtype,
                       .rehearse_on = rehearse ? std::optional<Device>(Device::cpu()) : std::nullopt});
    Tensor x = add(tok.forward(ids), pos.forward(arange(64).to(where)));
    Tensor logits = head.forward(norm.forward(blocks.forward(x)));
    nn::functional::cross_entropy(logits.reshape({-1, 76}), targets.reshape({-1}));
  }
  std::string title = device.is_cuda() ? "CUDA float16 autocast" : "CPU bfloat16 autocast";
  if (rehearse)
    title += args.flag("--rehearse")
                 ? ", rehearsed on the CPU (--rehearse)"
                 : ", rehearsed on the CPU (CUDA is not available: " + cuda::unavailable_reason() + ")";
  else if (device.is_cuda())
    title += " on " + device.str();
  std::printf("explain: the demo model's forward under %s\n%s\n%s", title.c_str(), ex.table().c_str(),
              ex.parameter_table().c_str());
  const std::string& json = args.text("--json");
  if (!json.empty()) {
    ex.write_json(json);
    std::printf("JSON written to %s\n", json.c_str());
  }
  return 0;
}

cli::Command policy_command() {
  return {.name = "policy",
          .summary = "the autocast policy table of a device",
          .options = {cli::device_option("whose table; printing it needs no GPU", /*needs_usable=*/false),
                      cli::json_option("also write each op's policy as JSON to FILE (replaced atomically)")},
          .positional = "--device",
          .run = run_policy};
}

cli::Command explain_command() {
  return {.name = "explain",
          .summary = "explain over the demo model's forward under CPU bfloat16 or CUDA float16 autocast",
          .options = {cli::device_option("whose autocast policy: cuda rehearses it on the CPU when no GPU is usable",
                                         /*needs_usable=*/false),
                      {.name = "--rehearse", .kind = cli::Kind::Flag,
                       .help = "with --device cuda: rehearse on the CPU even when a GPU is usable"},
                      cli::json_option("also write the explain records as JSON to FILE (replaced atomically)")},
          .run = run_explain};
}

}  // namespace mixt::bench
