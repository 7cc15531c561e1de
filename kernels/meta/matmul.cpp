// Meta rules of mm, bmm, addmm, baddbmm, linear_backward and scaled_mm: the plan every backend's kernel makes.
#include <mixt/kernels/common/matmul_plan.h>
#include <mixt/kernels/meta/rules.h>

namespace mixt::meta {
namespace {
void planned(const OpCall& c, bool batched, bool scaled, OutputMeta* out) {
  const MatmulPlan p = plan_matmul(c, batched, scaled);
  out[0] = {p.out_shape, p.out_dtype};
}
}  // namespace

void mm(const OpCall& c, OutputMeta* out) { planned(c, false, false, out); }
void bmm(const OpCall& c, OutputMeta* out) { planned(c, true, false, out); }
void addmm(const OpCall& c, OutputMeta* out) { planned(c, false, true, out); }
void baddbmm(const OpCall& c, OutputMeta* out) { planned(c, true, true, out); }

void linear_backward(const OpCall& c, OutputMeta* out) {
  const LinearBackwardPlan p = plan_linear_backward(c);
  if (p.input_grad) out[0] = {p.input_shape, p.dtype};
  if (p.weight_grad) out[1] = {{p.out, p.in}, p.dtype};
  if (p.bias_grad) out[2] = {{p.out}, p.dtype};
}

void scaled_mm(const OpCall& c, OutputMeta* out) {
  const ScaledMmPlan p = plan_scaled_mm(c);
  out[0] = {p.out_shape, p.out_dtype};
  out[1] = {{}, p.float8_out ? kFloat32 : ScalarType::Undefined};  // amax: float8 results only
}

}  // namespace mixt::meta
