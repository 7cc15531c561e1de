// What the composite nn kernels share (kernels/composite/nn.cpp, losses.cpp,
// distance.cpp): optional inputs, the float32 compute type of the narrow floats, the
// loss reductions, and the warning of a loss whose operands broadcast.
#pragma once

#include <string>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/runtime/ops/ops.h>
#include <mixt/runtime/warnings.h>

namespace mixt::composite {

// Optional input `i` (undefined when absent).
inline Tensor opt(const OpCall& c, int i) { return c.n_in > i ? c.in[i] : Tensor(); }

// `t` in float32 when it is a narrow float (the compute type of the sensitive ops).
inline Tensor up(const Tensor& t) { return t.defined() && is_reduced_float(t.dtype()) ? t.to(kFloat32) : t; }

inline void check_floating(const OpCall& c, const Tensor& t, const char* what) {
  MIXT_CHECK_OP(is_floating(t.dtype()), c, "expected a floating {}, got {}", what, t.dtype());
}

// `r` after checking it is one of the three reductions (a caller may cast any integer).
inline Reduction checked(const OpCall& c, Reduction r) {
  MIXT_CHECK_OP(r == Reduction::None || r == Reduction::Mean || r == Reduction::Sum, c,
                "reduction must be none, mean or sum, got {}", static_cast<int>(r));
  return r;
}

// The plain reductions of an elementwise loss.
inline Tensor reduce(const Tensor& loss, Reduction r) {
  if (r == Reduction::Mean) return mean(loss);
  if (r == Reduction::Sum) return sum(loss);
  return loss;
}

// Sets the result, rounded to `dtype`.
inline void finish(OpCall& c, const Tensor& result, ScalarType dtype) { c.out[0] = result.to(dtype); }

// The shape two operands of a loss broadcast to. Operands of different shapes are legal
// but rarely meant (an [N, 1] prediction against an [N] target averages N * N pairs):
// they warn, as in PyTorch (runtime/warnings.h).
inline Shape loss_broadcast(const OpCall& c, const Shape& a, const Shape& b, const char* a_name, const char* b_name) {
  const Shape both = broadcast_shapes(a, b, op_name(c.op).data());
  if (a != b)
    warn(std::string(op_name(c.op)),
         fmt::format("the {}'s shape {} differs from the {}'s shape {}: they broadcast to {}, which is likely not "
                     "what was meant (give both the same shape)",
                     b_name, b, a_name, a, both));
  return both;
}

// The common dtype of a loss's two floating operands `a` and `b` (broadcast together, with the
// warning above).
inline ScalarType pair_dtype(const OpCall& c, const Tensor& a, const Tensor& b, const char* a_name = "input",
                             const char* b_name = "target") {
  check_floating(c, a, a_name);
  check_floating(c, b, b_name);
  loss_broadcast(c, a.sizes(), b.sizes(), a_name, b_name);
  const ScalarType dt = promote_types_or_undefined(a.dtype(), b.dtype());
  MIXT_CHECK_OP(dt != ScalarType::Undefined, c, "no common dtype for {} and {}", a.dtype(), b.dtype());
  return dt;
}

}  // namespace mixt::composite
