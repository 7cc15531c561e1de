// Meta rules of softmax, the normalizations, the fused backward ops and im2col / col2im.
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/conv_geometry.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/meta/rules.h>

namespace mixt::meta {

void softmax(const OpCall& c, OutputMeta* out) {
  const Tensor& in = c.in[0];
  const ScalarType dt = c.attrs.dtype;
  MIXT_CHECK_OP(dt == ScalarType::Undefined || is_floating(dt), c, "dtype must be a floating type, got {}", dt);
  MIXT_CHECK_OP(is_floating(in.dtype()) || dt != ScalarType::Undefined, c,
                "expected a floating input, got {} (pass a floating dtype to convert it first)", in.dtype());
  wrap_dim(c.attrs.get<attrs::Dim>().dim, in.dim(), op_name(c.op).data());
  out[0] = {in.sizes(), dt == ScalarType::Undefined ? in.dtype() : dt};
}

void layer_norm(const OpCall& c, OutputMeta* out) {
  const Shape stats = normalization_stats_shape(c, c.attrs.get<attrs::LayerNorm>().normalized_shape, 2);
  const ScalarType dt = c.in[0].dtype();
  out[0] = {c.in[0].sizes(), dt};
  out[1] = out[2] = {stats, accumulate_type(dt)};
}

void rms_norm(const OpCall& c, OutputMeta* out) {
  const Shape stats = normalization_stats_shape(c, c.attrs.get<attrs::RmsNorm>().normalized_shape, 1);
  const ScalarType dt = c.in[0].dtype();
  out[0] = {c.in[0].sizes(), dt};
  out[1] = {stats, accumulate_type(dt)};
}

void softmax_backward(const OpCall& c, OutputMeta* out) {
  check_softmax_backward(c);
  out[0] = {c.in[1].sizes(), c.in[1].dtype()};
}

void activation_backward(const OpCall& c, OutputMeta* out) {
  check_activation_backward(c);
  out[0] = {c.in[1].sizes(), c.in[1].dtype()};
}

void cross_entropy_rows(const OpCall& c, OutputMeta* out) {
  const CrossEntropyRowsPlan p = plan_cross_entropy_rows(c);
  if (c.op == OpId::cross_entropy_rows) {
    out[0] = out[1] = {{p.rows}, p.acc_dtype};
  } else {
    out[0] = {{p.rows, p.classes}, p.logits_dtype};
  }
}

void norm_backward(const OpCall& c, OutputMeta* out) {
  const NormBackwardPlan p = plan_norm_backward(c);
  const Shape& normalized = c.attrs.get<attrs::NormBackward>().normalized_shape;
  const Tensor& x = c.in[1];
  out[0] = {x.sizes(), p.input_grad ? x.dtype() : ScalarType::Undefined};
  out[1] = {normalized, p.weight_grad ? p.stat_dtype : ScalarType::Undefined};
  if (p.layer) out[2] = {normalized, p.bias_grad ? p.stat_dtype : ScalarType::Undefined};
}

namespace {
// The window attributes (kernel, stride, padding, dilation), checked to be 1- or 2-D.
template <class A>
int window_rank(const OpCall& c, const A& a) {
  const int r = a.kernel.size();
  MIXT_CHECK_OP((r == 1 || r == 2) && a.stride.size() == r && a.padding.size() == r && a.dilation.size() == r, c,
                "expected kernel, stride, padding and dilation for 1 or 2 spatial dims, got {}, {}, {}, {}", a.kernel,
                a.stride, a.padding, a.dilation);
  return r;
}
// The number of windows (output positions) over `spatial`.
template <class A>
int64_t window_blocks(const OpCall& c, const A& a, const Shape& spatial) {
  const int r = window_rank(c, a);
  MIXT_CHECK_OP(spatial.size() == r, c, "expected {} spatial sizes for a {}-D window, got {}", r, r, spatial);
  int64_t blocks = 1;
  for (int i = 0; i < r; ++i)
    blocks = checked_mul(blocks, window_output_size(c, spatial[i], a.kernel[i], a.stride[i], a.padding[i], a.dilation[i]),
                         op_name(c.op).data());
  return blocks;
}
}  // namespace

void im2col(const OpCall& c, OutputMeta* out) {
  const auto& a = c.attrs.get<attrs::Im2col>();
  const Tensor& x = c.in[0];
  MIXT_CHECK_OP(is_floating(x.dtype()), c, "expected a floating input, got {}", x.dtype());
  const int r = window_rank(c, a);
  MIXT_CHECK_OP(x.dim() == r + 2, c, "expected an input [N, C, *spatial] with {} spatial dims, got shape {}", r,
                x.sizes());
  Shape spatial;
  for (int i = 2; i < x.dim(); ++i) spatial.push_back(x.size(i));
  const int64_t blocks = window_blocks(c, a, spatial);
  out[0] = {Shape{x.size(0), checked_mul(x.size(1), a.kernel.numel(), "im2col"), blocks}, x.dtype()};
}

void col2im(const OpCall& c, OutputMeta* out) {
  const auto& a = c.attrs.get<attrs::Col2im>();
  const Tensor& cols = c.in[0];
  MIXT_CHECK_OP(is_floating(cols.dtype()), c, "expected a floating input, got {}", cols.dtype());
  const int64_t blocks = window_blocks(c, a, a.output_size);
  MIXT_CHECK_OP(cols.dim() == 3, c, "expected columns [N, C * prod(kernel), L], got shape {}", cols.sizes());
  const int64_t kn = a.kernel.numel();
  MIXT_CHECK_OP(cols.size(1) % kn == 0, c, "dim 1 of the columns ({}) is not a multiple of the kernel size {}",
                cols.size(1), kn);
  MIXT_CHECK_OP(cols.size(2) == blocks, c,
                "the columns hold {} blocks but the output size {} with this window gives {}", cols.size(2),
                a.output_size, blocks);
  Shape sizes{cols.size(0), cols.size(1) / kn};
  for (int64_t s : a.output_size) sizes.push_back(s);
  out[0] = {sizes, cols.dtype()};
}

}  // namespace mixt::meta
