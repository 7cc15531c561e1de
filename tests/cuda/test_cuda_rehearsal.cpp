// Policy rehearsal against the real run (Note [Policy rehearsal]): every op case whose
// CUDA kernel takes float32, run under CUDA's autocast on CUDA tensors and under the
// same policy rehearsed on CPU tensors, each with an Explain; the two record lists must
// agree op by op (op, depth, rule, policy, casts, output dtypes). Own main (no Catch2,
// so the binary carries to a GPU machine): exits 77 (meson: SKIP) only on a machine
// without a GPU (gpu_skip.h), 1 when any case disagrees.
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "gpu_skip.h"
#include "op_cases.h"

using namespace mixt;
using namespace mixt::testing;

namespace {

// The case's explain records on `dev` under CUDA's `low` policy (rehearsed when `dev`
// is the CPU), or the error it raised.
struct Run {
  std::vector<autocast::ExplainRecord> records;
  std::string error;
};
Run run_under_cuda_policy(const OpCase& c, const CaseInputs& in, ScalarType low, Device dev) {
  Run r;
  std::vector<Tensor> ins;
  for (const Tensor& t : in.in) ins.push_back(t.defined() ? t.to(dev) : t);
  autocast::Explain ex;
  try {
    const std::optional<Device> rehearse = dev.is_cpu() ? std::optional<Device>(dev) : std::nullopt;
    autocast::Guard g({.device = DeviceType::CUDA, .dtype = low, .rehearse_on = rehearse});
    c.run(ins, kFloat32, dev);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  r.records = ex.records();
  return r;
}

// "" when the two records describe the same decision and result.
std::string difference(const autocast::ExplainRecord& gpu, const autocast::ExplainRecord& cpu) {
  if (gpu.op != cpu.op || gpu.depth != cpu.depth) return "op " + gpu.op + " vs " + cpu.op;
  if (gpu.rule != cpu.rule || gpu.policy != cpu.policy) return gpu.op + ": another rule or policy";
  if (gpu.policy_device != DeviceType::CUDA || cpu.policy_device != DeviceType::CUDA)
    return gpu.op + ": not CUDA's policy";
  if (gpu.outputs != cpu.outputs) return gpu.op + ": other output dtypes";
  if (gpu.casts.size() != cpu.casts.size()) return gpu.op + ": another number of casts";
  for (size_t i = 0; i < gpu.casts.size(); ++i)
    if (gpu.casts[i].input != cpu.casts[i].input || gpu.casts[i].from != cpu.casts[i].from ||
        gpu.casts[i].to != cpu.casts[i].to)
      return gpu.op + ": cast " + std::to_string(i) + " differs";
  return "";
}

}  // namespace

int main() {
  if (const int status = cuda_unavailable_status("test_cuda_rehearsal"); status >= 0) return status;
  std::vector<std::string> failures;
  int compared = 0;
  for (ScalarType low : {kFloat16, kBFloat16})
    for (const OpCase& c : op_cases()) {
      if (!dtypes::contains(c.cuda_dtypes, kFloat32) || c.check) continue;
      const CaseInputs in = c.make(kFloat32);
      const Run gpu = run_under_cuda_policy(c, in, low, Device::cuda(0));
      const Run cpu = run_under_cuda_policy(c, in, low, Device::cpu());
      const std::string where = c.label + " [" + std::string(dtype_name(low)) + "]";
      if (gpu.error.empty() != cpu.error.empty()) {
        failures.push_back(where + ": gpu " + (gpu.error.empty() ? "ran" : gpu.error) + "; rehearsal " +
                           (cpu.error.empty() ? "ran" : cpu.error));
        continue;
      }
      ++compared;
      if (gpu.records.size() != cpu.records.size()) {
        failures.push_back(where + ": " + std::to_string(gpu.records.size()) + " records on the GPU, " +
                           std::to_string(cpu.records.size()) + " rehearsed");
        continue;
      }
      for (size_t i = 0; i < gpu.records.size(); ++i)
        if (const std::string d = difference(gpu.records[i], cpu.records[i]); !d.empty()) {
          failures.push_back(where + ": record " + std::to_string(i) + ": " + d);
          break;
        }
    }
  for (const std::string& f : failures) std::printf("FAIL: %s\n", f.c_str());
  if (compared == 0) {
    std::printf("FAIL: no case ran on CUDA\n");
    return 1;
  }
  std::printf("test_cuda_rehearsal: %d cases compared, %zu failures\n", compared, failures.size());
  return failures.empty() ? 0 : 1;
}
