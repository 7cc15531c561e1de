#include <mixt/amp/ops.h>

#include <mixt/dispatcher/dispatch.h>

namespace mixt::amp {

void unscale_check_(std::span<const Tensor> grads, Tensor& found_inf, const Tensor& inv_scale) {
  OpCall c(OpId::amp_unscale_check_);
  c.push(found_inf);
  c.push(inv_scale);
  c.list = grads;
  for (const Tensor& g : grads) g.bump_version();
  call_inplace(c, found_inf);
}

void update_scale_(Tensor& scale, Tensor& growth_tracker, Tensor& hysteresis_tracker, const Tensor& found_inf,
                   Tensor& skipped_steps, Tensor& floor_hits, const ScaleRule& rule) {
  OpCall c(OpId::amp_update_scale_);
  c.push(scale);
  c.push(growth_tracker);
  c.push(hysteresis_tracker);
  c.push(found_inf);
  c.push(skipped_steps);
  c.push(floor_hits);
  c.attrs.s0 = rule.growth_factor;
  c.attrs.s1 = rule.backoff_factor;
  c.attrs.s2 = rule.min_scale;
  c.attrs.s3 = rule.max_scale;
  c.attrs.i0 = rule.growth_interval;
  c.attrs.i1 = rule.hysteresis;
  c.attrs.flag = rule.consecutive_hysteresis;
  for (Tensor* t : {&growth_tracker, &hysteresis_tracker, &skipped_steps, &floor_hits}) t->bump_version();
  call_inplace(c, scale);
}

}  // namespace mixt::amp
