// Meta rules of the grad scaler's ops and the fused optimizer steps: their lists are
// checked for length and shapes; they write in place and return in0 (or nothing).
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/meta/rules.h>

namespace mixt::meta {

void amp_unscale_check(const OpCall& c, OutputMeta* out) {
  const Tensor &found_inf = c.in[0], &inv_scale = c.in[1];
  MIXT_CHECK_OP(found_inf.numel() == 1 && found_inf.dtype() == kFloat32 && inv_scale.numel() == 1 &&
                    inv_scale.dtype() == kFloat32,
                c, "found_inf and inv_scale must be one-element float32 tensors, got {} and {}", found_inf.describe(),
                inv_scale.describe());
  for (size_t i = 0; i < c.list.size(); ++i)
    check_unscale_gradient(c, i, c.list[i]);
  out[0] = {found_inf.sizes(), found_inf.dtype()};
}

void amp_update_scale(const OpCall& c, OutputMeta* out) {
  for (int i = 0; i < c.n_in; ++i)
    MIXT_CHECK_OP(c.in[i].numel() == 1, c, "input {} must have one element, got {}", i, c.in[i].describe());
  out[0] = {c.in[0].sizes(), c.in[0].dtype()};
}

void optim_step(const OpCall& c, OutputMeta* out) {
  const bool adam = c.op == OpId::adam_step_;
  const int64_t n = adam ? c.attrs.get<attrs::AdamStep>().num_params : c.attrs.get<attrs::SgdStep>().num_params;
  MIXT_CHECK_OP(n >= 0 && (n == 0 ? c.list.empty() : static_cast<int64_t>(c.list.size()) % n == 0), c,
                "expects lists of {} tensors each, got {} tensors", n, c.list.size());
  const auto un = static_cast<size_t>(n);
  for (size_t i = 0; i < un; ++i) check_step_parameter(c, i, c.list[i], Device::meta());
  for (size_t k = un; k < c.list.size(); ++k) {
    const Tensor &p = c.list[k % un], &t = c.list[k];
    const bool step_counter = k >= c.list.size() - un && (adam || c.list.size() > 2 * un);
    MIXT_CHECK_OP(step_counter ? t.numel() == 1 : t.sizes() == p.sizes(), c,
                  "tensor {} of the lists is {}, which does not fit parameter {} ({})", k, t.describe(), k % un,
                  p.describe());
  }
  out[0] = {};  // nothing returned
}

}  // namespace mixt::meta
