// Autocast policies: the tables against PyTorch 2.11's lists for every op mixt
// has (both devices; the lists: tests/support/pytorch_autocast_lists.cpp), and the
// pure decision function (casts, output dtype, errors) per device and autocast
// dtype — the CUDA policy needs no GPU here.
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>

#include <mixt/mixt.h>

#include "pytorch_autocast_lists.h"
#include "test_util.h"

using namespace mixt;
using namespace mixt::testing;
using autocast::Decision;
using autocast::Policy;
using autocast::Rule;
using Catch::Contains;

namespace {

// The policies mixt sets beyond PyTorch 2.11's lists (tests/support/pytorch_autocast_lists.cpp),
// where PyTorch decides the op through the listed ops it decomposes into.
// CUDA: PyTorch's cross_entropy is log_softmax (fp32_set_opt_dtype) then nll_loss (fp32);
// mixt lists that outcome, so a backend with a fused kernel gives it too.
const std::map<std::string, Policy> kBeyondCudaList = {{"cross_entropy", Policy::Fp32}};
// CPU: composites in PyTorch whose mm / bmm the CPU list lowers.
const std::map<std::string, Policy> kBeyondCpuList = {
    {"einsum", Policy::Lower}, {"tensordot", Policy::Lower}, {"chain_matmul", Policy::Lower},
    {"linalg_multi_dot", Policy::Lower}};

// What the tables must hold: the listed policy for every mixt op on the device's list, plus the above.
std::map<std::string, Policy> expected_policies(DeviceType device) {
  std::map<std::string, Policy> expected = policies_from_pytorch_list(device);
  for (const auto& [name, p] : device == DeviceType::CUDA ? kBeyondCudaList : kBeyondCpuList) {
    INFO(device_type_name(device) << " " << name << " is on the list already");
    CHECK(expected.emplace(name, p).second);
  }
  return expected;
}

autocast::State enabled_state(DeviceType d, ScalarType dtype) {
  autocast::State st;
  st.enabled[static_cast<size_t>(d)] = true;
  st.dtype[static_cast<size_t>(d)] = dtype;
  return st;
}

Decision decide(DeviceType d, ScalarType lower, OpId op, std::initializer_list<autocast::TypedInput> in,
                Attrs attrs = {}) {
  return autocast::decide(d, op, in, attrs, enabled_state(d, lower));
}

}  // namespace

TEST_CASE("the policy tables are PyTorch 2.11's lists, for every op", "[autocast][policy]") {
  for (DeviceType device : {DeviceType::CUDA, DeviceType::CPU}) {
    const std::map<std::string, Policy> expected = expected_policies(device);
    for (int i = 0; i < kNumBuiltinOps; ++i) {
      const auto op = static_cast<OpId>(i);
      const std::string name(op_name(op));
      auto it = expected.find(name);
      const Policy want = it == expected.end() ? Policy::PassThrough : it->second;
      INFO(device_type_name(device) << " " << name);
      CHECK(autocast::policy_of(device, op) == want);
    }
    for (const auto& [name, p] : expected) CHECK(has_op(name));
  }
}

TEST_CASE("decisions: lower, fp32, opt_dtype on both devices and both dtypes", "[autocast][policy]") {
  for (DeviceType dev : {DeviceType::CPU, DeviceType::CUDA})
    for (ScalarType low : {kFloat16, kBFloat16}) {
      INFO(device_type_name(dev) << " " << dtype_name(low));
      Decision mm = decide(dev, low, OpId::mm, {{kFloat32, {2, 3}}, {kFloat32, {3, 4}}});
      CHECK(mm.rule == Rule::Table);
      CHECK(mm.cast_to[0] == low);
      CHECK(mm.cast_to[1] == low);
      CHECK(mm.output_dtype == low);
      // float64 and integer inputs are not eligible: they pass through unchanged.
      Decision mm64 = decide(dev, low, OpId::mm, {{kFloat64, {2, 3}}, {kFloat64, {3, 4}}});
      CHECK(mm64.cast_to[0] == ScalarType::Undefined);
      CHECK(mm64.output_dtype == kFloat64);
      CHECK(decide(dev, low, OpId::mm, {{kInt64, {2, 3}}, {kInt64, {3, 4}}}).cast_to[0] == ScalarType::Undefined);
      // An already-low input is not cast again.
      CHECK(decide(dev, low, OpId::linear, {{low, {2, 3}}, {kFloat32, {4, 3}}}).cast_to[0] == ScalarType::Undefined);
      // mse_loss is fp32 on both devices.
      Decision mse = decide(dev, low, OpId::mse_loss, {low, kFloat32});
      CHECK(mse.cast_to[0] == kFloat32);
      CHECK(mse.cast_to[1] == ScalarType::Undefined);
      CHECK(mse.output_dtype == kFloat32);
      // Unlisted ops pass through in their inputs' dtypes.
      Decision add = decide(dev, low, OpId::add, {low, low});
      CHECK(add.rule == Rule::PassThrough);
      CHECK(add.output_dtype == low);
      CHECK(decide(dev, low, OpId::relu, {low}).output_dtype == low);
    }
  // CUDA-only lists.
  Decision exp_cuda = decide(DeviceType::CUDA, kFloat16, OpId::exp, {kFloat16});
  CHECK(exp_cuda.cast_to[0] == kFloat32);
  CHECK(exp_cuda.output_dtype == kFloat32);
  CHECK(decide(DeviceType::CPU, kBFloat16, OpId::exp, {kBFloat16}).output_dtype == kBFloat16);
  Decision sm = decide(DeviceType::CUDA, kFloat16, OpId::softmax, {kFloat16});
  CHECK(sm.set_dtype == kFloat32);
  CHECK(sm.cast_to[0] == ScalarType::Undefined);
  CHECK(sm.output_dtype == kFloat32);
  Attrs explicit_dtype;
  explicit_dtype.dtype = kFloat16;
  CHECK(decide(DeviceType::CUDA, kFloat16, OpId::sum, {kFloat16}, explicit_dtype).set_dtype == ScalarType::Undefined);
  CHECK(decide(DeviceType::CUDA, kFloat16, OpId::sum, {kInt32}).set_dtype == ScalarType::Undefined);  // ineligible
  // CPU softmax is unlisted: under bf16 autocast a bf16 input gives a bf16 output (PyTorch does too).
  CHECK(decide(DeviceType::CPU, kBFloat16, OpId::softmax, {kBFloat16}).output_dtype == kBFloat16);
  // CPU prod is on the fp32 list (not opt_dtype); CUDA mv is lower, CPU mv passes through.
  CHECK(decide(DeviceType::CPU, kBFloat16, OpId::prod, {kBFloat16}).cast_to[0] == kFloat32);
  CHECK(decide(DeviceType::CUDA, kFloat16, OpId::mv, {{kFloat32, {2, 3}}, {kFloat32, {3}}}).output_dtype == kFloat16);
  CHECK(decide(DeviceType::CPU, kBFloat16, OpId::mv, {{kFloat32, {2, 3}}, {kFloat32, {3}}}).output_dtype == kFloat32);
  CHECK(decide(DeviceType::CPU, kBFloat16, OpId::cross_entropy, {{kBFloat16, {2, 5}}, {kInt64, {2}}}).cast_to[0] == kFloat32);
}

TEST_CASE("decisions: promote takes the widest eligible type", "[autocast][policy]") {
  Decision p = decide(DeviceType::CUDA, kFloat16, OpId::addcmul, {kFloat16, kFloat32, kFloat16});
  CHECK(p.cast_to[0] == kFloat32);
  CHECK(p.cast_to[2] == kFloat32);
  CHECK(p.output_dtype == kFloat32);
  Decision low = decide(DeviceType::CUDA, kFloat16, OpId::atan2, {kFloat16, kFloat16});
  CHECK(low.cast_to[0] == ScalarType::Undefined);
  CHECK(low.output_dtype == kFloat16);
  // float64 is ignored by the fold, and stays float64.
  Decision f64 = decide(DeviceType::CUDA, kFloat16, OpId::atan2, {kFloat16, kFloat64});
  CHECK(f64.cast_to[1] == ScalarType::Undefined);
  CHECK(f64.output_dtype == kFloat64);
  // bf16 mixed into fp16 autocast is an error, as in PyTorch.
  CHECK_THAT(decide(DeviceType::CUDA, kFloat16, OpId::dot, {{kBFloat16, {3}}, {kFloat16, {3}}}).error, Contains("cannot combine"));
  // CPU cat/stack promote (list inputs).
  Decision cat = decide(DeviceType::CPU, kBFloat16, OpId::cat, {{kBFloat16, {2}}, {kFloat32, {2}}});
  REQUIRE(cat.list_cast_to.size() == 2);
  CHECK(cat.list_cast_to[0] == kFloat32);
  CHECK(cat.output_dtype == kFloat32);
  CHECK(decide(DeviceType::CUDA, kFloat16, OpId::cat, {{kFloat16, {2}}, {kFloat32, {2}}}).rule == Rule::PassThrough);
}

TEST_CASE("decisions: banned binary_cross_entropy on CUDA names the safe alternative", "[autocast][policy]") {
  Decision b = decide(DeviceType::CUDA, kFloat16, OpId::binary_cross_entropy, {kFloat16, kFloat16});
  CHECK(b.rule == Rule::Banned);
  CHECK_THAT(b.error, Contains("binary_cross_entropy_with_logits"));
  CHECK(decide(DeviceType::CPU, kBFloat16, OpId::binary_cross_entropy, {kBFloat16, kBFloat16}).cast_to[0] ==
        kFloat32);
  // Not banned when autocast is off.
  autocast::State off;
  CHECK(autocast::decide(DeviceType::CUDA, OpId::binary_cross_entropy, {kFloat16, kFloat16}, {}, off).error.empty());
}

TEST_CASE("decisions: scopes win over the tables; in-place ops are never cast", "[autocast][policy]") {
  autocast::State st = enabled_state(DeviceType::CUDA, kFloat16);
  st.scopes[0] = {autocast::ScopeKind::Island, kFloat32};
  st.depth = 1;
  Decision island = autocast::decide(DeviceType::CUDA, OpId::mm, {{kFloat16, {2, 3}}, {kFloat16, {3, 4}}}, {}, st);
  CHECK(island.rule == Rule::Island);
  CHECK(island.cast_to[0] == kFloat32);
  CHECK(island.output_dtype == kFloat32);
  CHECK(autocast::decide(DeviceType::CUDA, OpId::add, {kFloat16, kFloat16}, {}, st).output_dtype == kFloat32);
  st.scopes[1] = {autocast::ScopeKind::Region, kBFloat16};
  st.depth = 2;  // a region inside the island: innermost wins
  Decision region = autocast::decide(DeviceType::CUDA, OpId::exp, {kFloat32}, {}, st);
  CHECK(region.rule == Rule::Region);
  CHECK(region.output_dtype == kBFloat16);
  // Regions work without autocast enabled.
  autocast::State plain;
  plain.scopes[0] = {autocast::ScopeKind::Region, kBFloat16};
  plain.depth = 1;
  CHECK(autocast::decide(DeviceType::CPU, OpId::mm, {{kFloat32, {2, 3}}, {kFloat32, {3, 4}}}, {}, plain).output_dtype == kBFloat16);
  plain.scopes[0] = {autocast::ScopeKind::Disabled, ScalarType::Undefined};
  CHECK(autocast::decide(DeviceType::CPU, OpId::mm, {{kFloat32, {2, 3}}, {kFloat32, {3, 4}}}, {}, plain).rule == Rule::Disabled);
  CHECK(decide(DeviceType::CUDA, kFloat16, OpId::add_, {kFloat32, kFloat32}).rule == Rule::PassThrough);
  CHECK(decide(DeviceType::CUDA, kFloat16, OpId::exp_, {kFloat16}).cast_to[0] == ScalarType::Undefined);
}

TEST_CASE("decisions: lower_f32_out keeps low operands and returns float32", "[autocast][policy]") {
  autocast::set_policy(DeviceType::CUDA, OpId::mm, Policy::LowerF32Out);
  Decision d = decide(DeviceType::CUDA, kBFloat16, OpId::mm, {{kFloat32, {2, 3}}, {kFloat32, {3, 4}}});
  autocast::reset_policies();
  CHECK(d.cast_to[0] == kBFloat16);
  CHECK(d.set_dtype == kFloat32);
  CHECK(d.output_dtype == kFloat32);
  CHECK(autocast::policy_of(DeviceType::CUDA, OpId::mm) == Policy::Lower);
}

TEST_CASE("decide() says which attributes a prediction needs, and takes them", "[autocast][policy]") {
  // conv2d, layer_norm and rms_norm have no usable default for some attribute: without the call's
  // attributes the output dtype cannot be predicted, and decide() says which one is missing.
  const autocast::State st = enabled_state(DeviceType::CUDA, kFloat16);
  auto missing = [&](OpId op, std::initializer_list<autocast::TypedInput> in) {
    return error_of([&] { autocast::decide(DeviceType::CUDA, op, in, {}, st); });
  };
  CHECK_THAT(missing(OpId::conv2d, {{kFloat32, {1, 3, 8, 8}}, {kFloat32, {4, 3, 3, 3}}}),
             Contains("conv2d") && Contains("stride"));
  CHECK_THAT(missing(OpId::layer_norm, {{kFloat16, {2, 8}}}), Contains("layer_norm") && Contains("normalized_shape"));
  CHECK_THAT(missing(OpId::rms_norm, {{kFloat16, {2, 8}}}), Contains("rms_norm") && Contains("normalized_shape"));
  // With them, the prediction: conv2d lowered, layer_norm float32 (CUDA's fp32 list), rms_norm passed through.
  const attrs::Conv conv{.stride = {1, 1}, .padding = {1, 1}, .dilation = {1, 1}, .groups = 1};
  const Decision c = autocast::decide(DeviceType::CUDA, OpId::conv2d, {{kFloat32, {1, 3, 8, 8}}, {kFloat32, {4, 3, 3, 3}}},
                                      conv, st);
  CHECK(c.cast_to[0] == kFloat16);
  CHECK(c.output_dtype == kFloat16);
  CHECK(autocast::decide(DeviceType::CUDA, OpId::layer_norm, {{kFloat16, {2, 8}}},
                         attrs::LayerNorm{.normalized_shape = {8}}, st)
            .output_dtype == kFloat32);
  CHECK(autocast::decide(DeviceType::CUDA, OpId::rms_norm, {{kFloat16, {2, 8}}}, attrs::RmsNorm{.normalized_shape = {8}},
                         st)
            .output_dtype == kFloat16);
  // linear has no named attributes; PyTorch's autocast list calls it with an [8, 8] bias.
  CHECK(decide(DeviceType::CUDA, kFloat16, OpId::linear, {{kFloat32, {8, 8}}, {kFloat32, {8, 8}}, {kFloat32, {8, 8}}})
            .output_dtype == kFloat16);
  // Another op's attributes are refused by name; ops whose defaults serve need none.
  CHECK_THAT(error_of([&] {
               autocast::decide(DeviceType::CUDA, OpId::layer_norm, {{kFloat16, {2, 8}}}, conv, st);
             }),
             Contains("layer_norm") && Contains("LayerNorm") && Contains("Conv"));
  CHECK(decide(DeviceType::CUDA, kFloat16, OpId::sum, {{kFloat16, {2, 3}}}).output_dtype == kFloat32);
  // A call that raises whatever its attributes predicts nothing, as before.
  CHECK(autocast::decide(DeviceType::CUDA, OpId::layer_norm, {{kFloat16, {2, 8}}},
                         attrs::LayerNorm{.normalized_shape = {5}}, st)
            .output_dtype == ScalarType::Undefined);
}

TEST_CASE("docs/autocast_tables.md is generated from the tables", "[autocast][docs]") {
  std::string md =
      "# Autocast policy tables\n\n"
      "Generated from `autocast/policy_tables.cpp` by `tests/cpu/test_autocast_policy.cpp` (the test fails when\n"
      "this file is stale; regenerate with `MIXT_UPDATE_DOCS=1 build/tests/test_autocast_policy`). They are\n"
      "PyTorch 2.11's autocast lists restricted to the ops mixt has, plus CUDA's `cross_entropy`, which PyTorch\n"
      "decides through its decomposition (float32: [autocast.md](autocast.md#policies)); `mixt-bench policy\n"
      "[cpu|cuda]` prints the tables in effect, including policies an application set.\n\n"
      "## CUDA (default dtype float16)\n\n" +
      autocast::describe_policies(DeviceType::CUDA, true) + "\n## CPU (default dtype bfloat16)\n\n" +
      autocast::describe_policies(DeviceType::CPU, true);
  const std::string path = std::string(MIXT_SOURCE_ROOT) + "/docs/autocast_tables.md";
  if (const char* update = std::getenv("MIXT_UPDATE_DOCS"); update && std::string(update) == "1")
    std::ofstream(path) << md;
  std::ifstream in(path);
  std::stringstream have;
  have << in.rdbuf();
  INFO("docs/autocast_tables.md is stale: run MIXT_UPDATE_DOCS=1 on test_autocast_policy");
  CHECK(have.str() == md);
}
