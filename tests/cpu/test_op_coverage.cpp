// The op-coverage harness: every op in the op table has cases; every case runs
// on the CPU (CUDA: tests/cuda/test_cuda_coverage.cpp), on each declared dtype, against an independent
// double reference within a tolerance in ulps (Note [Tolerances in ulps]);
// undeclared dtypes raise mixt::Error; kernel holes are declared;
// docs/op_support.md matches the table (its summary: the ops by family, and PyTorch's
// autocast-list ops mixt has); and the harness rejects wrong results.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>

#include "op_cases.h"
#include "op_support_summary.h"
#include "pytorch_autocast_lists.h"

using namespace mixt;
using namespace mixt::testing;

namespace {
std::vector<ScalarType> kFloatingTypes() {
  return {kFloat64, kFloat32, kFloat16, kBFloat16, kFloat8_e4m3fn, kFloat8_e5m2};
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += "\n  " + x;
  return s;
}
}  // namespace

TEST_CASE("every op in the op table has at least one case", "[coverage]") {
  std::set<int> covered;
  for (const OpCase& c : op_cases()) covered.insert(static_cast<int>(c.op));
  std::vector<std::string> missing;
  for (int i = 0; i < kNumBuiltinOps; ++i)
    if (!covered.count(i)) missing.push_back(std::string(op_name(static_cast<OpId>(i))));
  INFO("ops without a case:" << join(missing));
  CHECK(missing.empty());
  std::set<std::string> labels;
  for (const OpCase& c : op_cases()) {
    INFO(c.label);
    CHECK(labels.insert(c.label).second);
  }
}

TEST_CASE("every op has a CPU kernel; CUDA kernels match the declared holes", "[coverage]") {
  std::vector<std::string> problems;
  std::vector<uint32_t> cuda_declared(kNumBuiltinOps, 0);
  for (const OpCase& c : op_cases()) cuda_declared[static_cast<int>(c.op)] |= c.cuda_dtypes;
  for (int i = 0; i < kNumBuiltinOps; ++i) {
    const OpEntry& e = op_entry(static_cast<OpId>(i));
    if (!e.mask.has(DispatchKey::CPU)) problems.push_back(std::string(e.schema.name) + ": no CPU kernel");
    if (!cuda::is_compiled()) continue;
    // A composite op's kernel serves every backend: it runs on CUDA through its inner ops.
    const bool runs_on_cuda = e.mask.has(DispatchKey::CUDA) || e.has(op_flags::Composite);
    if (runs_on_cuda != (cuda_declared[i] != 0))
      problems.push_back(std::string(e.schema.name) +
                         (cuda_declared[i] ? ": CUDA dtypes declared but no CUDA kernel"
                                           : ": runs on CUDA but the case table declares a hole"));
  }
  INFO("holes:" << join(problems));
  CHECK(problems.empty());
}

TEST_CASE("every op has CUDA dtypes, as docs/cuda.md's status says", "[coverage]") {
  // docs/cuda.md, Status: every op of the table has a CUDA kernel or a composite that
  // runs on CUDA (tests/docs_cuda_status.py checks the status line against op_support.md).
  std::vector<uint32_t> cuda_declared(kNumBuiltinOps, 0);
  for (const OpCase& c : op_cases()) cuda_declared[static_cast<int>(c.op)] |= c.cuda_dtypes;
  std::vector<std::string> holes;
  for (int i = 0; i < kNumBuiltinOps; ++i)
    if (cuda_declared[i] == 0) holes.push_back(std::string(op_name(static_cast<OpId>(i))));
  INFO("ops without CUDA dtypes:" << join(holes));
  CHECK(holes.empty());
  const std::string md = op_support_markdown();
  CHECK(md.find("Every op runs on CUDA") != std::string::npos);
  CHECK(md.find("| — |\n") == std::string::npos);
}

TEST_CASE("CPU: every case on every declared dtype matches its independent reference", "[coverage]") {
  std::vector<std::string> failures;
  int runs = 0;
  for (const OpCase& c : op_cases()) {
    for (int d = 0; d < kNumDtypes; ++d) {
      const auto dt = static_cast<ScalarType>(d);
      if (!dtypes::contains(c.cpu_dtypes, dt)) continue;
      ++runs;
      const std::string r = run_case(c, dt, Device::cpu());
      if (!r.empty()) failures.push_back(r);
    }
  }
  INFO(runs << " runs; failures:" << join(failures));
  CHECK(failures.empty());
  CHECK(runs > 500);
}

TEST_CASE("CPU: dtypes a case does not declare raise mixt::Error", "[coverage]") {
  std::vector<std::string> failures;
  for (const OpCase& c : op_cases()) {
    for (int d = 0; d < kNumDtypes; ++d) {
      const auto dt = static_cast<ScalarType>(d);
      if (dtypes::contains(c.cpu_dtypes, dt)) continue;
      try {
        CaseInputs in = c.make(dt);
        c.run(in.in, dt, Device::cpu());
        failures.push_back(c.label + " [" + std::string(dtype_name(dt)) + "]: runs but is not declared");
      } catch (const Error&) {
        // expected
      } catch (const std::exception& e) {
        failures.push_back(c.label + " [" + std::string(dtype_name(dt)) + "]: not a mixt::Error: " + e.what());
      }
    }
  }
  INFO("failures:" << join(failures));
  CHECK(failures.empty());
}

TEST_CASE("docs/op_support.md is generated from the table", "[coverage][docs]") {
  const std::string md = op_support_markdown();
  const std::string path = std::string(MIXT_SOURCE_ROOT) + "/docs/op_support.md";
  if (const char* update = std::getenv("MIXT_UPDATE_DOCS"); update && std::string(update) == "1") {
    std::ofstream(path) << md;
    WARN("wrote " << path);
  }
  std::ifstream in(path);
  std::stringstream have;
  have << in.rdbuf();
  INFO("docs/op_support.md is stale: run MIXT_UPDATE_DOCS=1 on test_op_coverage and commit the file");
  CHECK(have.str() == md);
}

TEST_CASE("the summary's families cover the op table in its order", "[coverage][docs]") {
  const std::vector<int> family = family_of_each_op();
  std::vector<int> ops_per_family(op_families().size(), 0);
  for (int i = 0; i < kNumBuiltinOps; ++i) {
    INFO(op_name(static_cast<OpId>(i)));
    REQUIRE(family[i] >= 0);
    if (i > 0) CHECK(family[i] >= family[i - 1]);
    ++ops_per_family[static_cast<size_t>(family[i])];
  }
  for (size_t f = 0; f < ops_per_family.size(); ++f) {
    INFO(op_families()[f].name);
    CHECK(ops_per_family[f] > 0);
    CHECK(op_support_markdown().find("| " + std::string(op_families()[f].name) + " | " +
                                     std::to_string(ops_per_family[f]) + " |") != std::string::npos);
  }
  CHECK(op_support_markdown().find("| **all** | " + std::to_string(kNumBuiltinOps) + " |") != std::string::npos);
  // A family that starts before the previous one, or at no op, is refused.
  CHECK_THROWS_AS(family_of_each_op({{"a", "empty"}, {"b", "add"}, {"c", "view"}}), Error);
  CHECK_THROWS_AS(family_of_each_op({{"a", "view"}}), Error);
  CHECK_THROWS_AS(family_of_each_op({{"a", "empty"}, {"b", "no_such_op"}}), Error);
}

TEST_CASE("PyTorch's autocast lists: each op is a mixt op or says why mixt has none", "[coverage][autocast]") {
  std::map<std::string, std::string> mixt_op_of;  // PyTorch's name -> mixt op ("" none), across both lists
  std::vector<std::string> problems;
  for (DeviceType device : {DeviceType::CUDA, DeviceType::CPU}) {
    std::set<std::string> names;
    for (const ListedOp& e : pytorch_autocast_list(device)) {
      const std::string where = std::string(device_type_name(device)) + " " + e.aten;
      if (!names.insert(e.aten).second) problems.push_back(where + ": listed twice");
      if (e.mixt_op != nullptr && !has_op(e.mixt_op)) problems.push_back(where + ": no mixt op " + e.mixt_op);
      if (e.mixt_op != nullptr && e.reason != nullptr) problems.push_back(where + ": a mixt op and a reason");
      if (e.mixt_op == nullptr && (e.reason == nullptr || std::string(e.reason).empty()))
        problems.push_back(where + ": no mixt op and no reason");
      const std::string mapped = e.mixt_op ? e.mixt_op : "";
      if (!mixt_op_of.emplace(e.aten, mapped).second && mixt_op_of[e.aten] != mapped)
        problems.push_back(where + ": mapped otherwise on the other list");
    }
    CHECK_NOTHROW(policies_from_pytorch_list(device));  // no mixt op takes two policies from one list
  }
  INFO("problems:" << join(problems));
  CHECK(problems.empty());
  for (const auto& [aten, mixt_op] : mixt_op_of)
    if (!mixt_op.empty()) CHECK_NOTHROW(find_op(mixt_op));
}

TEST_CASE("the summary counts PyTorch's autocast-list ops and lists the absent ones", "[coverage][docs][autocast]") {
  const AutocastCoverage c = autocast_list_coverage();
  CHECK(c.cuda.listed == static_cast<int>(pytorch_autocast_list(DeviceType::CUDA).size()));
  CHECK(c.cpu.listed == static_cast<int>(pytorch_autocast_list(DeviceType::CPU).size()));
  CHECK(c.all.listed >= std::max(c.cuda.listed, c.cpu.listed));
  CHECK(c.all.listed < c.cuda.listed + c.cpu.listed);  // some ops are on both lists
  std::set<std::string> present, absent;
  for (DeviceType device : {DeviceType::CUDA, DeviceType::CPU})
    for (const ListedOp& e : pytorch_autocast_list(device)) (e.mixt_op ? present : absent).insert(e.aten);
  CHECK(c.all.present == static_cast<int>(present.size()));
  CHECK(c.all.listed == static_cast<int>(present.size() + absent.size()));
  const std::string md = op_support_markdown();
  const size_t section = md.find("### PyTorch's autocast lists"), end = md.find("## Per op");
  REQUIRE(section < end);
  const std::string lists = md.substr(section, end - section);
  std::ostringstream headline;
  headline << "**" << c.all.present << " of " << c.all.listed << " listed ops present** (CUDA list: " << c.cuda.present
           << " of " << c.cuda.listed << ", CPU list: " << c.cpu.present << " of " << c.cpu.listed << ")";
  CHECK(lists.find(headline.str()) != std::string::npos);
  // The table of absent ones names exactly the absent ops (its second column).
  std::set<std::string> tabled;
  std::istringstream rows(lists.substr(lists.find("|---|")));
  std::string row;
  std::getline(rows, row);
  while (std::getline(rows, row) && row.rfind("| ", 0) == 0) {
    const size_t from = row.find(" | ") + 3, to = row.find(" | ", from);
    const std::string ops = row.substr(from, to - from);
    for (size_t open = ops.find('`'); open != std::string::npos; open = ops.find('`', ops.find('`', open + 1) + 1))
      tabled.insert(ops.substr(open + 1, ops.find('`', open + 1) - open - 1));
  }
  CHECK(tabled == absent);
}

namespace {

// A copy of the case labelled `label` whose run is replaced by `run`.
OpCase broken(const std::string& label, std::function<Tensor(const std::vector<Tensor>&, ScalarType, Device)> run) {
  for (const OpCase& c : op_cases())
    if (c.label == label) {
      OpCase b = c;
      b.run = std::move(run);
      return b;
    }
  FAIL("no case " << label);
  return {};
}

// Two fused Adam steps as the adam_step_ case runs them, with the learning rate `lr`.
Tensor two_adam_steps(const std::vector<Tensor>& in, double lr) {
  const Tensor p = in[0].clone(), g = in[1];
  const ScalarType work = p.dtype() == kFloat64 ? kFloat64 : kFloat32;
  const Tensor m = zeros(p.sizes(), {.dtype = work}), v = zeros(p.sizes(), {.dtype = work});
  const Tensor step = zeros({}, {.dtype = kFloat32}), found = zeros({}, {.dtype = kFloat32});
  for (int i = 0; i < 2; ++i)
    optim::fused::adam_step_({{p}}, {{g}}, {{m}}, {{v}}, {}, {{step}}, found, {.lr = lr, .weight_decay = 0.1});
  return p;
}

}  // namespace

TEST_CASE("the harness rejects wrong results it used to accept", "[coverage]") {
  SECTION("a sign error on small outputs, float8 included") {
    // tanh of small inputs, negated.
    OpCase c = broken("tanh", [](const std::vector<Tensor>& in, ScalarType, Device) { return neg(tanh(in[0])); });
    c.make = [](ScalarType dt) { return CaseInputs{{from_vector(std::vector<double>{0.06, -0.05, 0.03, 0.02}).to(dt)}, 1}; };
    for (ScalarType dt : kFloatingTypes()) {
      INFO(dtype_name(dt));
      CHECK(run_case(c, dt, Device::cpu()).find("element 0") != std::string::npos);
    }
    // The former rule, |got - ref| <= tol (|ref| + 1) with tol = 1/8 for float8_e4m3fn, accepted them all.
    const Tensor x = c.make(kFloat8_e4m3fn).in[0];
    const std::vector<double> got = c.run({x}, kFloat8_e4m3fn, Device::cpu()).to_vector<double>();
    const std::vector<double> want = tanh(x).to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i) CHECK(std::abs(got[i] - want[i]) <= 0.125 * (std::abs(want[i]) + 1));
  }
  SECTION("a formula bug shared by every dtype, float64 included") {
    // exp off by one part in 10^12: the former float64 reference (the op itself) could not see it.
    OpCase c = broken("exp", [](const std::vector<Tensor>& in, ScalarType, Device) { return mul(exp(in[0]), 1 + 1e-12); });
    CHECK_FALSE(run_case(c, kFloat64, Device::cpu()).empty());
    CHECK(run_case(broken("exp", [](const std::vector<Tensor>& in, ScalarType, Device) { return exp(in[0]); }), kFloat64,
                   Device::cpu())
              .empty());
  }
  SECTION("a fused bfloat16 or float16 Adam step off by 40% of its update") {
    for (double lr : {0.07, 0.03}) {
      const OpCase c = broken("adam_step_", [lr](const std::vector<Tensor>& in, ScalarType, Device) {
        return two_adam_steps(in, lr);
      });
      for (ScalarType dt : {kBFloat16, kFloat16, kFloat32}) {
        INFO(dtype_name(dt) << " lr " << lr);
        CHECK_FALSE(run_case(c, dt, Device::cpu()).empty());
      }
    }
    // The same steps at the case's own learning rate pass.
    const OpCase same = broken("adam_step_", [](const std::vector<Tensor>& in, ScalarType, Device) {
      return two_adam_steps(in, 0.05);
    });
    CHECK(run_case(same, kBFloat16, Device::cpu()).empty());
  }
  SECTION("a result off by one ulp where the op is exact") {
    OpCase c = broken("mul", [](const std::vector<Tensor>& in, ScalarType, Device) {
      const Tensor r = mul(in[0], in[1]).to(kFloat64);
      return add(r, mul(abs(r), 0x1p-23)).to(kFloat32);  // about one float32 ulp up
    });
    CHECK_FALSE(run_case(c, kFloat32, Device::cpu()).empty());
  }
}
