#include <mixt/runtime/ops/amp.h>

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
  c.attrs.get<attrs::ScaleUpdate>() = {rule.growth_factor, rule.backoff_factor, rule.min_scale, rule.max_scale,
                                       rule.growth_interval, rule.hysteresis, rule.consecutive_hysteresis};
  for (Tensor* t : {&growth_tracker, &hysteresis_tracker, &skipped_steps, &floor_hits}) t->bump_version();
  call_inplace(c, scale);
}

}  // namespace mixt::amp
