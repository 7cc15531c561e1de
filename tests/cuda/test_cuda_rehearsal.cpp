// Policy rehearsal against the real run (Note [Policy rehearsal]): every op case whose
// CUDA kernel takes float32, run under CUDA's autocast on CUDA tensors and under the
// same policy rehearsed on CPU tensors, each with an Explain; the two record lists must
// agree op by op (op, depth, device, rule, policy, casts, output dtypes). A custom op with
// a CPU kernel and a composite but no CUDA kernel checks that the rehearsal runs what the
// GPU runs (the composite, whose ops autocast sees). Own main (no Catch2,
// so the binary carries to a GPU machine): exits 77 (meson: SKIP) only on a machine
// without a GPU (gpu_skip.h), 1 when any case disagrees.
#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "gpu_skip.h"
#include "op_cases.h"

using namespace mixt;
using namespace mixt::testing;

namespace {

// The explain records of `run` on `dev` under CUDA's `low` policy (rehearsed when `dev`
// is the CPU), its explain table, or the error it raised.
struct Run {
  std::vector<autocast::ExplainRecord> records;
  std::string table;
  std::string error;
};
using Body = std::function<void(const std::vector<Tensor>& in, Device dev)>;
Run run_under_cuda_policy(const Body& body, const std::vector<Tensor>& in, ScalarType low, Device dev) {
  Run r;
  std::vector<Tensor> ins;
  for (const Tensor& t : in) ins.push_back(t.defined() ? t.to(dev) : t);
  autocast::Explain ex;
  try {
    const std::optional<Device> rehearse = dev.is_cpu() ? std::optional<Device>(dev) : std::nullopt;
    autocast::Guard g({.device = DeviceType::CUDA, .dtype = low, .rehearse_on = rehearse});
    body(ins, dev);
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  r.records = ex.records();
  r.table = ex.table();
  return r;
}

// "" when the two records describe the same decision and result.
std::string difference(const autocast::ExplainRecord& gpu, const autocast::ExplainRecord& cpu) {
  if (gpu.op != cpu.op || gpu.depth != cpu.depth) return "op " + gpu.op + " vs " + cpu.op;
  // Each op is decided once, by its tensors' device (Note [One autocast per call]).
  if (gpu.device != DeviceType::CUDA || cpu.device != DeviceType::CPU)
    return gpu.op + ": recorded on " + std::string(device_type_name(gpu.device)) + " and " +
           std::string(device_type_name(cpu.device)) + " (not cuda and cpu)";
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

// The records of a GPU run less its copies to the host (a `to` from CUDA to the CPU, and
// what it called): the one legitimate difference. A composite that reads a value
// (cross_entropy's target check: any(bad).item()) copies it from the device on a GPU,
// while rehearsed on CPU tensors the value is already on the host and is read without
// an op. Nothing else is dropped.
std::vector<autocast::ExplainRecord> without_copies_to_host(const std::vector<autocast::ExplainRecord>& records) {
  std::vector<autocast::ExplainRecord> kept;
  for (size_t i = 0; i < records.size(); ++i) {
    const autocast::ExplainRecord& r = records[i];
    if (r.op == "to" && r.device == DeviceType::CUDA && r.output_device == DeviceType::CPU) {
      while (i + 1 < records.size() && records[i + 1].depth > r.depth) ++i;
      continue;
    }
    kept.push_back(r);
  }
  return kept;
}

// Runs `body` on the GPU and rehearsed on the CPU; appends to `failures` where the two
// disagree (with both explain tables for the first few). Returns false when the runs
// could not be compared (one raised, the other did not).
bool compare(const std::string& where, const Body& body, const std::vector<Tensor>& in, ScalarType low,
             std::vector<std::string>& failures) {
  Run gpu = run_under_cuda_policy(body, in, low, Device::cuda(0));
  gpu.records = without_copies_to_host(gpu.records);
  const Run cpu = run_under_cuda_policy(body, in, low, Device::cpu());
  if (gpu.error.empty() != cpu.error.empty()) {
    failures.push_back(where + ": gpu " + (gpu.error.empty() ? "ran" : gpu.error) + "; rehearsal " +
                       (cpu.error.empty() ? "ran" : cpu.error));
    return false;
  }
  std::string failure;
  if (gpu.records.size() != cpu.records.size()) {
    failure = where + ": " + std::to_string(gpu.records.size()) + " records on the GPU, " +
              std::to_string(cpu.records.size()) + " rehearsed";
  } else {
    for (size_t i = 0; i < gpu.records.size() && failure.empty(); ++i)
      if (const std::string d = difference(gpu.records[i], cpu.records[i]); !d.empty())
        failure = where + ": record " + std::to_string(i) + ": " + d;
  }
  if (!failure.empty()) {
    if (failures.size() < 3) failure += "\n  on the GPU:\n" + gpu.table + "  rehearsed:\n" + cpu.table;
    failures.push_back(failure);
  }
  return true;
}

// A custom op with a CPU kernel and a composite but no CUDA kernel: the GPU runs the
// composite, and autocast sees its ops (AutocastDecomposes). The CPU kernel is "fused":
// the autocast layer does not see into it.
void twice_kernel(OpCall& c, DispatchKeySet) {
  ExcludeKeysGuard unseen(kAutocastKeys);
  c.out[0] = mul(c.in[0], 2.0);
}
void twice_composite(OpCall& c, DispatchKeySet) { c.out[0] = add(c.in[0], c.in[0]); }
OpId twice_op() {
  static const OpId id = [] {
    const OpId op = register_op({.name = "test::twice_no_cuda_kernel", .min_inputs = 1, .max_inputs = 1,
                                 .outputs = 1, .flags = op_flags::AutocastDecomposes});
    register_kernel(op, DispatchKey::CPU, twice_kernel);
    register_composite(op, twice_composite);
    return op;
  }();
  return id;
}

}  // namespace

int main() {
  if (const int status = cuda_unavailable_status("test_cuda_rehearsal"); status >= 0) return status;
  std::vector<std::string> failures;
  int compared = 0;
  for (ScalarType low : {kFloat16, kBFloat16}) {
    const std::string in_low = " [" + std::string(dtype_name(low)) + "]";
    for (const OpCase& c : op_cases()) {
      if (!dtypes::contains(c.cuda_dtypes, kFloat32) || c.check) continue;
      const CaseInputs in = c.make(kFloat32);
      const Body body = [&c](const std::vector<Tensor>& ins, Device dev) { c.run(ins, kFloat32, dev); };
      compared += compare(c.label + in_low, body, in.in, low, failures);
    }
    // The rehearsal runs what CUDA runs: the composite, where CUDA has no kernel of its own.
    const Body twice = [](const std::vector<Tensor>& ins, Device) {
      OpCall call(twice_op());
      call.push(ins[0]);
      call_op(call);
    };
    compared += compare("test::twice_no_cuda_kernel" + in_low, twice, {ones({2, 3})}, low, failures);
  }
  for (const std::string& f : failures) std::printf("FAIL: %s\n", f.c_str());
  if (compared == 0) {
    std::printf("FAIL: no case ran on CUDA\n");
    return 1;
  }
  std::printf("test_cuda_rehearsal: %d cases compared, %zu failures\n", compared, failures.size());
  return failures.empty() ? 0 : 1;
}
