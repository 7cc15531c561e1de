// Autocast end to end on the CPU: ops under a guard compute and return what the
// decision says, the cast cache (hits, invalidation, clearing, gradients after
// no_grad), nesting, Disable, islands and regions with their backward, threads,
// custom-op policies, sensitive parameters, lower_f32_out and explain.
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>

#include <catch2/catch.hpp>

#include <mixt/mixt.h>

#include "op_case_builder.h"
#include "test_util.h"

using namespace mixt;
using namespace mixt::testing;
using autocast::Policy;
using autocast::Rule;
using Catch::Contains;
namespace F = mixt::nn::functional;

namespace {
autocast::Options cpu_bf16() { return {.device = DeviceType::CPU, .dtype = kBFloat16}; }
Tensor param(const Shape& s, uint32_t seed) {
  return data(kFloat32, s, -1, 1, seed).set_requires_grad(true);
}
}  // namespace

TEST_CASE("every op under CPU autocast returns the dtype its decision predicts", "[autocast]") {
  std::vector<std::string> failures;
  int compared = 0;
  for (ScalarType low : {kBFloat16, kFloat16}) {
    for (const OpCase& c : op_cases()) {
      if (!dtypes::contains(c.cpu_dtypes, kFloat32) || c.check) continue;
      CaseInputs in = c.make(kFloat32);
      autocast::Explain ex;
      Tensor out;
      try {
        autocast::Guard g({.device = DeviceType::CPU, .dtype = low});
        out = c.run(in.in, kFloat32, Device::cpu());
      } catch (const std::exception& e) {
        failures.push_back(c.label + ": raised " + e.what());
        continue;
      }
      // The last top-level record of the op under test holds its decision and its outputs.
      const autocast::ExplainRecord* rec = nullptr;
      for (const auto& r : ex.records())
        if (r.depth == 0 && r.op == op_name(c.op)) rec = &r;
      if (!rec) continue;  // the case reached its op through another (e.g. a view of a factory)
      if (rec->outputs.empty() || rec->predicted == ScalarType::Undefined) continue;
      ++compared;
      if (rec->outputs[0] != rec->predicted)
        failures.push_back(c.label + " [" + std::string(dtype_name(low)) + "]: output " +
                           std::string(dtype_name(rec->outputs[0])) + ", decision " +
                           std::string(dtype_name(rec->predicted)));
    }
  }
  std::string all;
  for (const auto& f : failures) all += "\n  " + f;
  INFO(compared << " ops compared; failures:" << all);
  CHECK(failures.empty());
  CHECK(compared > 200);
}

TEST_CASE("ops return the same dtype with and without an Explain, as decide() predicts", "[autocast]") {
  // The fast path (nothing recorded) and the recorded path must agree: an op's
  // result may not depend on who is watching. mv, dot and outer are composites over
  // mm: PyTorch passes them through on the CPU (float32), so must both paths. Both
  // devices' tables: CUDA's is rehearsed on the CPU tensors (Note [Policy rehearsal]).
  std::vector<std::string> failures;
  int compared = 0;
  for (const DeviceType table : {DeviceType::CPU, DeviceType::CUDA})
  for (ScalarType low : {kBFloat16, kFloat16}) {
    const autocast::Options options{.device = table, .dtype = low,
                                    .rehearse_on = table == DeviceType::CPU ? std::nullopt
                                                                            : std::optional<Device>(Device::cpu())};
    for (const OpCase& c : op_cases()) {
      if (!dtypes::contains(c.cpu_dtypes, kFloat32) || c.check) continue;
      CaseInputs in = c.make(kFloat32);
      const std::string where =
          c.label + " [" + std::string(device_type_name(table)) + " " + std::string(dtype_name(low)) + "]";
      ScalarType unwatched = ScalarType::Undefined, watched = ScalarType::Undefined;
      ScalarType predicted = ScalarType::Undefined, recorded = ScalarType::Undefined;  // of output 0
      try {
        {
          autocast::Guard g(options);
          unwatched = c.run(in.in, kFloat32, Device::cpu()).dtype();
        }
        autocast::Explain ex;
        {
          autocast::Guard g(options);
          watched = c.run(in.in, kFloat32, Device::cpu()).dtype();
        }
        for (const auto& r : ex.records())
          if (r.depth == 0 && r.op == op_name(c.op) && !r.outputs.empty()) {
            predicted = r.predicted;
            recorded = r.outputs[0];
          }
      } catch (const std::exception& e) {
        // CUDA bans binary_cross_entropy under autocast: refused watched or not.
        if (!(table == DeviceType::CUDA && autocast::policy_of(table, c.op) == autocast::Policy::Banned))
          failures.push_back(where + ": raised " + e.what());
        continue;
      }
      ++compared;
      if (unwatched != watched)
        failures.push_back(where + ": " + std::string(dtype_name(unwatched)) + " unwatched, " +
                           std::string(dtype_name(watched)) + " under an Explain");
      if (predicted != ScalarType::Undefined && predicted != recorded)
        failures.push_back(where + ": decide() predicts " + std::string(dtype_name(predicted)) + ", output 0 is " +
                           std::string(dtype_name(recorded)));
    }
  }
  std::string all;
  for (const auto& f : failures) all += "\n  " + f;
  INFO(compared << " cases compared; failures:" << all);
  CHECK(failures.empty());
  CHECK(compared > 800);
  // The three ops the fast path used to lower: float32 in, float32 out.
  autocast::Guard g(cpu_bf16());
  CHECK(mv(ones({3, 2}), ones({2})).dtype() == kFloat32);
  CHECK(dot(ones({3}), ones({3})).dtype() == kFloat32);
  CHECK(outer(ones({3}), ones({2})).dtype() == kFloat32);
}

TEST_CASE("a transformer forward rehearsed under CUDA float16 on the CPU follows CUDA's rules", "[autocast][rehearsal]") {
  nn::TransformerBlock block(16, 2);
  const Tensor x = randn({2, 5, 16});
  autocast::Explain ex;
  {
    autocast::Guard fp16({.device = DeviceType::CUDA, .dtype = kFloat16, .rehearse_on = Device::cpu()});
    const Tensor h = block.forward(x);
    const Tensor p = nn::functional::softmax(h, -1);
    const Tensor n = nn::functional::layer_norm(h, {16});
    const Tensor m = addcmul(p, n.to(kFloat16), h);
    CHECK(h.dtype() == kFloat32);  // the residual stream: float32 x + float16 branch promotes
    CHECK(p.dtype() == kFloat32);  // softmax computes in float32 on CUDA
    CHECK(n.dtype() == kFloat32);  // so does layer_norm
    CHECK(m.dtype() == kFloat32);  // addcmul promotes to the widest input
  }
  // Every top-level record: CPU tensors, CUDA's policy; the table shows both.
  std::map<std::string, autocast::Policy> policy;
  for (const auto& r : ex.records()) {
    CHECK(r.device == DeviceType::CPU);
    CHECK(r.policy_device == DeviceType::CUDA);
    if (r.depth == 0) policy[r.op] = r.policy;
    if (r.depth == 0 && r.op == "linear") CHECK(r.outputs.at(0) == kFloat16);  // lowered, as on a GPU
  }
  CHECK(policy["linear"] == autocast::Policy::Lower);
  CHECK(policy["softmax"] == autocast::Policy::Fp32OptDtype);
  CHECK(policy["layer_norm"] == autocast::Policy::Fp32);
  CHECK(policy["addcmul"] == autocast::Policy::Promote);
  CHECK_THAT(ex.table(), Catch::Contains("cpu<cuda"));
  // Without the rehearsal the CPU's table applies: softmax is not on its float32 list.
  autocast::Guard bf16(cpu_bf16());
  CHECK(nn::functional::softmax(randn({2, 3}).to(kBFloat16), -1).dtype() == kBFloat16);
}

TEST_CASE("a model forward under bf16 autocast follows PyTorch's CPU decisions", "[autocast]") {
  manual_seed(0);
  nn::Linear lin(8, 4);
  Tensor x = randn({3, 8});
  Tensor y = randint(0, 4, {3});
  autocast::Guard g(cpu_bf16());
  Tensor h = lin.forward(x);
  CHECK(h.dtype() == kBFloat16);                       // linear: lower
  CHECK(F::softmax(h, -1).dtype() == kBFloat16);       // CPU softmax: unlisted
  CHECK(F::cross_entropy(h, y).dtype() == kFloat32);   // cross_entropy: fp32 list
  CHECK(exp(h).dtype() == kBFloat16);                  // exp is fp32 on CUDA only
  CHECK(add(h, x.narrow(1, 0, 4)).dtype() == kFloat32);  // pass-through: normal promotion
  CHECK(cat({h, x.narrow(1, 0, 4)}).dtype() == kFloat32);  // CPU cat: promote
  CHECK(mm(x.to(kFloat64), x.t().to(kFloat64)).dtype() == kFloat64);  // float64 is not eligible
}

TEST_CASE("the cast cache: hits, invalidation after in-place updates, clearing", "[autocast][cache]") {
  autocast::clear_cache();
  autocast::reset_cache_stats();
  Tensor w = param({4, 4}, 1), x = data(kFloat32, {2, 4}, -1, 1, 2);
  {
    autocast::Guard g(cpu_bf16());
    mm(x, w);
    mm(x, w);  // the weight's cast is served from the cache
    autocast::CacheStats s = autocast::cache_stats();
    CHECK(s.misses == 1);
    CHECK(s.hits == 1);
    CHECK(s.entries == 1);
    CHECK(s.bytes == 32);
    {
      autograd::NoGradGuard no_grad;
      w.add_(1.0);  // an optimizer step inside the region
    }
    Tensor after = mm(x, w);
    s = autocast::cache_stats();
    CHECK(s.invalidations == 1);  // never the stale cast
    CHECK(s.misses == 2);
    // The result uses the updated weight.
    CHECK(values(after) == values(mm(x.to(kBFloat16), w.to(kBFloat16))));
    // Activations (not leaves requiring grad) are never cached.
    mm(x, x.t());
    CHECK(autocast::cache_stats().entries == 1);
  }
  CHECK(autocast::cache_stats().entries == 0);  // cleared at the outermost exit
  {
    autocast::Guard g({.device = DeviceType::CPU, .dtype = kBFloat16, .cache = false});
    mm(x, w);
    CHECK(autocast::cache_stats().entries == 0);
  }
}

TEST_CASE("the cast cache serves each parameter its own current cast, for many parameters and both dtypes",
          "[autocast][cache]") {
  // More parameters than the cache keeps in its direct-mapped front, read in turns, in two
  // low dtypes, updated in place between turns, then freed and replaced by new ones (whose
  // addresses may be the old ones'): every read must be the parameter's cast as it is now.
  autocast::clear_cache();
  autocast::reset_cache_stats();
  const Tensor x = data(kFloat32, {2, 4}, -1, 1, 7);
  int64_t reads = 0, first_reads = 0, updates = 0;  // updates: in-place changes
  for (uint32_t round = 0; round < 2; ++round) {
    std::vector<Tensor> ws;
    for (uint32_t i = 0; i < 100; ++i) ws.push_back(param({4, 4}, 100 * round + i + 10));
    autocast::Guard g(cpu_bf16());
    for (int turn = 0; turn < 3; ++turn) {
      for (size_t i = 0; i < ws.size(); ++i) {
        for (ScalarType low : {kBFloat16, kFloat16}) {
          autocast::Guard inner({.device = DeviceType::CPU, .dtype = low});
          const Tensor got = mm(x, ws[i]);
          REQUIRE(got.dtype() == low);
          REQUIRE(values(got) == values(mm(x.to(low), ws[i].to(low))));
          ++reads;
        }
      }
      if (turn == 0) first_reads += 2 * static_cast<int64_t>(ws.size());
      autograd::NoGradGuard no_grad;
      for (size_t i = 0; i < ws.size(); i += 3, ++updates) ws[i].mul_(0.5);  // a third change in place
    }
  }
  const autocast::CacheStats s = autocast::cache_stats();
  // One miss per parameter and dtype at its first read, and again (an invalidation) after
  // each in-place change that is read later: the changes after the last turn are not.
  const int64_t changes_read = updates - updates / 3;
  CHECK(s.invalidations == 2 * changes_read);
  CHECK(s.misses == first_reads + 2 * changes_read);
  CHECK(s.hits == reads - s.misses);
  CHECK(s.entries == 0);  // cleared at the outermost exit
}

TEST_CASE("a cast first cached under no_grad still carries the gradient path", "[autocast][cache]") {
  autocast::clear_cache();
  Tensor w = param({4, 4}, 3), x = data(kFloat32, {2, 4}, -1, 1, 4);
  autocast::Guard g(cpu_bf16());
  {
    autograd::NoGradGuard no_grad;
    mm(x, w);  // evaluation pass fills the cache
  }
  Tensor loss = sum(mm(x, w).to(kFloat32));
  loss.backward();
  REQUIRE(w.grad().defined());
  CHECK(w.grad().dtype() == kFloat32);  // the gradient reaches the float32 parameter
  CHECK(autocast::cache_stats().hits >= 1);
}

TEST_CASE("nesting with different dtypes restores exactly, also on exceptions", "[autocast][scopes]") {
  Tensor a = data(kFloat32, {2, 2}, -1, 1, 5);
  CHECK_FALSE(autocast::is_enabled(DeviceType::CPU));
  {
    autocast::Guard outer(cpu_bf16());
    CHECK(mm(a, a).dtype() == kBFloat16);
    {
      autocast::Guard inner({.device = DeviceType::CPU, .dtype = kFloat16});
      CHECK(mm(a, a).dtype() == kFloat16);
      {
        autocast::Guard off({.device = DeviceType::CPU, .enabled = false});
        CHECK(mm(a, a).dtype() == kFloat32);
      }
    }
    CHECK(mm(a, a).dtype() == kBFloat16);
    try {
      autocast::Guard inner({.device = DeviceType::CPU, .dtype = kFloat16});
      throw std::runtime_error("boom");
    } catch (const std::runtime_error&) {
    }
    CHECK(autocast::get_dtype(DeviceType::CPU) == kBFloat16);
    CHECK(autocast::state().nesting == 1);
  }
  CHECK_FALSE(autocast::is_enabled(DeviceType::CPU));
  CHECK(mm(a, a).dtype() == kFloat32);
  CHECK(tls_dispatch_keys.excluded.has(DispatchKey::AutocastCPU));
  CHECK_THROWS_AS(autocast::Guard({.device = DeviceType::CPU, .dtype = kFloat32}), Error);
}

TEST_CASE("Disable, islands and regions", "[autocast][scopes]") {
  Tensor a = data(kFloat32, {2, 2}, -1, 1, 6);
  Tensor low = a.to(kBFloat16);
  autocast::Guard g(cpu_bf16());
  {
    autocast::Disable off;
    CHECK(mm(a, a).dtype() == kFloat32);
  }
  {
    autocast::Island island;
    CHECK(mm(a, a).dtype() == kFloat32);       // lower policy overridden
    CHECK(add(low, low).dtype() == kFloat32);  // every op computes in float32
    {
      autocast::Region region(kFloat16);
      CHECK(exp(a).dtype() == kFloat16);  // innermost wins
    }
  }
  autocast::Guard off({.device = DeviceType::CPU, .enabled = false});
  Tensor r = autocast::region(kBFloat16, [&] {
    Tensor inner = mm(a, a);
    CHECK(inner.dtype() == kBFloat16);  // computes in bf16 even with autocast off
    return inner;
  });
  CHECK(r.dtype() == kFloat32);  // the functional form casts back to the outer dtype
  Tensor i = autocast::island([&] { return mm(low, low); });
  CHECK(i.dtype() == kFloat32);
}

TEST_CASE("backward of an island runs in float32, also on another thread", "[autocast][scopes]") {
  Tensor w = param({4, 4}, 7);
  Tensor x = data(kBFloat16, {3, 4}, -1, 1, 8);
  Tensor y;
  {
    autocast::Island island;
    y = mm(x, w.to(kBFloat16));  // computed in float32 inside the island
  }
  CHECK(y.dtype() == kFloat32);
  Tensor loss = sum(y);
  std::vector<Rule> backward_rules;
  std::thread worker([&] {  // a fresh thread: no scopes of its own
    autocast::Explain ex;
    loss.backward();
    for (const auto& r : ex.records()) backward_rules.push_back(r.rule);
  });
  worker.join();
  REQUIRE_FALSE(backward_rules.empty());
  bool island_seen = false;
  for (Rule r : backward_rules) island_seen = island_seen || r == Rule::Island;
  CHECK(island_seen);  // the mm backward ran under the forward's island
  CHECK(w.grad().dtype() == kFloat32);
}

TEST_CASE("threads keep their own autocast state", "[autocast]") {
  Tensor a = data(kFloat32, {2, 2}, -1, 1, 9);
  ScalarType t1 = ScalarType::Undefined, t2 = ScalarType::Undefined;
  std::thread th1([&] {
    autocast::Guard g(cpu_bf16());
    for (int i = 0; i < 50; ++i) t1 = mm(a, a).dtype();
  });
  std::thread th2([&] {
    autocast::Guard g({.device = DeviceType::CPU, .dtype = kFloat16});
    for (int i = 0; i < 50; ++i) t2 = mm(a, a).dtype();
  });
  th1.join();
  th2.join();
  CHECK(t1 == kBFloat16);
  CHECK(t2 == kFloat16);
  CHECK(mm(a, a).dtype() == kFloat32);
}

namespace {
// A custom solver that must run in its inputs' dtype.
void solver_cpu(OpCall& c, DispatchKeySet) { c.out[0] = mul(mm(c.in[0], c.in[1]), 1.0); }
// A custom matmul-like op with a lower policy.
void proj_cpu(OpCall& c, DispatchKeySet) { c.out[0] = mm(c.in[0], c.in[1]); }
// proj's meta rule: its result is float64 whatever its inputs (not type promotion).
void proj_meta(const OpCall& c, OutputMeta* out) { out[0] = {Shape{c.in[0].size(0), c.in[1].size(1)}, kFloat64}; }
OpId register_custom(const char* name, KernelFn fn, MetaFn meta = nullptr) {
  OpId id = register_op({.name = name, .min_inputs = 2, .max_inputs = 2, .outputs = 1, .meta = meta});
  register_kernel(id, DispatchKey::CPU, fn);
  return id;
}
Tensor call2(OpId id, const Tensor& a, const Tensor& b) {
  OpCall c(id);
  c.push(a);
  c.push(b);
  return call_op(c);
}
}  // namespace

TEST_CASE("custom ops: registered policies, disabled inside, meta rules predict outputs", "[autocast][custom]") {
  static const OpId solver = register_custom("test::solver", solver_cpu);
  static const OpId proj = register_custom("test::proj", proj_cpu, proj_meta);
  autocast::set_policy(DeviceType::CPU, solver, Policy::DisabledInside);
  autocast::set_policy(DeviceType::CPU, proj, Policy::Lower);
  Tensor a = data(kFloat32, {2, 2}, -1, 1, 10);
  {
    autocast::Guard g(cpu_bf16());
    CHECK(call2(proj, a, a).dtype() == kBFloat16);
    CHECK(call2(solver, a, a).dtype() == kFloat32);  // the inner mm is not autocast
    autocast::Island island;
    CHECK(call2(solver, a.to(kBFloat16), a.to(kBFloat16)).dtype() == kBFloat16);  // not even an island
  }
  autocast::State st;
  st.enabled[0] = true;
  st.dtype[0] = kBFloat16;
  CHECK(autocast::decide(DeviceType::CPU, proj, {kFloat32, kFloat32}, {}, st).rule == Rule::Custom);
  // The prediction runs the op's meta rule: no output-dtype function to register in autocast.
  CHECK(autocast::decide(DeviceType::CPU, proj, {{kFloat32, {2, 3}}, {kFloat32, {3, 4}}}, {}, st).output_dtype ==
        kFloat64);
  // An op without a meta rule cannot be predicted (nor run on meta tensors).
  CHECK(autocast::decide(DeviceType::CPU, solver, {{kFloat32, {2, 2}}, {kFloat32, {2, 2}}}, {}, st).output_dtype ==
        ScalarType::Undefined);
}

TEST_CASE("sensitive parameters keep their uses in float32", "[autocast]") {
  Tensor w = param({4, 4}, 11), x = data(kFloat32, {2, 4}, -1, 1, 12);
  autocast::mark_sensitive(w);
  CHECK(autocast::is_sensitive(w));
  autocast::Guard g(cpu_bf16());
  autocast::Explain ex;
  CHECK(mm(x, w).dtype() == kFloat32);
  CHECK(ex.records()[0].rule == Rule::SensitiveParam);
  CHECK(ex.casts() == 0);
}

TEST_CASE("lower_f32_out: bf16 operands, float32 accumulator kept", "[autocast]") {
  Tensor a = data(kFloat32, {3, 64}, -1, 1, 13), b = data(kFloat32, {64, 5}, -1, 1, 14);
  autocast::set_policy(DeviceType::CPU, OpId::mm, Policy::LowerF32Out);
  Tensor out;
  {
    autocast::Guard g(cpu_bf16());
    out = mm(a, b);
  }
  autocast::reset_policies();
  CHECK(out.dtype() == kFloat32);
  // Same as the f32 product of the bf16-rounded operands (no bf16 rounding of the sum).
  const auto want = values(mm(a.to(kBFloat16).to(kFloat32), b.to(kBFloat16).to(kFloat32)));
  const auto got = values(out);
  for (size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).epsilon(1e-5));
}

TEST_CASE("explain: rules, casts, cache hits, bytes, table and JSON", "[autocast][explain]") {
  autocast::clear_cache();
  Tensor w = param({4, 4}, 15), x = data(kFloat32, {2, 4}, -1, 1, 16);
  autocast::Explain ex;
  {
    autocast::Guard g(cpu_bf16());
    Tensor h = mm(x, w);
    mm(x, w);
    relu(h);
  }
  REQUIRE(ex.records().size() >= 3);
  const autocast::ExplainRecord& first = ex.records()[0];
  CHECK(first.op == "mm");
  CHECK(first.rule == Rule::Table);
  CHECK(first.policy == Policy::Lower);
  REQUIRE(first.casts.size() == 2);
  CHECK(first.casts[1].cached);
  CHECK_FALSE(first.casts[1].cache_hit);
  CHECK(first.casts[1].bytes == 32);
  CHECK(first.outputs == std::vector<ScalarType>{kBFloat16});
  CHECK(ex.cache_hits() == 1);
  CHECK(ex.bytes_cast() > 0);
  const std::string table = ex.table();
  CHECK_THAT(table, Contains("mm") && Contains("lower"));
  // The weight's first cast is stored in the cast cache and the second mm reuses it; the
  // activation is no parameter, so its casts bypass the cache.
  CHECK_THAT(table, Contains("in1:float32->bfloat16 (stored in cache, 32 B)") &&
                        Contains("in1:float32->bfloat16 (reused from cache)") &&
                        Contains("in0:float32->bfloat16 (16 B)"));
  CHECK_THAT(table, Contains("4 casts (1 stored in the cast cache, 1 reused from it), 64 bytes cast"));
  const std::string json = ex.json();
  CHECK_THAT(json, Contains("\"rule\": \"table\"") && Contains("\"cache_hit\": true"));
  // Ops before the guard (autocast off) are seen as pass-through.
  autocast::Explain ex2;
  mm(x, w);
  REQUIRE(ex2.records().size() == 1);
  CHECK(ex2.records()[0].rule == Rule::PassThrough);
}

TEST_CASE("docs/autocast.md documents every rule explain prints", "[autocast][explain][docs]") {
  std::ifstream in(std::string(MIXT_SOURCE_ROOT) + "/docs/autocast.md");
  std::stringstream page;
  page << in.rdbuf();
  // The table under "| rule | when |", up to the blank line that ends it.
  const size_t start = page.str().find("| rule | when |");
  REQUIRE(start != std::string::npos);
  const std::string table = page.str().substr(start, page.str().find("\n\n", start) - start);
  int rules = 0;
  for (int i = 0; rule_name(static_cast<Rule>(i)) != "?"; ++i, ++rules) {
    const std::string row = "| `" + std::string(rule_name(static_cast<Rule>(i))) + "` |";
    INFO(row);
    CHECK_THAT(table, Contains(row));
  }
  CHECK(rules == static_cast<int>(Rule::Banned) + 1);
}

TEST_CASE("banned op error text on CUDA tensors (decision) and CPU runs fp32", "[autocast]") {
  Tensor p = data(kFloat32, {4}, 0.1, 0.9, 17), t = data(kFloat32, {4}, 0, 1, 18);
  autocast::Guard g(cpu_bf16());
  CHECK(F::binary_cross_entropy(p.to(kBFloat16), t).dtype() == kFloat32);
}

TEST_CASE("frozen parameters read only through casts are stored in the low dtype", "[autocast][params]") {
  manual_seed(4);
  nn::Linear frozen(8, 8), head(8, 2);
  for (Tensor p : frozen.parameters()) p.set_requires_grad(false);
  Tensor x = data(kFloat32, {3, 8}, -1, 1, 19);
  auto forward = [&] {
    autocast::Guard g(cpu_bf16());
    return head.forward(frozen.forward(x));
  };
  const Tensor before = forward();
  autocast::Explain ex;
  ex.track(frozen.named_parameters());
  forward();
  CHECK(ex.parameter_uses()[0].low_uses == 1);  // the weight, read by linear through a cast down
  const int64_t saved = autocast::compact_frozen_parameters(ex);
  CHECK(saved == (8 * 8 + 8) * 2);
  CHECK(frozen.parameters()[0].dtype() == kBFloat16);
  CHECK_THAT(ex.parameter_table(), Contains("bfloat16"));
  CHECK(values(forward()) == values(before));  // the same bits from half the memory
  // A parameter also read in float32 stays float32.
  nn::Linear mixed(8, 8);
  for (Tensor p : mixed.parameters()) p.set_requires_grad(false);
  autocast::Explain ex2;
  ex2.track(mixed.named_parameters());
  {
    autocast::Guard g(cpu_bf16());
    mixed.forward(x);
    add(x, mixed.parameters()[1]);  // the bias read in float32
  }
  autocast::compact_frozen_parameters(ex2);
  CHECK(mixed.parameters()[1].dtype() == kFloat32);
  CHECK(mixed.parameters()[0].dtype() == kBFloat16);
}

TEST_CASE("a call is autocast once, by its tensors' device: a CPU scalar operand adds no CPU decision",
          "[autocast][rehearsal]") {
  // Note [One autocast per call]: a meta (or CUDA) op may take CPU scalars; the CPU's
  // autocast key they carry must not decide (nor record) the op a second time.
  const Tensor m = empty({2, 3}, {.device = Device::meta()});
  autocast::Explain ex;
  {
    autocast::Guard cuda({.device = DeviceType::CUDA, .dtype = kFloat16, .rehearse_on = Device::meta()});
    autocast::Guard cpu(cpu_bf16());  // the CPU's autocast is on as well
    CHECK(mul(m, 2.0).is_meta());     // 2.0: a wrapped CPU scalar
    CHECK(add(m, scalar_tensor(1.0, {.dtype = kFloat32, .device = Device::cpu()})).is_meta());  // a 0-dim CPU tensor
  }
  std::string table = ex.table();
  INFO(table);
  REQUIRE(ex.records().size() == 2);
  for (const auto& r : ex.records()) {
    CHECK(r.device == DeviceType::Meta);
    CHECK(r.policy_device == DeviceType::CUDA);
  }
  // A CPU tensor's op is still the CPU's, also when it writes to another device; and the
  // ops its body calls (the copy_ onto meta) are not decided again by meta's key.
  const Tensor one = ones({2});
  autocast::Explain ex2;
  {
    autocast::Guard cpu(cpu_bf16());
    CHECK(one.to(Device::meta()).is_meta());
  }
  table = ex2.table();
  INFO(table);
  REQUIRE(ex2.records().size() == 1);
  CHECK(ex2.records()[0].op == "to");
  CHECK(ex2.records()[0].device == DeviceType::CPU);
  CHECK(ex2.records()[0].output_device == DeviceType::Meta);
  CHECK_THAT(table, Contains("float32@meta"));
}

namespace {
// Which implementation of the test ops ran on CPU tensors: a backend kernel or the
// composite (autocast's output-dtype prediction runs the op on meta tensors too).
int g_kernel_runs = 0, g_composite_runs = 0;
// 2x, "fused": one step the autocast layer does not see into.
void twice_kernel(OpCall& c, DispatchKeySet) {
  g_kernel_runs += c.in[0].device().is_cpu();
  ExcludeKeysGuard unseen(kAutocastKeys);
  c.out[0] = mul(c.in[0], 2.0);
}
// 2x written in other ops.
void twice_composite(OpCall& c, DispatchKeySet) {
  g_composite_runs += c.in[0].device().is_cpu();
  c.out[0] = add(c.in[0], c.in[0]);
}
// An op whose composite's ops autocast sees (as cross_entropy's), with a composite and
// the given backend kernels.
OpId register_twice(const char* name, std::initializer_list<DispatchKey> kernels) {
  const OpId id = register_op(
      {.name = name, .min_inputs = 1, .max_inputs = 1, .outputs = 1, .flags = op_flags::AutocastDecomposes});
  for (DispatchKey k : kernels) register_kernel(id, k, twice_kernel);
  register_composite(id, twice_composite);
  return id;
}
Tensor call1(OpId id, const Tensor& a) {
  OpCall c(id);
  c.push(a);
  return call_op(c);
}
OpId g_twice_in_outer;
// A composite-only op that calls the op under test (below the autocast layer: its policy casts).
void outer_composite(OpCall& c, DispatchKeySet) { c.out[0] = call1(g_twice_in_outer, c.in[0]); }
}  // namespace

TEST_CASE("a rehearsal runs the composite where the rehearsed device has no kernel of its own",
          "[autocast][rehearsal][custom]") {
  // Note [Policy rehearsal]: CUDA's policy rehearsed on CPU tensors also runs what CUDA
  // runs. `twice` has a CPU kernel and a composite, no CUDA kernel: a GPU runs the composite.
  static const OpId twice = register_twice("test::twice_cpu_only", {DispatchKey::CPU});
  static const OpId everywhere = register_twice("test::twice_everywhere", {DispatchKey::CPU, DispatchKey::CUDA});
  static const OpId outer = [] {
    g_twice_in_outer = twice;
    const OpId id = register_op({.name = "test::twice_outer", .min_inputs = 1, .max_inputs = 1, .outputs = 1});
    register_composite(id, outer_composite);
    autocast::set_policy(DeviceType::CUDA, id, Policy::Fp32);  // cast, then run with the key excluded
    return id;
  }();
  const Tensor x = data(kFloat32, {2, 3}, -1, 1, 31);
  const std::vector<float> doubled = mul(x, 2.0).to_vector<float>();
  // Which implementation a call of `id` ran.
  auto ran = [&](OpId id, const Tensor& in) {
    g_kernel_runs = g_composite_runs = 0;
    const Tensor y = call1(id, in);
    CHECK(y.to_vector<float>() == doubled);
    return std::to_string(g_kernel_runs) + " kernel, " + std::to_string(g_composite_runs) + " composite";
  };
  const std::string kernel = "1 kernel, 0 composite", composite = "0 kernel, 1 composite";
  const autocast::Options cuda_on_cpu{.device = DeviceType::CUDA, .dtype = kFloat16, .rehearse_on = Device::cpu()};
  CHECK(ran(twice, x) == kernel);  // the CPU's own kernel
  {
    autocast::Guard g(cpu_bf16());
    CHECK(ran(twice, x) == kernel);  // the CPU's policy on the CPU: still its kernel
  }
  {
    autocast::Explain ex;
    {
      autocast::Guard g(cuda_on_cpu);
      CHECK(ran(twice, x) == composite);
    }
    // Explain shows what a GPU shows: the op, and its composite's add one level deeper.
    INFO(ex.table());
    REQUIRE(ex.records().size() == 2);
    CHECK(ex.records()[0].op == "test::twice_cpu_only");
    CHECK(ex.records()[1].op == "add");
    CHECK(ex.records()[1].depth == 1);
    CHECK(ex.records()[1].policy_device == DeviceType::CUDA);
  }
  {
    autocast::Guard g(cuda_on_cpu);
    CHECK(ran(everywhere, x) == kernel);  // CUDA has a kernel: the rehearsal runs the CPU's
    CHECK(ran(outer, x) == composite);    // inside another op, with the autocast key excluded
    {
      autocast::Disable off;
      CHECK(ran(twice, x) == composite);  // the kernels are the device's, whatever the policy does
    }
    {
      autocast::Guard off({.device = DeviceType::CUDA, .enabled = false, .rehearse_on = Device::cpu()});
      CHECK(ran(twice, x) == composite);
    }
    // Autograd goes through the composite too: the gradient flows through its add (the
    // op declares no derivative, so through the CPU kernel backward would raise).
    const Tensor leaf = x.clone().set_requires_grad(true);
    g_composite_runs = 0;
    sum(call1(twice, leaf)).backward();
    CHECK(g_composite_runs == 1);
    CHECK(leaf.grad().to_vector<float>() == std::vector<float>(6, 2.0f));
  }
  CHECK(ran(twice, x) == kernel);  // the guard gave the CPU its own kernels back
}

namespace {
// A backend's own cross_entropy ("fused": one kernel, nothing inside it autocast), here the
// composite's math run below the autocast layer.
void fused_cross_entropy(OpCall& c, DispatchKeySet keys) {
  ExcludeKeysGuard unseen(kAutocastKeys);
  op_entry(OpId::cross_entropy).composite(c, keys);
}
// Binds the fused kernel on the CPU and on CUDA while it lives (CUDA having a kernel, a rehearsal of
// CUDA runs the CPU's: Note [Rehearsed kernel choice]); both run the composite again after.
class FusedCrossEntropy {
 public:
  FusedCrossEntropy() { bind(fused_cross_entropy); }
  ~FusedCrossEntropy() { bind(nullptr); }
  FusedCrossEntropy(const FusedCrossEntropy&) = delete;
  FusedCrossEntropy& operator=(const FusedCrossEntropy&) = delete;

 private:
  static void bind(KernelFn fn) {
    for (DispatchKey k : {DispatchKey::CPU, DispatchKey::CUDA}) register_kernel(OpId::cross_entropy, k, fn);
  }
};
}  // namespace

TEST_CASE("cross_entropy under CUDA's policy returns float32, as PyTorch does, whichever backend runs it",
          "[autocast][rehearsal]") {
  // PyTorch's cross_entropy is log_softmax (fp32_set_opt_dtype) then nll_loss (fp32): under CUDA autocast
  // its loss is float32 from float16 or bfloat16 logits. decide(), a rehearsal on meta or on CPU tensors,
  // and a backend with a fused kernel all give that, computed from the logits in float32.
  const Tensor logits32 = data(kFloat32, {4, 5}, -3, 3, 41);
  const Tensor target = index_tensor({0, 4, 2, 1}, {4});
  const Tensor weight32 = data(kFloat32, {5}, 0.5, 2, 42);
  const Tensor probs32 = F::softmax(data(kFloat32, {4, 5}, -1, 1, 43), 1);
  for (ScalarType low : {kFloat16, kBFloat16}) {
    INFO(dtype_name(low));
    const Tensor logits = logits32.to(low), weight = weight32.to(low), probs = probs32.to(low);
    // What the loss is when computed in float32 from these logits, outside autocast.
    const float want = F::cross_entropy(logits.to(kFloat32), target).item<float>();
    const float want_weighted = F::cross_entropy(logits.to(kFloat32), target, weight.to(kFloat32)).item<float>();
    const float want_soft = F::cross_entropy(logits.to(kFloat32), probs.to(kFloat32)).item<float>();
    autocast::State st;
    st.enabled[static_cast<size_t>(DeviceType::CUDA)] = true;
    st.dtype[static_cast<size_t>(DeviceType::CUDA)] = low;
    CHECK(autocast::decide(DeviceType::CUDA, OpId::cross_entropy, {{low, {4, 5}}, {kInt64, {4}}}, {}, st)
              .output_dtype == kFloat32);
    {
      autocast::Guard g({.device = DeviceType::CUDA, .dtype = low, .rehearse_on = Device::meta()});
      CHECK(F::cross_entropy(logits.to(Device::meta()), target.to(Device::meta())).dtype() == kFloat32);
    }
    for (const bool fused : {false, true}) {
      INFO((fused ? "a fused kernel" : "the composite"));
      std::optional<FusedCrossEntropy> kernel;
      if (fused) kernel.emplace();
      autocast::Explain ex;  // the decision is recorded, and predicted, as it ran
      autocast::Guard g({.device = DeviceType::CUDA, .dtype = low, .rehearse_on = Device::cpu()});
      const Tensor loss = F::cross_entropy(logits, target);
      CHECK(loss.dtype() == kFloat32);
      CHECK(loss.item<float>() == want);  // nothing rounded to the low dtype on the way
      const Tensor weighted = F::cross_entropy(logits, target, weight);
      CHECK(weighted.dtype() == kFloat32);
      CHECK(weighted.item<float>() == want_weighted);
      const Tensor soft = F::cross_entropy(logits, probs);
      CHECK(soft.dtype() == kFloat32);
      CHECK(soft.item<float>() == want_soft);
      for (const auto& r : ex.records())
        if (r.depth == 0) CHECK(r.predicted == r.outputs.at(0));
    }
    // Outside autocast the loss keeps the logits' dtype (PyTorch's too); the CPU's table lists it fp32.
    CHECK(F::cross_entropy(logits, target).dtype() == low);
    autocast::Guard cpu({.device = DeviceType::CPU, .dtype = low});
    CHECK(F::cross_entropy(logits, target).dtype() == kFloat32);
  }
}

TEST_CASE("an autocast error names the tensors' device and the policy's, as explain does", "[autocast][rehearsal]") {
  // CUDA bans binary_cross_entropy. Rehearsed on meta or CPU tensors, the error says whose policy
  // refused it ("meta<cuda"), not only where the tensors live.
  for (const Device dev : {Device::meta(), Device::cpu()}) {
    const Tensor p = data(kFloat32, {4}, 0.1, 0.9, 44).to(dev), t = data(kFloat32, {4}, 0, 1, 45).to(dev);
    autocast::Guard g({.device = DeviceType::CUDA, .dtype = kFloat16, .rehearse_on = dev});
    const std::string e = error_of([&] { F::binary_cross_entropy(p, t); });
    INFO(e);
    CHECK_THAT(e, Contains("binary_cross_entropy_with_logits"));
    CHECK_THAT(e, Contains(std::string("autocast on ") + std::string(device_type_name(dev.type())) + "<cuda"));
  }
  // Without a rehearsal the device is the policy's.
  autocast::set_policy(DeviceType::CPU, OpId::binary_cross_entropy, Policy::Banned);
  const Tensor p = data(kFloat32, {4}, 0.1, 0.9, 44);
  std::string e;
  {
    autocast::Guard g(cpu_bf16());
    e = error_of([&] { F::binary_cross_entropy(p, p); });
  }
  autocast::reset_policies();
  INFO(e);
  CHECK_THAT(e, Contains("(autocast on cpu)"));
}

// Note [Plan memo]: the kernel reuses the last plan of a thread for a call of the same key.
// Each step below repeats one call right after a change the plan depends on (the state, a
// scope, the policy table, an input's dtype, device role or sensitivity, the dtype
// attribute), so a memo keyed on too little would return the previous step's dtype.
TEST_CASE("a repeated call is planned again whenever what its plan reads changes", "[autocast][memo]") {
  const Tensor x = data(kFloat32, {2, 4}, -1, 1, 31), w = param({4, 3}, 32), y = data(kFloat32, {4, 3}, -1, 1, 33);
  const Tensor x16 = x.to(kFloat16), x64 = x.to(kFloat64);
  CHECK(mm(x, y).dtype() == kFloat32);  // autocast off
  autocast::Guard g(cpu_bf16());
  CHECK(mm(x, y).dtype() == kBFloat16);
  CHECK(mm(x, y).dtype() == kBFloat16);  // the memo's hit
  {
    autocast::Island island;
    CHECK(mm(x, y).dtype() == kFloat32);
    autocast::Region region(kFloat16);
    CHECK(mm(x, y).dtype() == kFloat16);
  }
  CHECK(mm(x, y).dtype() == kBFloat16);
  {
    autocast::Guard f16({.device = DeviceType::CPU, .dtype = kFloat16});
    CHECK(mm(x, y).dtype() == kFloat16);
    autocast::Guard off({.device = DeviceType::CPU, .enabled = false});
    CHECK(mm(x, y).dtype() == kFloat32);
  }
  CHECK(mm(x, y).dtype() == kBFloat16);
  autocast::set_policy(DeviceType::CPU, OpId::mm, Policy::Fp32);
  CHECK(mm(x16, y).dtype() == kFloat32);
  autocast::set_policy(DeviceType::CPU, OpId::mm, Policy::LowerF32Out);
  CHECK(mm(x16, y).dtype() == kFloat32);
  CHECK(mm(x16, y, kBFloat16).dtype() == kBFloat16);  // the dtype attribute is part of the key
  autocast::reset_policies();
  CHECK(mm(x16, y).dtype() == kBFloat16);
  CHECK(mm(x64, x64.t()).dtype() == kFloat64);  // float64 is not eligible
  CHECK(mm(x, w).dtype() == kBFloat16);
  autocast::mark_sensitive(w);
  CHECK(mm(x, w).dtype() == kFloat32);  // same dtypes, now a sensitive input
  CHECK(mm(x, y).dtype() == kBFloat16);
  // Another thread has its own memo and state.
  ScalarType other = ScalarType::Undefined;
  std::thread([&] { other = mm(x, y).dtype(); }).join();
  CHECK(other == kFloat32);
}
