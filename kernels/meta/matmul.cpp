// Meta rules of mm, bmm, addmm and baddbmm: the plan every backend's kernel makes.
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

}  // namespace mixt::meta
