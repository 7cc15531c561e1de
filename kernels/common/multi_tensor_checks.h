// The argument checks of the fused optimizer steps (adam_step_, sgd_step_) and of the
// scale update (amp_update_scale_), shared by the CPU and CUDA kernels.
#pragma once

#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/amp_math.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/runtime/tensor.h>

namespace mixt {

// The list of one fused optimizer step (adam_step_, sgd_step_), cut into its named parts.
struct StepLists {
  std::span<const Tensor> params, grads;
  std::vector<std::span<const Tensor>> states;  // each like the params, in the working dtype
  std::span<const Tensor> steps;                // one-element float32/float64 counters (may be empty)
};

// The working dtype of a parameter: float64 for float64, else float32.
inline ScalarType step_working_dtype(ScalarType t) { return t == kFloat64 ? kFloat64 : kFloat32; }

// Splits and checks c.list: n parameters on `device`, their gradients, n_states state
// lists and (with_steps) the step counters, every tensor on `device`.
inline StepLists split_step_lists(const OpCall& c, int64_t n, int n_states, bool with_steps, Device device) {
  const int64_t parts = 2 + n_states + (with_steps ? 1 : 0);
  MIXT_CHECK_OP(n >= 0 && static_cast<int64_t>(c.list.size()) == n * parts, c,
                "expects {} lists of {} tensors ({} in all), got {} tensors", parts, n, n * parts, c.list.size());
  const auto un = static_cast<size_t>(n);
  const char* where = device.is_cpu() ? "CPU" : "device";
  StepLists l;
  l.params = c.list.subspan(0, un);
  l.grads = c.list.subspan(un, un);
  for (int s = 0; s < n_states; ++s) l.states.push_back(c.list.subspan(un * static_cast<size_t>(2 + s), un));
  if (with_steps) l.steps = c.list.subspan(un * static_cast<size_t>(2 + n_states), un);
  for (size_t i = 0; i < un; ++i) {
    const Tensor& p = l.params[i];
    check_step_parameter(c, i, p, device);
    const Tensor& g = l.grads[i];
    MIXT_CHECK_OP(g.device() == device && g.dtype() == p.dtype() && g.is_contiguous() && g.sizes() == p.sizes(), c,
                  "gradient {} is {}, parameter {} (a contiguous gradient of the parameter's dtype and shape)", i,
                  g.describe(), p.describe());
    for (const auto& st : l.states)
      MIXT_CHECK_OP(st[i].device() == device && st[i].dtype() == step_working_dtype(p.dtype()) &&
                        st[i].is_contiguous() && st[i].sizes() == p.sizes(),
                    c, "state tensor {} is {}, expected {} like parameter {}", i, st[i].describe(),
                    step_working_dtype(p.dtype()), p.describe());
    if (with_steps)
      MIXT_CHECK_OP(l.steps[i].numel() == 1 && l.steps[i].device() == device &&
                        (l.steps[i].dtype() == kFloat32 || l.steps[i].dtype() == kFloat64),
                    c, "step counter {} must be a one-element float {} tensor, got {}", i, where,
                    l.steps[i].describe());
  }
  return l;
}

// amp_update_scale_'s rule, checked (raises naming the op), as the plain values of amp_math.
template <class Rule>
amp_math::ScaleRuleValues checked_scale_rule(const OpCall& c, const Rule& rule) {
  const amp_math::ScaleRuleValues r{rule.growth_factor, rule.backoff_factor, rule.min_scale, rule.max_scale,
                                    rule.growth_interval, rule.hysteresis,   rule.consecutive_hysteresis};
  MIXT_CHECK_OP(std::isfinite(r.growth_factor) && r.growth_factor > 0 && std::isfinite(r.backoff_factor) &&
                    r.backoff_factor > 0 && r.min_scale >= 0 && r.min_scale <= r.max_scale && r.growth_interval >= 1 &&
                    r.growth_interval < (int64_t{1} << 31) && r.hysteresis >= 1 && r.hysteresis < (int64_t{1} << 31),
                c,
                "invalid rule: growth_factor {}, backoff_factor {}, min_scale {}, max_scale {}, growth_interval {}, "
                "hysteresis {}",
                r.growth_factor, r.backoff_factor, r.min_scale, r.max_scale, r.growth_interval, r.hysteresis);
  return r;
}

}  // namespace mixt
