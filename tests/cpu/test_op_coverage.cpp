// The op-coverage harness: every op in the op table has cases; every case runs
// on every backend present, on each declared dtype, against a float64 CPU
// reference; undeclared dtypes raise mixt::Error; kernel holes are declared;
// docs/op_support.md matches the table.
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include <catch2/catch.hpp>

#include "op_cases.h"

using namespace mixt;
using namespace mixt::testing;

namespace {
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
    // A composite op's kernel serves every backend; what it supports follows the ops it calls.
    if (cuda::is_compiled() && !e.has(op_flags::Composite) && e.mask.has(DispatchKey::CUDA) != (cuda_declared[i] != 0))
      problems.push_back(std::string(e.schema.name) +
                         (cuda_declared[i] ? ": CUDA dtypes declared but no CUDA kernel"
                                           : ": a CUDA kernel exists but the case table declares a hole"));
  }
  INFO("holes:" << join(problems));
  CHECK(problems.empty());
}

TEST_CASE("CPU: every case on every declared dtype matches the float64 reference", "[coverage]") {
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
