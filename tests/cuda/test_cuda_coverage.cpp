// The op-coverage harness on CUDA: every case of the op-case table (tests/support) on
// every dtype its CUDA kernel declares, judged as on the CPU. Own main (no Catch2, so
// the binary carries to a GPU machine): exits 77 (meson: SKIP) only on a machine
// without a GPU (gpu_skip.h), 1 when any case fails or a GPU is there but unusable.
// Arguments, when given, keep only the cases whose op name starts with one of them
// (tests/gpu/run.sh runs the reduction and multi-tensor kernels under racecheck so).
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gpu_skip.h"
#include "op_cases.h"

using namespace mixt;
using namespace mixt::testing;

// True when op `name` starts with one of the filters (or there are none).
bool selected(std::string_view name, int argc, char** argv) {
  if (argc <= 1) return true;
  for (int i = 1; i < argc; ++i)
    if (name.substr(0, std::strlen(argv[i])) == argv[i]) return true;
  return false;
}

int main(int argc, char** argv) {
  if (const int status = cuda_unavailable_status("test_cuda_coverage"); status >= 0) return status;
  std::vector<std::string> failures;
  int runs = 0;
  for (const OpCase& c : op_cases()) {
    if (!selected(op_name(c.op), argc, argv)) continue;
    for (int d = 0; d < kNumDtypes; ++d) {
      const auto dt = static_cast<ScalarType>(d);
      if (!dtypes::contains(c.cuda_dtypes, dt)) continue;
      ++runs;
      const std::string r = run_case(c, dt, Device::cuda(0));
      if (!r.empty()) failures.push_back(r);
    }
  }
  for (const std::string& f : failures) std::printf("FAIL: %s\n", f.c_str());
  // A table that declares no CUDA dtype at all would make this test vacuous.
  if (runs == 0) {
    std::printf("FAIL: no case declares a CUDA dtype\n");
    return 1;
  }
  std::printf("test_cuda_coverage: %d checks, %zu failures\n", runs, failures.size());
  return failures.empty() ? 0 : 1;
}
