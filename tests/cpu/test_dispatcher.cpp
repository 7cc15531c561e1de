// The dispatcher: key sets, TLS guards, the op table, custom ops registered
// through the public API, redispatch, fallthrough and its errors.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include <mixt/dispatcher/op_check.h>
#include <mixt/mixt.h>

using namespace mixt;

namespace {

std::vector<std::string> g_trace;

// CPU kernel of the custom op "test::scale2": out = 2 * in (float32 only).
void scale2_cpu(OpCall& c, DispatchKeySet) {
  g_trace.push_back("cpu");
  MIXT_CHECK_OP(c.in[0].dtype() == kFloat32, c, "float32 only");
  Tensor x = c.in[0].contiguous();
  Tensor out = make_empty(x.sizes(), kFloat32, x.device());
  for (int64_t i = 0; i < x.numel(); ++i) out.data_ptr<float>()[i] = 2 * x.data_ptr<float>()[i];
  c.out[0] = out;
}

// A layer above the backend: records, then hands the call down.
void scale2_autograd(OpCall& c, DispatchKeySet ks) {
  g_trace.push_back("autograd");
  redispatch(c, ks, DispatchKey::Autograd);
}

void scale2_autocast(OpCall& c, DispatchKeySet ks) {
  g_trace.push_back("autocast");
  redispatch(c, ks, DispatchKey::AutocastCPU);
}

OpId scale2_op() {
  static OpId id = [] {
    OpId op = register_op({.name = "test::scale2", .min_inputs = 1, .max_inputs = 1, .outputs = 1});
    register_kernel(op, DispatchKey::CPU, scale2_cpu);
    return op;
  }();
  return id;
}

Tensor scale2(const Tensor& t) {
  OpCall c(scale2_op());
  c.push(t);
  return call_op(c);
}

}  // namespace

TEST_CASE("key sets", "[dispatcher]") {
  DispatchKeySet s = DispatchKeySet(DispatchKey::CPU) | DispatchKey::Autograd;
  CHECK(s.has(DispatchKey::CPU));
  CHECK_FALSE(s.has(DispatchKey::CUDA));
  CHECK(s.highest() == DispatchKey::Autograd);
  CHECK((s - DispatchKey::Autograd).highest() == DispatchKey::CPU);
  CHECK(DispatchKeySet::below(DispatchKey::Autograd).has(DispatchKey::CUDA));
  CHECK_FALSE(DispatchKeySet::below(DispatchKey::Autograd).has(DispatchKey::Autograd));
  Tensor t = zeros({2});
  CHECK(t.impl()->keys == (DispatchKeySet(DispatchKey::CPU) | DispatchKey::Autograd | DispatchKey::AutocastCPU));
  CHECK(tensor_keys_for(Device::cuda(0)).has(DispatchKey::AutocastCUDA));
}

TEST_CASE("thread-local guards nest and restore", "[dispatcher]") {
  const LocalDispatchKeys before = tls_dispatch_keys;
  CHECK(before.excluded.has(DispatchKey::AutocastCPU));  // autocast starts off
  {
    UnexcludeKeysGuard on(DispatchKey::AutocastCPU);
    CHECK_FALSE(tls_dispatch_keys.excluded.has(DispatchKey::AutocastCPU));
    {
      ExcludeKeysGuard off(DispatchKey::AutocastCPU);
      CHECK(tls_dispatch_keys.excluded.has(DispatchKey::AutocastCPU));
    }
    CHECK_FALSE(tls_dispatch_keys.excluded.has(DispatchKey::AutocastCPU));
    IncludeKeysGuard inc(DispatchKey::Autograd);
    CHECK(tls_dispatch_keys.included.has(DispatchKey::Autograd));
  }
  CHECK(tls_dispatch_keys.excluded == before.excluded);
  CHECK(tls_dispatch_keys.included == before.included);
}

TEST_CASE("the op table declares every op once", "[dispatcher]") {
  CHECK(num_ops() >= kNumBuiltinOps);
  for (int i = 0; i < kNumBuiltinOps; ++i) {
    const auto id = static_cast<OpId>(i);
    CHECK(find_op(op_name(id)) == id);
  }
  CHECK(op_name(OpId::add) == "add");
  CHECK(op_entry(OpId::add_).has(op_flags::Inplace));
  CHECK(op_entry(OpId::view).has(op_flags::View));
  CHECK(op_entry(OpId::cat).has(op_flags::List));
  CHECK(op_entry(OpId::max).schema.outputs == 2);
  CHECK_THROWS_AS(find_op("no_such_op"), Error);
}

TEST_CASE("a custom op registers and dispatches like a built-in", "[dispatcher]") {
  g_trace.clear();
  Tensor y = scale2(from_vector(std::vector<float>{1, 2, 3}));
  CHECK(y.to_vector<float>() == std::vector<float>{2, 4, 6});
  CHECK(g_trace == std::vector<std::string>{"cpu"});
  CHECK(find_op("test::scale2") == scale2_op());
  CHECK(op_entry(scale2_op()).has(op_flags::Custom));
  CHECK_THROWS_AS(register_op({.name = "test::scale2", .min_inputs = 1, .max_inputs = 1}), Error);
  CHECK_THROWS_AS(register_op({.name = "test::too_many", .min_inputs = 1, .max_inputs = 9}), Error);
  CHECK_THROWS_WITH(scale2(from_vector(std::vector<double>{1})), Catch::Contains("test::scale2") &&
                                                                   Catch::Contains("float32 only") &&
                                                                   Catch::Contains("float64[1] cpu"));
}

TEST_CASE("higher keys run first and redispatch below; excluded keys fall through", "[dispatcher]") {
  const OpId op = scale2_op();
  register_kernel(op, DispatchKey::Autograd, scale2_autograd);
  register_kernel(op, DispatchKey::AutocastCPU, scale2_autocast);
  Tensor x = from_vector(std::vector<float>{1});

  g_trace.clear();
  scale2(x);  // AutocastCPU is excluded by default
  CHECK(g_trace == std::vector<std::string>{"autograd", "cpu"});

  g_trace.clear();
  {
    UnexcludeKeysGuard autocast_on(DispatchKey::AutocastCPU);
    scale2(x);
  }
  CHECK(g_trace == std::vector<std::string>{"autocast", "autograd", "cpu"});

  g_trace.clear();
  {
    ExcludeKeysGuard no_autograd(DispatchKey::Autograd);
    scale2(x);
  }
  CHECK(g_trace == std::vector<std::string>{"cpu"});

  register_kernel(op, DispatchKey::Autograd, nullptr);
  register_kernel(op, DispatchKey::AutocastCPU, nullptr);
  g_trace.clear();
  scale2(x);
  CHECK(g_trace == std::vector<std::string>{"cpu"});
}

TEST_CASE("dispatch errors: missing kernels and bad arity", "[dispatcher]") {
  const OpId bare = register_op({.name = "test::no_kernels", .min_inputs = 1, .max_inputs = 2});
  OpCall c(bare);
  c.push(zeros({2}));
  CHECK_THROWS_WITH(dispatch(c), Catch::Contains("test::no_kernels") && Catch::Contains("CPU"));
  OpCall none(bare);
  CHECK_THROWS_WITH(dispatch(none), Catch::Contains("takes 1 to 2 inputs"));
  // A fixed arity reads as one count, in the singular where it is one.
  OpCall no_input(OpId::neg);
  CHECK_THROWS_WITH(dispatch(no_input), Catch::Contains("takes 1 input, got 0"));
  OpCall one_input(OpId::add);
  one_input.push(zeros({2}));
  CHECK_THROWS_WITH(dispatch(one_input), Catch::Contains("takes 2 inputs, got 1"));
  CHECK_THROWS_WITH(zeros({2}).sum({1}), Catch::Contains("out of range for a tensor of 1 dimension "));
  OpCall undefined_input(bare);
  undefined_input.push(Tensor());
  CHECK_THROWS_WITH(dispatch(undefined_input), Catch::Contains("input 0 is undefined"));
  OpCall full(bare);
  for (int i = 0; i < kMaxInputs; ++i) full.push(zeros({1}));
  CHECK_THROWS_AS(full.push(zeros({1})), Error);
}

TEST_CASE("an application can replace a built-in kernel", "[dispatcher]") {
  static int calls = 0;
  const KernelFn original = op_entry(OpId::clone).kernels[static_cast<int>(DispatchKey::CPU)];
  REQUIRE(original != nullptr);
  register_kernel(OpId::clone, DispatchKey::CPU, [](OpCall& c, DispatchKeySet ks) {
    ++calls;
    op_entry(OpId::clone).kernels[static_cast<int>(DispatchKey::CUDA)](c, ks);  // the shared kernel
  });
  Tensor y = clone(from_vector(std::vector<float>{1, 2}));
  register_kernel(OpId::clone, DispatchKey::CPU, original);
  CHECK(calls == 1);
  CHECK(y.to_vector<float>() == std::vector<float>{1, 2});
}

namespace {
// The dispatcher entries `f` makes on this thread (Note [Dispatch counters]).
template <class F>
DispatchCounts entries_of(F&& f) {
  const DispatchCounts before = dispatch_counts();
  f();
  return dispatch_counts() - before;
}

// A float32 parameter: a leaf that requires grad (what autocast's cast cache keeps).
Tensor parameter(const Shape& shape) {
  Tensor p = randn(shape);
  p.set_requires_grad(true);
  return p;
}
}  // namespace

// Note [Kernels do not re-enter the dispatcher]: a front end dispatches once, each layer
// hands the call down once, and the backend kernel does its own casts and copies.
TEST_CASE("hot ops enter the dispatcher once and redispatch once per layer", "[dispatcher][counts]") {
  const Tensor a = randn({4, 4}), b = randn({4, 4});
  struct Case {
    const char* what;
    std::function<void()> run;
  };
  // Operands are made beforehand: views (transpose, unsqueeze) are ops too.
  const Tensor ints = arange(0, 16).reshape({4, 4}), half = a.to(kBFloat16), wide = b.to(kFloat64);
  const Tensor at = a.transpose(0, 1), a3 = a.unsqueeze(0), b3 = b.unsqueeze(0), bias = half.select(0, 0);
  Tensor acc = a.clone();
  const Case cases[] = {
      {"mm f32", [&] { mm(a, b); }},
      {"mm bf16 (widened to f32 inside)", [&] { mm(half, half); }},
      {"mm of a transposed operand", [&] { mm(at, b); }},
      {"addmm", [&] { addmm(a, a, b); }},
      {"bmm", [&] { bmm(a3, b3); }},
      {"linear bf16 with bias", [&] { nn::functional::linear(half, half, bias); }},
      {"add int64 + f32 (promotion)", [&] { add(ints, a); }},
      {"add_ f32 += f64 (written through a temporary)", [&] { acc.add_(wide); }},
      {"sum with dtype f64", [&] { sum(a, {}, false, kFloat64); }},
      {"sum bf16", [&] { sum(half); }},
      {"to bf16", [&] { a.to(kBFloat16); }},
      {"contiguous of a transpose", [&] { at.contiguous(); }},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const DispatchCounts n = entries_of(c.run);
    CHECK(n.dispatches == 1);
    CHECK(n.redispatches == 1);
  }
}

TEST_CASE("mm under CPU bfloat16 autocast: entries with a cast-cache miss and a hit", "[dispatcher][counts]") {
  const Tensor w1 = parameter({4, 4}), w2 = parameter({4, 4});
  autocast::Guard g({.device = DeviceType::CPU, .dtype = kBFloat16});
  // Miss: mm enters autocast; each parameter's cast is one `to` (through autograd, which
  // records it); autocast hands the cast operands' mm down its key set (no second entry)
  // and autograd hands it to the CPU.
  const DispatchCounts miss = entries_of([&] { mm(w1, w2); });
  CHECK(miss.dispatches == 3);
  CHECK(miss.redispatches == 4);
  // Hit: the casts come from the cache.
  const DispatchCounts hit = entries_of([&] { mm(w1, w2); });
  CHECK(hit.dispatches == 1);
  CHECK(hit.redispatches == 2);
  CHECK(autocast::cache_stats().hits == 2);
}

namespace {
// The lines, as "file: line", of the sources under `dir` (but not the files or folders of
// `skip`) for which `keep` holds. Paths are relative to the source root.
std::vector<std::string> lines_of(const std::string& dir, const std::function<bool(const std::string&)>& keep,
                                  std::initializer_list<const char*> skip = {}) {
  namespace fs = std::filesystem;
  std::vector<std::string> found;
  for (const auto& f : fs::recursive_directory_iterator(fs::path(MIXT_SOURCE_ROOT) / dir)) {
    if (!f.is_regular_file()) continue;
    const std::string file = fs::relative(f.path(), MIXT_SOURCE_ROOT).string();
    bool skipped = false;
    for (const char* s : skip) skipped = skipped || file == s || file.rfind(std::string(s) + "/", 0) == 0;
    if (skipped) continue;
    std::ifstream in(f.path());
    std::string line;
    while (std::getline(in, line))
      if (keep(line)) found.push_back(file + ": " + line);
  }
  return found;
}

// The `#include <mixt/...>` lines of the sources under `dir` that name a header under one of `banned`.
std::vector<std::string> includes_of(const std::string& dir, std::initializer_list<const char*> banned) {
  return lines_of(dir, [&](const std::string& line) {
    for (const char* b : banned)
      if (line.rfind("#include <mixt/" + std::string(b), 0) == 0) return true;
    return false;
  });
}

// A front end's marks: an OpCall built for a named op, or the call it built handed to the
// dispatcher through call_op / call_inplace (which dispatcher/dispatch.h defines).
bool front_end_line(const std::string& line) {
  static const std::regex mark(R"(\bOpCall\s+\w+\s*[({]\s*OpId::|\b(call_op|call_inplace)\s*\()");
  return (line.find("OpCall") != std::string::npos || line.find("call_") != std::string::npos) &&
         std::regex_search(line, mark);
}
}  // namespace

// Note [Layering]: each layer includes only the layers below it.
TEST_CASE("layers include only what lies below them", "[dispatcher][layering]") {
  using V = std::vector<std::string>;
  CHECK(includes_of("dispatcher", {"runtime/autograd/", "autocast/", "amp/", "kernels/cpu/", "kernels/cuda/"}) == V{});
  CHECK(includes_of("kernels/cuda", {"kernels/cpu/"}) == V{});
  CHECK(includes_of("kernels/cpu", {"kernels/cuda/", "autocast/", "amp/"}) == V{});
  CHECK(includes_of("kernels/common", {"kernels/cpu/", "kernels/cuda/", "autocast/", "amp/"}) == V{});
  CHECK(includes_of("runtime/autograd", {"autocast/", "amp/"}) == V{});
}

// Note [Layering]: every built-in front end lives in runtime/ops, whatever its namespace.
TEST_CASE("front ends live only in runtime/ops", "[dispatcher][layering]") {
  using V = std::vector<std::string>;
  for (const char* dir : {"amp", "autocast", "dispatcher", "distributed", "kernels", "runtime"}) {
    INFO(dir);
    // The GEMM engine's epilogue entry points (linear + activation, the DGELU backward) are no
    // op's front end: they build an OpCall only to reuse linear's and mm's checks and plans,
    // and run the engine without dispatching.
    CHECK(lines_of(dir, front_end_line, {"runtime/ops", "dispatcher/dispatch.h", "kernels/cuda/gemm/matmul.cpp"}) == V{});
  }
  // The marks are found where the front ends are: the tensor math, nn, amp and optim ones.
  const V here = lines_of("runtime/ops", front_end_line);
  for (const char* file : {"runtime/ops/elementwise.cpp", "runtime/ops/nn.cpp", "runtime/ops/amp.cpp",
                           "runtime/ops/optim.cpp"}) {
    INFO(file);
    CHECK(std::any_of(here.begin(), here.end(), [&](const std::string& l) { return l.rfind(file, 0) == 0; }));
  }
}
