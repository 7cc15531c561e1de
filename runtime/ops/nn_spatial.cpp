// Front ends of the spatial nn ops (runtime/ops/nn.h): conv3d, the transposed
// convolutions, pooling, padding, interpolation and grid sampling.
#include <cmath>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/ops/nn.h>

namespace mixt::nn::functional {
namespace {

// An op call on `x` (and `weight` and `bias` when given; an undefined bias is left out).
OpCall spatial_call(OpId id, const Tensor& x, const Tensor& weight = Tensor(), const Tensor& bias = Tensor()) {
  OpCall c(id);
  MIXT_CHECK(x.defined(), op_name(id), "the input is undefined");
  c.push(x);
  if (id == OpId::grid_sampler_2d || bias.defined() || weight.defined()) {
    MIXT_CHECK(weight.defined(), op_name(id), "a required input is undefined");
    c.push(weight);
  }
  if (bias.defined()) c.push(bias);
  return c;
}

// `values` with one value per spatial dim: as given, or its single value repeated.
Shape per_spatial_dim(const Shape& values, int rank, OpId id, const char* what) {
  MIXT_CHECK(values.size() == rank || values.size() == 1, op_name(id), "expected {} values (or one) for {}, got {}",
             rank, what, values);
  return values.size() == 1 ? Shape::filled(rank, values[0]) : values;
}

Tensor conv_transpose(OpId id, int rank, const Tensor& x, const Tensor& weight, const Tensor& bias,
                      const Shape& stride, const Shape& padding, const Shape& output_padding, int64_t groups,
                      const Shape& dilation) {
  OpCall c = spatial_call(id, x, weight, bias);
  c.attrs.get<attrs::ConvTranspose>() = {
      per_spatial_dim(stride, rank, id, "stride"), per_spatial_dim(padding, rank, id, "padding"),
      per_spatial_dim(output_padding, rank, id, "output_padding"), per_spatial_dim(dilation, rank, id, "dilation"),
      groups};
  return call_op(c);
}

Tensor avg_pool(OpId id, int rank, const Tensor& x, const Shape& kernel, const Shape& stride, const Shape& padding,
                bool ceil_mode, bool count_include_pad) {
  OpCall c = spatial_call(id, x);
  const Shape k = per_spatial_dim(kernel, rank, id, "kernel_size");
  c.attrs.get<attrs::AvgPool>() = {k, stride.empty() ? k : per_spatial_dim(stride, rank, id, "stride"),
                                   per_spatial_dim(padding, rank, id, "padding"), ceil_mode, count_include_pad};
  return call_op(c);
}

PoolWithIndices max_pool(OpId id, int rank, const Tensor& x, const Shape& kernel, const Shape& stride,
                         const Shape& padding, const Shape& dilation, bool ceil_mode) {
  OpCall c = spatial_call(id, x);
  const Shape k = per_spatial_dim(kernel, rank, id, "kernel_size");
  c.attrs.get<attrs::MaxPool>() = {k, stride.empty() ? k : per_spatial_dim(stride, rank, id, "stride"),
                                   per_spatial_dim(padding, rank, id, "padding"),
                                   per_spatial_dim(dilation, rank, id, "dilation"), ceil_mode};
  dispatch(c);
  return {std::move(c.out[0]), std::move(c.out[1])};
}

Shape stride_or_kernel(std::optional<int64_t> stride, int64_t kernel) { return {stride.value_or(kernel)}; }

Tensor adaptive_avg_pool(OpId id, const Tensor& x, const Shape& output_size) {
  OpCall c = spatial_call(id, x);
  c.attrs.get<attrs::AdaptivePool>() = {output_size};
  return call_op(c);
}

Tensor pad_op(OpId id, const Tensor& x, const Shape& pad) {
  OpCall c = spatial_call(id, x);
  c.attrs.get<attrs::Pad>() = {pad};
  return call_op(c);
}

}  // namespace

Tensor conv3d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Shape& stride, const Shape& padding,
              const Shape& dilation, int64_t groups) {
  const OpId id = OpId::conv3d;
  OpCall c = spatial_call(id, x, weight, bias);
  c.attrs.get<attrs::Conv>() = {per_spatial_dim(stride, 3, id, "stride"), per_spatial_dim(padding, 3, id, "padding"),
                                 per_spatial_dim(dilation, 3, id, "dilation"), groups};
  return call_op(c);
}

Tensor conv_transpose1d(const Tensor& x, const Tensor& weight, const Tensor& bias, int64_t stride, int64_t padding,
                        int64_t output_padding, int64_t groups, int64_t dilation) {
  return conv_transpose(OpId::conv_transpose1d, 1, x, weight, bias, {stride}, {padding}, {output_padding}, groups,
                        {dilation});
}

Tensor conv_transpose2d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Shape& stride,
                        const Shape& padding, const Shape& output_padding, int64_t groups, const Shape& dilation) {
  return conv_transpose(OpId::conv_transpose2d, 2, x, weight, bias, stride, padding, output_padding, groups,
                        dilation);
}

Tensor conv_transpose3d(const Tensor& x, const Tensor& weight, const Tensor& bias, const Shape& stride,
                        const Shape& padding, const Shape& output_padding, int64_t groups, const Shape& dilation) {
  return conv_transpose(OpId::conv_transpose3d, 3, x, weight, bias, stride, padding, output_padding, groups,
                        dilation);
}

Tensor avg_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride, int64_t padding, bool ceil_mode,
                  bool count_include_pad) {
  return avg_pool(OpId::avg_pool1d, 1, x, {kernel_size}, stride_or_kernel(stride, kernel_size), {padding}, ceil_mode,
                  count_include_pad);
}

Tensor avg_pool2d(const Tensor& x, const Shape& kernel_size, const Shape& stride, const Shape& padding, bool ceil_mode,
                  bool count_include_pad) {
  return avg_pool(OpId::avg_pool2d, 2, x, kernel_size, stride, padding, ceil_mode, count_include_pad);
}

Tensor avg_pool3d(const Tensor& x, const Shape& kernel_size, const Shape& stride, const Shape& padding, bool ceil_mode,
                  bool count_include_pad) {
  return avg_pool(OpId::avg_pool3d, 3, x, kernel_size, stride, padding, ceil_mode, count_include_pad);
}

PoolWithIndices max_pool1d_with_indices(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride,
                                        int64_t padding, int64_t dilation, bool ceil_mode) {
  return max_pool(OpId::max_pool1d, 1, x, {kernel_size}, stride_or_kernel(stride, kernel_size), {padding},
                  {dilation}, ceil_mode);
}

PoolWithIndices max_pool2d_with_indices(const Tensor& x, const Shape& kernel_size, const Shape& stride,
                                        const Shape& padding, const Shape& dilation, bool ceil_mode) {
  return max_pool(OpId::max_pool2d, 2, x, kernel_size, stride, padding, dilation, ceil_mode);
}

Tensor max_pool1d(const Tensor& x, int64_t kernel_size, std::optional<int64_t> stride, int64_t padding,
                  int64_t dilation, bool ceil_mode) {
  return max_pool1d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode).values;
}

Tensor max_pool2d(const Tensor& x, const Shape& kernel_size, const Shape& stride, const Shape& padding,
                  const Shape& dilation, bool ceil_mode) {
  return max_pool2d_with_indices(x, kernel_size, stride, padding, dilation, ceil_mode).values;
}

Tensor adaptive_avg_pool1d(const Tensor& x, int64_t output_size) {
  return adaptive_avg_pool(OpId::adaptive_avg_pool1d, x, {output_size});
}

Tensor adaptive_avg_pool2d(const Tensor& x, const Shape& output_size) {
  return adaptive_avg_pool(OpId::adaptive_avg_pool2d, x, per_spatial_dim(output_size, 2, OpId::adaptive_avg_pool2d,
                                                                          "output_size"));
}

Tensor constant_pad_nd(const Tensor& x, const Shape& pad, const Scalar& value) {
  OpCall c = spatial_call(OpId::constant_pad_nd, x);
  c.attrs.get<attrs::ConstantPad>() = {pad, value};
  return call_op(c);
}

Tensor reflection_pad1d(const Tensor& x, const Shape& pad) { return pad_op(OpId::reflection_pad1d, x, pad); }
Tensor reflection_pad2d(const Tensor& x, const Shape& pad) { return pad_op(OpId::reflection_pad2d, x, pad); }
Tensor replication_pad1d(const Tensor& x, const Shape& pad) { return pad_op(OpId::replication_pad1d, x, pad); }
Tensor replication_pad2d(const Tensor& x, const Shape& pad) { return pad_op(OpId::replication_pad2d, x, pad); }

Tensor pad(const Tensor& x, const Shape& pad, std::string_view mode, std::optional<double> value) {
  if (mode == "constant") return constant_pad_nd(x, pad, value.value_or(0.0));
  MIXT_CHECK(!value.has_value(), "pad", "a value is for mode \"constant\" only (mode \"{}\")", mode);
  MIXT_CHECK(mode == "reflect" || mode == "replicate", "pad",
             "mode must be \"constant\", \"reflect\" or \"replicate\" (got \"{}\")", mode);
  MIXT_CHECK(pad.size() == 2 || pad.size() == 4, "pad", "mode \"{}\" pads 1 or 2 dims: 2 or 4 values, got {}", mode,
             pad);
  if (mode == "reflect") return pad.size() == 2 ? reflection_pad1d(x, pad) : reflection_pad2d(x, pad);
  return pad.size() == 2 ? replication_pad1d(x, pad) : replication_pad2d(x, pad);
}

Tensor upsample_nearest2d(const Tensor& x, const Shape& output_size, std::optional<double> scale_h,
                          std::optional<double> scale_w) {
  OpCall c = spatial_call(OpId::upsample_nearest2d, x);
  c.attrs.get<attrs::Upsample>() = {output_size, scale_h, scale_w, false};
  return call_op(c);
}

Tensor upsample_bilinear2d(const Tensor& x, const Shape& output_size, bool align_corners, std::optional<double> scale_h,
                           std::optional<double> scale_w) {
  OpCall c = spatial_call(OpId::upsample_bilinear2d, x);
  c.attrs.get<attrs::Upsample>() = {output_size, scale_h, scale_w, align_corners};
  return call_op(c);
}

Tensor interpolate(const Tensor& x, const Shape& size, const std::vector<double>& scale_factor, std::string_view mode,
                   std::optional<bool> align_corners) {
  MIXT_CHECK(x.defined(), "interpolate", "the input is undefined");
  const bool nearest = mode == "nearest";
  MIXT_CHECK(nearest || mode == "linear" || mode == "bilinear", "interpolate",
             "mode must be \"nearest\", \"linear\" or \"bilinear\" (got \"{}\")", mode);
  MIXT_CHECK(!(nearest && align_corners.has_value()), "interpolate", "align_corners is for the linear modes only");
  const int rank = static_cast<int>(x.dim()) - 2;
  MIXT_CHECK(rank == 1 || rank == 2, "interpolate", "expected a 3-D [N, C, W] or 4-D [N, C, H, W] input, got shape {}",
             x.sizes());
  MIXT_CHECK(nearest || (mode == "linear") == (rank == 1), "interpolate",
             "mode \"{}\" takes a {}-D input, got shape {}", mode, mode == "linear" ? 3 : 4, x.sizes());
  MIXT_CHECK(size.empty() != scale_factor.empty(), "interpolate", "give either a size or a scale_factor, not {}",
             size.empty() ? "neither" : "both");
  Shape out;
  std::vector<std::optional<double>> scales(2);
  if (!size.empty()) {
    out = size.size() == 1 ? Shape::filled(rank, size[0]) : size;
    MIXT_CHECK(out.size() == rank, "interpolate", "expected {} sizes (or one), got {}", rank, size);
  } else {
    MIXT_CHECK(scale_factor.size() == 1 || scale_factor.size() == static_cast<size_t>(rank), "interpolate",
               "expected {} scale factors (or one), got {}", rank, scale_factor.size());
    for (int i = 0; i < rank; ++i) {
      const double s = scale_factor[scale_factor.size() == 1 ? 0 : i];
      MIXT_CHECK(s > 0 && std::isfinite(s), "interpolate", "scale factors must be positive and finite, got {}", s);
      const double n = std::floor(static_cast<double>(x.size(2 + i)) * s);
      // Checked before the conversion: a double beyond int64's range does not convert (UB).
      MIXT_CHECK(n <= 0x1p62, "interpolate", "scale factor {} makes dim {} of shape {} too large ({})", s, 2 + i,
                 x.sizes(), n);
      out.push_back(static_cast<int64_t>(n));
      scales[2 - rank + i] = s;
    }
  }
  // 1-D inputs run as 2-D ones of height 1.
  const Tensor x4 = rank == 1 ? x.unsqueeze(2) : x;
  const Shape out2 = rank == 1 ? Shape{1, out[0]} : out;
  const Tensor y = nearest ? upsample_nearest2d(x4, out2, scales[0], scales[1])
                           : upsample_bilinear2d(x4, out2, align_corners.value_or(false), scales[0], scales[1]);
  return rank == 1 ? y.squeeze(2) : y;
}

Tensor grid_sample(const Tensor& input, const Tensor& grid, std::string_view mode, std::string_view padding_mode,
                   bool align_corners) {
  MIXT_CHECK(mode == "bilinear" || mode == "nearest", "grid_sample", "mode must be \"bilinear\" or \"nearest\" (got \"{}\")",
             mode);
  MIXT_CHECK(padding_mode == "zeros" || padding_mode == "border", "grid_sample",
             "padding_mode must be \"zeros\" or \"border\" (got \"{}\")", padding_mode);
  OpCall c = spatial_call(OpId::grid_sampler_2d, input, grid);
  c.attrs.get<attrs::GridSample>() = {mode == "nearest" ? 1 : 0, padding_mode == "border" ? 1 : 0, align_corners};
  return call_op(c);
}

}  // namespace mixt::nn::functional
