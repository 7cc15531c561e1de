// Meta rules of the elementwise ops: the same plan (devices, result type,
// broadcasting, a given output) the kernels make before they touch data
// (plan_elementwise), plus each op's own checks.
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/elementwise.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/meta/rules.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::meta {
namespace {

using dtypes::kAll;
using dtypes::kFloating;
using dtypes::kNumeric;
constexpr auto P = ResultRule::Promote, F = ResultRule::PromoteToFloat;

void planned(const OpCall& c, int n, ElementwiseOptions o, OutputMeta* out) {
  const ElementwisePlan p = plan_elementwise(c, n, o);
  out[0] = {p.shape, p.out_dtype};
}

}  // namespace

void unary_numeric(const OpCall& c, OutputMeta* out) { planned(c, 1, {P, kNumeric, false}, out); }
void unary_any(const OpCall& c, OutputMeta* out) { planned(c, 1, {P, kAll, false}, out); }
void unary_float(const OpCall& c, OutputMeta* out) { planned(c, 1, {F, kFloating, false}, out); }
void unary_floating(const OpCall& c, OutputMeta* out) { planned(c, 1, {P, kFloating, false}, out); }
void hardtanh(const OpCall& c, OutputMeta* out) {
  check_hardtanh_bounds(c);
  unary_numeric(c, out);
}
void round(const OpCall& c, OutputMeta* out) {
  check_round_decimals(c, c.in[0].dtype(), c.attrs.get<attrs::Round>().decimals);
  unary_numeric(c, out);
}
void predicate(const OpCall& c, OutputMeta* out) { planned(c, 1, {ResultRule::Predicate, kAll, false}, out); }

void clamp(const OpCall& c, OutputMeta* out) {
  const auto& a = c.attrs.get<attrs::Clamp>();
  MIXT_CHECK_OP(a.min.has_value() || a.max.has_value(), c, "at least one of min and max must be given");
  MIXT_CHECK_OP(c.in[0].dtype() != kBool, c, "clamp is not supported for bool tensors");
  // A floating bound promotes an integer tensor to float32 (as a wrapped Python scalar would).
  planned(c, 1, {a.min.is_floating() || a.max.is_floating() ? F : P, kNumeric, false}, out);
}

void binary_any(const OpCall& c, OutputMeta* out) { planned(c, 2, {P, kAll, true}, out); }

void binary_numeric(const OpCall& c, OutputMeta* out) {
  MIXT_CHECK_OP((c.op != OpId::sub && c.op != OpId::sub_) || (c.in[0].dtype() != kBool && c.in[1].dtype() != kBool), c,
                "subtraction with a bool tensor is not supported: use logical_xor() or logical_not() instead");
  planned(c, 2, {P, kNumeric, true}, out);
}

void binary_float(const OpCall& c, OutputMeta* out) { planned(c, 2, {F, kFloating, true}, out); }

void div(const OpCall& c, OutputMeta* out) {
  const bool true_division = c.attrs.get<attrs::Div>().rounding_mode == Rounding::True;
  planned(c, 2, true_division ? ElementwiseOptions{F, kFloating, true} : ElementwiseOptions{P, kNumeric, true}, out);
}

void compare(const OpCall& c, OutputMeta* out) { planned(c, 2, {ResultRule::Compare, kAll, true}, out); }
void logical(const OpCall& c, OutputMeta* out) { planned(c, 2, {ResultRule::Logical, dtypes::kBoolSet, false}, out); }
void addcmul(const OpCall& c, OutputMeta* out) { planned(c, 3, {P, kNumeric, false}, out); }

void addcdiv(const OpCall& c, OutputMeta* out) {
  planned(c, 3, {P, kNumeric, false}, out);
  MIXT_CHECK_OP(is_floating(out[0].dtype), c,
                "integer division with addcdiv is not supported: use true division (floating inputs)");
}

void lerp(const OpCall& c, OutputMeta* out) {
  for (int i = 0; i < 2; ++i)
    MIXT_CHECK_OP(!c.in[i].defined() || is_floating(c.in[i].dtype()), c,
                  "lerp expects floating start and end tensors, got {}", c.in[i].dtype());
  planned(c, 3, {P, kFloating, true}, out);
}

void where(const OpCall& c, OutputMeta* out) { out[0] = where_result(c); }

}  // namespace mixt::meta
