// CPU kernels of the fused optimizer steps (adam_step_, sgd_step_): one
// multi-tensor pass over a parameter group, predicated on the grad scaler's
// found_inf flag. The rules are torch.optim's; the composite updates in
// runtime/optim are their reference. See Note [Fused optimizer steps].
#include <cmath>
#include <span>
#include <type_traits>
#include <vector>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/common/optim_math.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/multi_tensor.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/kernels/cpu/vec/optim_lanes.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cpu {
namespace {

constexpr uint32_t kParamDtypes = dtypes::kStandardFloat;

StepLists split_lists(const OpCall& c, int64_t n, int n_states, bool with_steps) {
  return split_step_lists(c, n, n_states, with_steps, Device::cpu());
}

// True when the optional found_inf input says to skip the step.
bool skip_step(const OpCall& c) {
  if (c.n_in == 0 || !c.in[0].defined()) return false;
  const Tensor& f = c.in[0];
  MIXT_CHECK_OP(f.dtype() == kFloat32 && f.numel() == 1 && f.device().is_cpu(), c,
                "found_inf must be a one-element float32 CPU tensor, got {}", f.describe());
  return *f.data_ptr<float>() != 0.0f;
}

double read_step(const Tensor& t) {
  return t.dtype() == kFloat64 ? *t.data_ptr<double>() : static_cast<double>(*t.data_ptr<float>());
}
void write_step(const Tensor& t, double v) {
  if (t.dtype() == kFloat64) *t.data_ptr<double>() = v;
  else *t.data_ptr<float>() = static_cast<float>(v);
}

// Runs body.template operator()<P>(tensor, begin, end) over every chunk of the
// parameters, with P the storage type of the parameter (and its gradient).
template <class Body>
void for_each_chunk(const StepLists& l, const char* op, Body&& body) {
  const std::vector<Chunk> chunks = make_chunks(l.params);
  const int nt = threads_for(total_elements(chunks));
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t k = 0; k < static_cast<int64_t>(chunks.size()); ++k) {
    const Chunk& ch = chunks[static_cast<size_t>(k)];
    visit_dtype<kParamDtypes>(l.params[ch.tensor].dtype(), op, [&](auto tag) {
      body.template operator()<typename decltype(tag)::type>(ch.tensor, ch.begin, ch.end);
    });
  }
}

// Calls f.template operator()<Flags...>() with the runtime bools as template
// arguments, so the element loops have no branches (the float64 loops; float32 math
// runs in vec/optim_lanes.h).
template <bool... Done, class F>
void with_flags(F&& f) {
  f.template operator()<Done...>();
}
template <bool... Done, class F, class... Rest>
void with_flags(F&& f, bool first, Rest... rest) {
  if (first) with_flags<Done..., true>(f, rest...);
  else with_flags<Done..., false>(f, rest...);
}

void adam_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::AdamStep>();
  const bool amsgrad = a.amsgrad, decoupled = a.decoupled_weight_decay;
  const StepLists l = split_lists(c, a.num_params, amsgrad ? 3 : 2, true);
  if (skip_step(c)) return;
  const double lr = a.lr, beta1 = a.beta1, beta2 = a.beta2, eps = a.eps, wd = a.weight_decay;
  std::vector<optim_math::AdamStepScalars> consts(l.params.size());
  for (size_t i = 0; i < l.params.size(); ++i) {
    const double step = read_step(l.steps[i]) + 1.0;
    write_step(l.steps[i], step);
    consts[i] = optim_math::adam_step_scalars(lr, beta1, beta2, step);
  }
  // AdamW decays the parameter (a multiplication by exactly 1 when it does not);
  // Adam adds the L2 term to the gradient.
  const bool l2 = !decoupled && wd != 0.0;
  for_each_chunk(l, "adam_step_", [&]<class P>(size_t t, int64_t b, int64_t e) {
    using M = opmath_t<P>;  // float, or double for float64 parameters
    P* p = l.params[t].data_ptr<P>();
    const P* g = l.grads[t].data_ptr<P>();
    M* m = l.states[0][t].data_ptr<M>();
    M* v = l.states[1][t].data_ptr<M>();
    M* vmax = amsgrad ? l.states[2][t].data_ptr<M>() : nullptr;
    const auto k = optim_math::adam_consts<M>(consts[t], lr, beta1, beta2, eps, wd, decoupled);
    if constexpr (std::is_same_v<M, float>) {  // float32 math: in vector lanes, with the same bits
      vec::adam_lanes(p + b, g + b, m + b, v + b, amsgrad ? vmax + b : nullptr, static_cast<size_t>(e - b), k, l2,
                      amsgrad);
    } else {
      with_flags([&]<bool L2, bool Ams>() {
        for (int64_t i = b; i < e; ++i) optim_math::adam_update<L2, Ams>(p, g, m, v, vmax, i, k);
      }, l2, amsgrad);
    }
  });
}

void sgd_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::SgdStep>();
  const double lr = a.lr, momentum = a.momentum, dampening = a.dampening, wd = a.weight_decay;
  const bool nesterov = a.nesterov, with_momentum = momentum != 0.0;
  const StepLists l = split_lists(c, a.num_params, with_momentum ? 1 : 0, with_momentum);
  if (skip_step(c)) return;
  std::vector<char> first(l.params.size(), 0);
  for (size_t i = 0; i < l.steps.size(); ++i) {
    const double step = read_step(l.steps[i]);
    first[i] = step == 0.0;
    write_step(l.steps[i], step + 1.0);
  }
  for_each_chunk(l, "sgd_step_", [&]<class P>(size_t t, int64_t b, int64_t e) {
    using M = opmath_t<P>;
    P* p = l.params[t].data_ptr<P>();
    const P* g = l.grads[t].data_ptr<P>();
    M* buf = with_momentum ? l.states[0][t].data_ptr<M>() : nullptr;
    const auto k = optim_math::sgd_consts<M>(lr, momentum, dampening, wd);
    const bool init = with_momentum && first[t];  // the first step copies the gradient into the buffer
    if constexpr (std::is_same_v<M, float>) {
      vec::sgd_lanes(p + b, g + b, with_momentum ? buf + b : nullptr, static_cast<size_t>(e - b), init, k, wd != 0.0,
                     with_momentum, nesterov);
    } else {
      with_flags([&]<bool L2, bool Momentum, bool Nesterov>() {
        for (int64_t i = b; i < e; ++i) optim_math::sgd_update<L2, Momentum, Nesterov>(p, g, buf, i, init, k);
      }, wd != 0.0, with_momentum, nesterov);
    }
  });
}

}  // namespace

void register_optim_step_kernels() {
  register_kernel(OpId::adam_step_, DispatchKey::CPU, adam_kernel);
  register_kernel(OpId::sgd_step_, DispatchKey::CPU, sgd_kernel);
}

}  // namespace mixt::cpu
