// Meta rules of the factories, the in-place fills and copy_.
#include <cmath>

#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/meta/rules.h>
#include <mixt/runtime/checked.h>

namespace mixt::meta {

void factory(const OpCall& c, OutputMeta* out) {
  const Shape& sizes = c.op == OpId::full ? c.attrs.get<attrs::Full>().sizes : c.attrs.get<attrs::Sizes>().sizes;
  MIXT_CHECK_OP(c.attrs.dtype != ScalarType::Undefined, c, "a tensor needs a dtype");
  checked_nbytes(checked_numel(sizes, op_name(c.op).data()), element_size(c.attrs.dtype), op_name(c.op).data());
  out[0] = {sizes, c.attrs.dtype};
}

void arange(const OpCall& c, OutputMeta* out) {
  const auto& a = c.attrs.get<attrs::Arange>();
  MIXT_CHECK_OP(c.attrs.dtype != kBool, c, "not implemented for dtype bool");
  const double start = a.start.to_double(), end = a.end.to_double(), step = a.step.to_double();
  MIXT_CHECK_OP(step != 0, c, "step must be nonzero (got {})", a.step);
  MIXT_CHECK_OP(std::isfinite(start) && std::isfinite(end), c, "unsupported range: {} -> {}", a.start, a.end);
  MIXT_CHECK_OP((step > 0 && end >= start) || (step < 0 && end <= start), c,
                "upper bound {} and lower bound {} are inconsistent with the step's sign ({})", a.end, a.start, a.step);
  const bool exact = !a.start.is_floating() && !a.end.is_floating() && !a.step.is_floating();
  constexpr int64_t kMaxArange = int64_t{1} << 50;  // as the kernels
  int64_t n;
  if (exact) {
    const __int128 lo = a.start.to_int(), hi = a.end.to_int(), st = a.step.to_int();
    const __int128 count = (hi - lo + st - (st > 0 ? 1 : -1)) / st;
    MIXT_CHECK_OP(count <= kMaxArange, c, "range {} -> {} step {} has too many elements", a.start, a.end, a.step);
    n = static_cast<int64_t>(count);
  } else {
    const double count = std::ceil((end - start) / step);
    MIXT_CHECK_OP(count >= 0 && count <= static_cast<double>(kMaxArange), c,
                  "range {} -> {} step {} has too many elements", a.start, a.end, a.step);
    n = static_cast<int64_t>(count);
  }
  out[0] = {Shape{n}, c.attrs.dtype};
}

void linspace(const OpCall& c, OutputMeta* out) {
  const int64_t steps = c.attrs.get<attrs::Linspace>().steps;
  MIXT_CHECK_OP(steps >= 0, c, "number of steps must be non-negative (got {})", steps);
  MIXT_CHECK_OP(c.attrs.dtype != kBool, c, "not implemented for dtype bool");
  out[0] = {Shape{steps}, c.attrs.dtype};
}

void eye(const OpCall& c, OutputMeta* out) {
  const auto& a = c.attrs.get<attrs::Eye>();
  MIXT_CHECK_OP(a.rows >= 0 && a.cols >= 0, c, "eye needs non-negative sizes (got {} x {})", a.rows, a.cols);
  const Shape sizes{a.rows, a.cols};
  checked_nbytes(checked_numel(sizes, "eye"), element_size(c.attrs.dtype), "eye");
  out[0] = {sizes, c.attrs.dtype};
}

void self(const OpCall& c, OutputMeta* out) {
  check_writable(c, c.in[0], "the tensor");
  out[0] = {c.in[0].sizes(), c.in[0].dtype()};
}

void random_fill(const OpCall& c, OutputMeta* out) {
  check_random_fill(c, c.in[0]);
  self(c, out);
}

void random_ints(const OpCall& c, OutputMeta* out) {
  const auto& a = c.attrs.get<attrs::RandomInts>();
  check_random_range(c, a.low, a.high, c.in[0].dtype());
  self(c, out);
}

void copy(const OpCall& c, OutputMeta* out) {
  const Tensor &dst = c.in[0], &src = c.in[1];
  MIXT_CHECK_OP(dst.is_meta(), c, "meta tensors have no data to copy to {} (the destination)", dst.device());
  MIXT_CHECK_OP(broadcast_shapes(src.sizes(), dst.sizes(), "copy_") == dst.sizes(), c,
                "source of shape {} cannot be broadcast to the destination's {}", src.sizes(), dst.sizes());
  check_writable(c, dst, "the destination");
  out[0] = {dst.sizes(), dst.dtype()};
}

}  // namespace mixt::meta
