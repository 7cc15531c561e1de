// The meta device: tensors with sizes, strides and dtypes but no memory; every op
// runs on them through the dispatcher (its meta rule, its device-independent kernel or
// its composite) and gives the shapes and dtypes the CPU kernels give. A whole model's
// forward is traced at any size. Also: composite implementations beside backend
// kernels (linear's fused CPU GEMM). See Note [Meta device], Note [Meta functions],
// Note [Composite and backend kernels].
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <mixt/mixt.h>

#include "op_cases.h"

using namespace mixt;
using namespace mixt::testing;
namespace F = mixt::nn::functional;
using Catch::Contains;

namespace {

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "\n  " + x;
  return s;
}

// The case's result and error on `dev` (inputs moved there).
struct Outcome {
  Tensor out;
  std::string error;
};
Outcome run_on(const OpCase& c, ScalarType dt, Device dev) {
  Outcome o;
  try {
    DefaultDeviceGuard on(dev);  // what a case creates itself (running statistics) goes there too
    CaseInputs in = c.make(dt);
    for (Tensor& t : in.in)
      if (t.defined() && dev.is_meta()) t = t.to(dev);
    o.out = c.run(in.in, dt, dev);
  } catch (const Error& e) {
    o.error = e.what();
  }
  return o;
}

}  // namespace

TEST_CASE("meta tensors have geometry and a dtype but no memory", "[meta]") {
  CHECK(Device("meta") == Device::meta());
  CHECK(Device::meta().str() == "meta");
  const MemoryStats before = cpu_memory_stats();
  const Tensor t = empty({1 << 20, 1 << 20}, {.dtype = kBFloat16, .device = Device::meta()});  // 2 TiB
  CHECK(t.is_meta());
  CHECK(t.sizes() == Shape{1 << 20, 1 << 20});
  CHECK(t.nbytes() == int64_t{1} << 41);
  CHECK(t.data_ptr() == nullptr);
  CHECK(cpu_memory_stats().allocations == before.allocations);
  // Views keep their strides; copying data out is refused.
  const Tensor v = t.transpose(0, 1).slice(0, 0, 8, 2);
  CHECK(v.sizes() == Shape{4, 1 << 20});
  CHECK(v.strides() == Shape{2, 1 << 20});
  CHECK_THROWS_WITH(v.slice(1, 0, 1).slice(0, 0, 1).item<float>(), Contains("meta"));
  CHECK_THROWS_WITH(v.to(Device::cpu()), Contains("no data"));
  CHECK(t.str().find("device=meta") != std::string::npos);
  // A CPU tensor moves to meta (its geometry, not its data); mixing devices is refused.
  const Tensor m = ones({2, 3}).to(Device::meta());
  CHECK((m.is_meta() && m.sizes() == Shape{2, 3} && m.dtype() == kFloat32));
  CHECK_THROWS_WITH(add(m, ones({2, 3})), Contains("input 1 is on cpu"));
  CHECK(add(m, 2.5).is_meta());  // a Scalar operand is fine
}

TEST_CASE("every op case gives on meta tensors the shapes and dtypes it gives on the CPU", "[meta]") {
  std::vector<std::string> failures;
  int compared = 0, refused = 0;
  for (const OpCase& c : op_cases()) {
    if (c.label == "amp_update_scale_/trajectory") continue;  // the case itself reads the scale back
    for (int d = 0; d < kNumDtypes; ++d) {
      const auto dt = static_cast<ScalarType>(d);
      const Outcome cpu = run_on(c, dt, Device::cpu());
      const Outcome meta = run_on(c, dt, Device::meta());
      const std::string where = c.label + " [" + std::string(dtype_name(dt)) + "]";
      // The ops whose result size is in the data refuse meta tensors, saying why.
      const bool data_dependent = c.op == OpId::nonzero || c.op == OpId::masked_select || c.op == OpId::unique;
      if (data_dependent && cpu.error.empty()) {
        if (meta.error.find("depends on the input's values") == std::string::npos)
          failures.push_back(where + ": expected the data-dependent size refused on meta, got " +
                             (meta.error.empty() ? "a result" : meta.error));
        continue;
      }
      if (!cpu.error.empty() || !meta.error.empty()) {
        // A dtype the op refuses is refused on meta too (from shapes and dtypes alone).
        if (cpu.error.empty() != meta.error.empty())
          failures.push_back(where + ": cpu " + (cpu.error.empty() ? "ran" : "raised " + cpu.error) + "; meta " +
                             (meta.error.empty() ? "ran" : "raised " + meta.error));
        else
          ++refused;
        continue;
      }
      ++compared;
      if (!cpu.out.defined() || !meta.out.defined()) {
        if (cpu.out.defined() != meta.out.defined()) failures.push_back(where + ": one result is undefined");
        continue;
      }
      if (!meta.out.is_meta() || meta.out.sizes() != cpu.out.sizes() || meta.out.dtype() != cpu.out.dtype())
        failures.push_back(where + ": cpu " + cpu.out.describe() + ", meta " + meta.out.describe());
    }
  }
  INFO(compared << " compared, " << refused << " refused on both; failures:" << join(failures));
  CHECK(failures.empty());
  CHECK(compared > 500);
  CHECK(refused > 100);
}

namespace {

// The training demo's model (docs/examples/train_charlm.cpp): token and position
// embeddings, pre-norm transformer blocks, a final norm and a head.
class CharLM : public nn::Module {
 public:
  CharLM(int64_t vocab, int64_t context, int64_t dim, int64_t heads, int64_t layers) {
    tok_ = register_module("tok", std::make_shared<nn::Embedding>(vocab, dim));
    pos_ = register_module("pos", std::make_shared<nn::Embedding>(context, dim));
    for (int64_t i = 0; i < layers; ++i)
      blocks_.push_back(register_module("block" + std::to_string(i), std::make_shared<nn::TransformerBlock>(dim, heads)));
    norm_ = register_module("norm", std::make_shared<nn::LayerNorm>(Shape{dim}));
    head_ = register_module("head", std::make_shared<nn::Linear>(dim, vocab));
  }
  Tensor forward(const Tensor& ids) override {
    Tensor x = add(tok_->forward(ids), pos_->forward(arange(ids.size(1))));
    for (auto& b : blocks_) x = b->forward(x);
    return head_->forward(norm_->forward(x));
  }

 private:
  std::shared_ptr<nn::Embedding> tok_, pos_;
  std::vector<std::shared_ptr<nn::TransformerBlock>> blocks_;
  std::shared_ptr<nn::LayerNorm> norm_;
  std::shared_ptr<nn::Linear> head_;
};

}  // namespace

TEST_CASE("the demo model scaled to 70B parameters is traced on meta tensors", "[meta]") {
  const auto start = std::chrono::steady_clock::now();
  DefaultDeviceGuard on_meta(Device::meta());  // parameters and factories on meta
  CharLM model(/*vocab=*/128000, /*context=*/4096, /*dim=*/8192, /*heads=*/64, /*layers=*/85);
  int64_t params = 0;
  for (const Tensor& p : model.parameters()) {
    CHECK(p.is_meta());
    params += p.numel();
  }
  CHECK(params > int64_t{70'000'000'000});
  const Tensor ids = randint(0, 128000, {2, 4096});
  Tensor logits;
  {
    autocast::Guard bf16({.device = DeviceType::CPU, .dtype = kBFloat16, .rehearse_on = Device::meta()});
    logits = model.forward(ids);
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("traced %lld parameters (bf16 autocast, CPU policy) in %.3f s\n", static_cast<long long>(params),
              seconds);
  CHECK(logits.is_meta());
  CHECK(logits.sizes() == Shape{2, 4096, 128000});
  CHECK(logits.dtype() == kBFloat16);  // the head is a linear: lowered under the CPU policy
  CHECK(seconds < 30.0);  // a sanity bound (it takes milliseconds); bench figures are in the note
}

TEST_CASE("linear: the CPU's (and CUDA's) backend kernel beside the composite the other backends run", "[meta][composite]") {
  const OpEntry& e = op_entry(OpId::linear);
  CHECK(e.composite != nullptr);
  CHECK_FALSE(e.runs_composite(DispatchKey::CPU));
  CHECK(e.runs_composite(DispatchKey::Meta));
  // CUDA builds register the GEMM engine's linear (epilogues); without it CUDA runs the composite.
  CHECK(e.runs_composite(DispatchKey::CUDA) == !cuda::is_compiled());
  // On the CPU linear is one op; on meta its composite's ops run (and dispatch).
  const Tensor x = randn({4, 3, 5}), w = randn({6, 5}), b = randn({6});
  auto inner_ops = [&](Device dev) {
    const Tensor xd = x.to(dev), wd = w.to(dev), bd = b.to(dev);
    const DispatchCounts before = dispatch_counts();
    const Tensor y = F::linear(xd, wd, bd);
    CHECK(y.sizes() == Shape{4, 3, 6});
    return static_cast<int>((dispatch_counts() - before).dispatches) - 1;  // the ops linear's implementation called
  };
  CHECK(inner_ops(Device::cpu()) == 0);
  CHECK(inner_ops(Device::meta()) > 0);
  // The fused kernel equals the composite's result bit for bit (same GEMM, same bias add).
  const Tensor fused = F::linear(x, w, b);
  Tensor composite_result;
  {
    OpCall c(OpId::linear);
    c.push(x);
    c.push(w);
    c.push(b);
    e.composite(c, DispatchKeySet(DispatchKey::CPU));
    composite_result = c.out[0];
  }
  CHECK(fused.to_vector<float>() == composite_result.to_vector<float>());
}
