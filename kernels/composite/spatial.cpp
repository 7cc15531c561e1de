// The transposed convolutions, and the window helpers of the spatial composites
// (kernels/composite/spatial.h). conv_transpose1d/2d multiply the weight into columns
// and sum them into the image with col2im (the adjoint of conv's im2col);
// conv_transpose3d spreads the input out by the stride with zeros, pads it and runs
// conv3d with the flipped weight. Narrow floats compute in float32 and round once.
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/conv_geometry.h>
#include <mixt/kernels/composite/helpers.h>
#include <mixt/kernels/composite/register.h>
#include <mixt/kernels/composite/spatial.h>
#include <mixt/runtime/ops/nn.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {
namespace composite {

Tensor unfold_windows(const OpCall& c, const Tensor& x, const Shape& kernel, const Shape& stride, const Shape& padding,
                      const Shape& dilation) {
  const int r = kernel.size();
  Shape out;
  for (int i = 0; i < r; ++i)
    out.push_back(window_output_size(c, x.size(2 + i), kernel[i], stride[i], padding[i], dilation[i]));
  const Tensor xp = nn::functional::constant_pad_nd(x, pad_pairs(padding, padding));
  std::vector<Tensor> taps;
  Shape at = Shape::filled(r, 0);  // the tap's kernel position, row-major
  for (int64_t k = 0; k < kernel.numel(); ++k) {
    Tensor t = xp;
    for (int i = 0; i < r; ++i) {
      const int64_t start = at[i] * dilation[i];
      t = slice(t, 2 + i, start, start + (out[i] - 1) * stride[i] + 1, stride[i]);
    }
    taps.push_back(t);
    for (int i = r - 1; i >= 0 && ++at[i] == kernel[i]; --i) at[i] = 0;
  }
  return reshape(stack(taps, 2), {x.size(0), x.size(1) * kernel.numel(), out.numel()});
}

Shape pad_pairs(const Shape& before, const Shape& after) {
  Shape pads;
  for (int i = before.size() - 1; i >= 0; --i) {
    pads.push_back(before[i]);
    pads.push_back(after[i]);
  }
  return pads;
}

Tensor batched(const OpCall& c, const Tensor& x, int rank) {
  MIXT_CHECK_OP(x.dim() == rank + 1 || x.dim() == rank + 2, c,
                "expected a {}-D (unbatched) or {}-D (batched) input, got shape {}", rank + 1, rank + 2, x.sizes());
  return x.dim() == rank + 1 ? unsqueeze(x, 0) : x;
}

}  // namespace composite

namespace {

using namespace composite;
namespace F = nn::functional;

// The checked parts of a transposed convolution call.
struct TransposedConv {
  Tensor x, weight, bias;  // x batched; the weight [C_in, C_out / groups, *kernel]
  Shape kernel, out;       // the kernel and the output's spatial sizes
  int64_t c_out;
};

TransposedConv check_transposed(const OpCall& c, int rank) {
  const auto& a = c.attrs.get<attrs::ConvTranspose>();
  const Tensor &x_in = c.in[0], &w = c.in[1];
  const Tensor b = opt(c, 2);
  check_floating(c, x_in, "input");
  MIXT_CHECK_OP(x_in.dtype() == w.dtype() && (!b.defined() || b.dtype() == w.dtype()), c,
                "input ({}), weight ({}) and bias must have one dtype", x_in.dtype(), w.dtype());
  const Tensor x = batched(c, x_in, rank);
  MIXT_CHECK_OP(w.dim() == rank + 2, c, "expected a {}-D weight [C_in, C_out / groups, *kernel], got shape {}",
                rank + 2, w.sizes());
  MIXT_CHECK_OP(a.stride.size() == rank && a.padding.size() == rank && a.output_padding.size() == rank &&
                    a.dilation.size() == rank,
                c, "expected stride, padding, output_padding and dilation with {} values each, got {}, {}, {}, {}",
                rank, a.stride, a.padding, a.output_padding, a.dilation);
  const int64_t groups = a.groups, c_in = x.size(1);
  MIXT_CHECK_OP(groups > 0 && c_in % groups == 0, c, "groups ({}) must be positive and divide the input channels ({})",
                groups, c_in);
  MIXT_CHECK_OP(w.size(0) == c_in, c, "the weight of shape {} expects {} input channels, the input of shape {} has {}",
                w.sizes(), w.size(0), x_in.sizes(), c_in);
  const int64_t c_out = w.size(1) * groups;
  MIXT_CHECK_OP(!b.defined() || (b.dim() == 1 && b.size(0) == c_out), c, "expected a bias of shape [{}], got {}",
                c_out, b.defined() ? b.sizes() : Shape{});
  TransposedConv t{x, w, b, {}, {}, c_out};
  for (int i = 0; i < rank; ++i) {
    t.kernel.push_back(w.size(2 + i));
    t.out.push_back(transposed_output_size(c, x.size(2 + i), w.size(2 + i), a.stride[i], a.padding[i], a.dilation[i],
                                           a.output_padding[i]));
  }
  return t;
}

// y + bias (per output channel), without the batch dim again when the input had none.
void finish_transposed(OpCall& c, const TransposedConv& t, Tensor y) {
  if (t.bias.defined()) {
    Shape v = Shape::filled(static_cast<int>(y.dim()), 1);
    v[1] = t.c_out;
    y = add(y, reshape(up(t.bias), v));
  }
  finish(c, c.in[0].dim() == t.x.dim() ? y : squeeze(y, {0}), c.in[0].dtype());
}

// conv_transpose1d / 2d: columns [N, C_out * K, L] = W^T x per group, then col2im onto the full
// output ((in - 1) * stride + dilation * (kernel - 1) + 1 per dim), cropped by the padding and
// extended by the output padding.
template <int Rank>
void conv_transpose_kernel(OpCall& c, DispatchKeySet) {
  const TransposedConv t = check_transposed(c, Rank);
  const auto& a = c.attrs.get<attrs::ConvTranspose>();
  const int64_t n = t.x.size(0), c_in = t.x.size(1), groups = a.groups;
  const int64_t blocks = t.x.numel() / (n * c_in), ck = t.c_out / groups * t.kernel.numel();
  const ScalarType acc = is_reduced_float(t.x.dtype()) ? kFloat32 : ScalarType::Undefined;
  const Tensor w = transpose(reshape(t.weight, {groups, c_in / groups, ck}), 1, 2);  // [groups, C_out/g * K, C_in/g]
  const Tensor cols = matmul(w, reshape(t.x, {n, groups, c_in / groups, blocks}), acc);
  Shape full, no_padding = Shape::filled(Rank, 0), crop_before, crop_after;
  for (int i = 0; i < Rank; ++i) {
    full.push_back((t.x.size(2 + i) - 1) * a.stride[i] + a.dilation[i] * (t.kernel[i] - 1) + 1);
    crop_before.push_back(-a.padding[i]);
    crop_after.push_back(a.output_padding[i] - a.padding[i]);
  }
  const Tensor y = F::col2im(reshape(cols, {n, t.c_out * t.kernel.numel(), blocks}), full, t.kernel, a.stride, no_padding,
                             a.dilation);
  finish_transposed(c, t, F::constant_pad_nd(y, pad_pairs(crop_before, crop_after)));
}

// x spread out along dim `d` by `stride`: stride - 1 zeros between neighbours.
Tensor spread(const Tensor& x, int64_t d, int64_t stride) {
  if (stride == 1) return x;
  std::vector<Tensor> parts{x};
  for (int64_t i = 1; i < stride; ++i) parts.push_back(zeros_like(x));
  Shape sizes = x.sizes();
  const int64_t n = sizes[d];
  sizes[d] = n * stride;
  return narrow(reshape(stack(parts, d + 1), sizes), d, 0, (n - 1) * stride + 1);
}

// conv_transpose3d: conv3d of the spread-out input, padded by dilation * (kernel - 1) - padding
// (+ output_padding after), with the weight's spatial dims flipped and its channel dims swapped
// per group.
void conv_transpose3d_kernel(OpCall& c, DispatchKeySet) {
  const TransposedConv t = check_transposed(c, 3);
  const auto& a = c.attrs.get<attrs::ConvTranspose>();
  const int64_t c_in = t.x.size(1), groups = a.groups;
  Tensor x = up(t.x), w = up(t.weight);  // narrow floats: one rounding, at the end
  Shape before, after;
  for (int i = 0; i < 3; ++i) {
    x = spread(x, 2 + i, a.stride[i]);
    const int64_t reach = a.dilation[i] * (t.kernel[i] - 1);
    before.push_back(reach - a.padding[i]);
    after.push_back(reach - a.padding[i] + a.output_padding[i]);
    const Tensor reversed = arange(t.kernel[i] - 1, -1, -1, {.dtype = kInt64, .device = w.device()});
    w = index_select(w, 2 + i, reversed);
  }
  Shape g_sizes{groups, c_in / groups, t.c_out / groups};
  for (int64_t k : t.kernel) g_sizes.push_back(k);
  Shape conv_sizes{t.c_out, c_in / groups};
  for (int64_t k : t.kernel) conv_sizes.push_back(k);
  w = reshape(transpose(reshape(w, g_sizes), 1, 2), conv_sizes);
  const Tensor y = F::conv3d(F::constant_pad_nd(x, pad_pairs(before, after)), w, Tensor(), {1}, {0}, a.dilation,
                             groups);
  finish_transposed(c, t, y);
}

}  // namespace

void register_spatial_composite_kernels() {
  register_composite(OpId::conv_transpose1d, conv_transpose_kernel<1>);
  register_composite(OpId::conv_transpose2d, conv_transpose_kernel<2>);
  register_composite(OpId::conv_transpose3d, conv_transpose3d_kernel);
  composite::register_pooling_kernels();
  composite::register_padding_kernels();
  composite::register_resample_kernels();
}

}  // namespace mixt
