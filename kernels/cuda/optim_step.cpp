// The fused optimizer steps on CUDA (adam_step_, sgd_step_): parameters grouped by dtype,
// each group cut into multi-tensor launches (kernels/common/multi_tensor_plan.h), then one
// kernel advancing the step counters. The found_inf flag and the counters stay on the
// device: nothing is read back (Note [Fused optimizer steps]).
#include <vector>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/multi_tensor_checks.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/optim_launch.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>

namespace mixt::cuda {
namespace {

// The device of a non-empty group (the first parameter's; every tensor is checked against it).
Device group_device(const OpCall& c) {
  MIXT_CHECK_OP(c.list[0].is_cuda(), c, "the CUDA kernel got {}", c.list[0].describe());
  return c.list[0].device();
}

// The optional found_inf flag: a one-element float32 tensor on `device`, or null.
const float* found_inf_flag(const OpCall& c, const Device& device) {
  if (c.n_in == 0 || !c.in[0].defined()) return nullptr;
  const Tensor& f = c.in[0];
  MIXT_CHECK_OP(f.dtype() == kFloat32 && f.numel() == 1 && f.device() == device, c,
                "found_inf must be a one-element float32 tensor on {}, got {}", device, f.describe());
  return f.data_ptr<float>();
}

void fill_steps(StepTable* t, const mt::PlannedLaunch& l, std::span<const size_t> index, std::span<const Tensor> steps) {
  for (size_t s = 0; s < l.tensors.size(); ++s) {
    const Tensor& st = steps[index[l.tensors[s]]];
    t->ptr[s] = st.data_ptr();
    t->is_double[s] = st.dtype() == kFloat64;
  }
}

// Adds 1 to every counter of `steps` unless *found_inf is set.
void advance_steps(std::span<const Tensor> steps, const float* found_inf, cudaStream_t stream, const char* op) {
  AdvanceStepsArgs a;
  a.found_inf = found_inf;
  for (size_t i = 0; i < steps.size(); ++i) {
    a.ptr[a.n] = steps[i].data_ptr();
    a.is_double[a.n] = steps[i].dtype() == kFloat64;
    if (++a.n == AdvanceStepsArgs::kMaxCounters || i + 1 == steps.size()) {
      check(launch_advance_steps(a, stream), op);
      a.n = 0;
    }
  }
}

// Calls launch(dtype, index, numels) for every parameter dtype present: index the
// parameters of that dtype, numels their sizes.
template <class F>
void for_each_dtype_group(std::span<const Tensor> params, F&& launch) {
  for (ScalarType dtype : {kFloat16, kBFloat16, kFloat32, kFloat64}) {
    std::vector<size_t> index;
    std::vector<int64_t> numels;
    for (size_t i = 0; i < params.size(); ++i)
      if (params[i].dtype() == dtype) index.push_back(i), numels.push_back(params[i].numel());
    if (!index.empty()) launch(dtype, std::span<const size_t>(index), std::span<const int64_t>(numels));
  }
}

void adam_kernel(OpCall& c, DispatchKeySet) {
  const auto& h = c.attrs.get<attrs::AdamStep>();
  if (c.list.empty()) return (void)split_step_lists(c, h.num_params, 0, false, Device::cpu());  // nothing to step
  const Device device = group_device(c);
  const StepLists l = split_step_lists(c, h.num_params, h.amsgrad ? 3 : 2, true, device);
  const float* found_inf = found_inf_flag(c, device);
  DeviceGuard guard(device.index(), "adam_step_");
  const cudaStream_t stream = current_native_stream(device.index());
  AdamArgs a;
  a.found_inf = found_inf;
  a.lr = h.lr, a.beta1 = h.beta1, a.beta2 = h.beta2, a.eps = h.eps, a.weight_decay = h.weight_decay;
  a.amsgrad = h.amsgrad, a.decoupled = h.decoupled_weight_decay;
  for_each_dtype_group(l.params, [&](ScalarType dtype, std::span<const size_t> index, std::span<const int64_t> numels) {
    a.dtype = dtype;
    for (const mt::PlannedLaunch& pl : mt::plan_launches(numels)) {
      mt::pack_chunks<5>(pl, numels, [&](int list, size_t t) -> void* {
        const size_t i = index[t];
        switch (list) {
          case 0: return l.params[i].data_ptr();
          case 1: return l.grads[i].data_ptr();
          default: return list - 2 < static_cast<int>(l.states.size()) ? l.states[static_cast<size_t>(list - 2)][i].data_ptr() : nullptr;
        }
      }, &a.chunks);
      fill_steps(&a.steps, pl, index, l.steps);
      check(launch_adam_step(a, stream), "adam_step_");
    }
  });
  advance_steps(l.steps, found_inf, stream, "adam_step_");
}

void sgd_kernel(OpCall& c, DispatchKeySet) {
  const auto& h = c.attrs.get<attrs::SgdStep>();
  const bool with_momentum = h.momentum != 0.0;
  if (c.list.empty()) return (void)split_step_lists(c, h.num_params, 0, false, Device::cpu());  // nothing to step
  const Device device = group_device(c);
  const StepLists l = split_step_lists(c, h.num_params, with_momentum ? 1 : 0, with_momentum, device);
  const float* found_inf = found_inf_flag(c, device);
  DeviceGuard guard(device.index(), "sgd_step_");
  const cudaStream_t stream = current_native_stream(device.index());
  SgdArgs a;
  a.found_inf = found_inf;
  a.lr = h.lr, a.momentum = h.momentum, a.dampening = h.dampening, a.weight_decay = h.weight_decay;
  a.nesterov = h.nesterov;
  for_each_dtype_group(l.params, [&](ScalarType dtype, std::span<const size_t> index, std::span<const int64_t> numels) {
    a.dtype = dtype;
    for (const mt::PlannedLaunch& pl : mt::plan_launches(numels)) {
      mt::pack_chunks<3>(pl, numels, [&](int list, size_t t) -> void* {
        const size_t i = index[t];
        if (list == 0) return l.params[i].data_ptr();
        if (list == 1) return l.grads[i].data_ptr();
        return with_momentum ? l.states[0][i].data_ptr() : nullptr;
      }, &a.chunks);
      if (with_momentum) fill_steps(&a.steps, pl, index, l.steps);
      check(launch_sgd_step(a, stream), "sgd_step_");
    }
  });
  advance_steps(l.steps, found_inf, stream, "sgd_step_");
}

}  // namespace

void register_optim_step_kernels() {
  register_kernel(OpId::adam_step_, DispatchKey::CUDA, adam_kernel);
  register_kernel(OpId::sgd_step_, DispatchKey::CUDA, sgd_kernel);
}

}  // namespace mixt::cuda
