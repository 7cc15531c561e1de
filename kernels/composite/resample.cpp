// Resampling composites: upsample_nearest2d and upsample_bilinear2d (index_select of
// the source rows and columns PyTorch's kernels pick, with their weights), and
// grid_sampler_2d (gather of the corner pixels of each grid point). Positions compute in
// float32 (float64 for float64 inputs), as PyTorch's do; narrow floats round once at the end.
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/composite/helpers.h>
#include <mixt/kernels/composite/spatial.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::composite {
namespace {

void check_upsample(const OpCall& c, const Tensor& x) {
  check_floating(c, x, "input");
  const Shape& out = c.attrs.get<attrs::Upsample>().output_size;
  MIXT_CHECK_OP(x.dim() == 4, c, "expected an input [N, C, H, W], got shape {}", x.sizes());
  MIXT_CHECK_OP(out.size() == 2 && out[0] > 0 && out[1] > 0, c, "expected 2 positive output sizes, got {}", out);
  MIXT_CHECK_OP(x.size(2) > 0 && x.size(3) > 0, c, "the input's spatial sizes (shape {}) must be positive", x.sizes());
}

// The factor from output to input positions: 1 / scale when the caller gave a scale, else in / out.
double source_scale(int64_t in, int64_t out, std::optional<double> scale) {
  return scale.has_value() && *scale > 0 ? 1.0 / *scale : static_cast<double>(in) / static_cast<double>(out);
}

// Output positions 0 .. out - 1 in the compute type.
Tensor positions(int64_t out, ScalarType compute, Device device) {
  return arange(out, {.dtype = compute, .device = device});
}

// nearest: source index min(floor(out_index * scale), in - 1), the product in float32; as PyTorch's,
// an unchanged size copies and a doubled one halves whatever the scale.
Tensor nearest_indices(int64_t in, int64_t out, std::optional<double> scale, Device device) {
  const TensorOptions index{.dtype = kInt64, .device = device};
  if (out == in) return arange(out, index);
  if (out == 2 * in) return div(arange(out, index), 2, "floor");
  const auto s = static_cast<float>(source_scale(in, out, scale));
  return clamp_max(floor(mul(positions(out, kFloat32, device), s)).to(kInt64), in - 1);
}

void upsample_nearest_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::Upsample>();
  const Tensor& x = c.in[0];
  check_upsample(c, x);
  const Tensor rows = index_select(x, 2, nearest_indices(x.size(2), a.output_size[0], a.scale_h, x.device()));
  c.out[0] = index_select(rows, 3, nearest_indices(x.size(3), a.output_size[1], a.scale_w, x.device()));
}

// The two source indices and weights of each output position along one dim (PyTorch's
// area_pixel_compute_source_index and its linear weights).
struct LinearTaps {
  Tensor lo, hi, w_lo, w_hi;
};

LinearTaps linear_taps(int64_t in, int64_t out, bool align_corners, std::optional<double> scale, ScalarType compute,
                       Device device) {
  const Tensor at = positions(out, compute, device);
  Tensor src;
  if (align_corners) {
    src = mul(at, out > 1 ? static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0);
  } else {
    src = clamp_min(sub(mul(add(at, 0.5), source_scale(in, out, scale)), 0.5), 0.0);
  }
  const Tensor base = floor(src);
  const Tensor lo = clamp_max(base.to(kInt64), in - 1);
  const Tensor w_hi = clamp_max(sub(src, base), 1.0);
  return {lo, clamp_max(add(lo, 1), in - 1), sub(1.0, w_hi), w_hi};
}

// x interpolated along dim d by the taps (weights broadcast along the dims after d).
Tensor interpolate_dim(const Tensor& x, int64_t d, const LinearTaps& t) {
  const Shape along = d == 2 ? Shape{-1, 1} : Shape{-1};
  return add(mul(index_select(x, d, t.lo), reshape(t.w_lo, along)),
             mul(index_select(x, d, t.hi), reshape(t.w_hi, along)));
}

void upsample_bilinear_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::Upsample>();
  const Tensor x = up(c.in[0]);
  check_upsample(c, x);
  const ScalarType compute = x.dtype();
  const LinearTaps w = linear_taps(x.size(3), a.output_size[1], a.align_corners, a.scale_w, compute, x.device());
  const LinearTaps h = linear_taps(x.size(2), a.output_size[0], a.align_corners, a.scale_h, compute, x.device());
  finish(c, interpolate_dim(interpolate_dim(x, 3, w), 2, h), c.in[0].dtype());
}

// A grid coordinate in [-1, 1] as a pixel position along a dim of `size` pixels; with border
// padding, clipped to [0, size - 1].
Tensor unnormalize(const Tensor& g, int64_t size, bool align_corners, bool border) {
  const auto n = static_cast<double>(size);
  const Tensor p = align_corners ? mul(add(g, 1.0), (n - 1) / 2) : div(sub(mul(add(g, 1.0), n), 1.0), 2.0);
  return border ? clamp(p, 0.0, n - 1) : p;
}

// The values of input [N, C, H * W] at integer positions (x, y) [N, L] (zero where outside),
// times `weight` [N, L]: [N, C, L].
Tensor read_corner(const Tensor& flat, const Tensor& x, const Tensor& y, const Tensor& weight, int64_t h, int64_t w) {
  const Tensor inside = logical_and(logical_and(ge(x, 0.0), le(x, static_cast<double>(w - 1))),
                                    logical_and(ge(y, 0.0), le(y, static_cast<double>(h - 1))));
  const Tensor xi = clamp(x, 0.0, static_cast<double>(w - 1)).to(kInt64);
  const Tensor yi = clamp(y, 0.0, static_cast<double>(h - 1)).to(kInt64);
  const Tensor index = unsqueeze(add(mul(yi, w), xi), 1);  // [N, 1, L]
  const Tensor values = gather(flat, 2, expand(index, {flat.size(0), flat.size(1), index.size(2)}));
  return mul(values, unsqueeze(where(inside, weight, Scalar(0.0)), 1));
}

void grid_sampler_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::GridSample>();
  const Tensor input = up(c.in[0]), grid = up(c.in[1]);
  check_floating(c, input, "input");
  MIXT_CHECK_OP(c.in[0].dtype() == c.in[1].dtype(), c, "input ({}) and grid ({}) must have one dtype",
                c.in[0].dtype(), c.in[1].dtype());
  MIXT_CHECK_OP(input.dim() == 4 && grid.dim() == 4 && grid.size(3) == 2 && grid.size(0) == input.size(0), c,
                "expected an input [N, C, H, W] and a grid [N, H_out, W_out, 2], got shapes {} and {}", input.sizes(),
                grid.sizes());
  MIXT_CHECK_OP(input.size(2) > 0 && input.size(3) > 0, c, "the input's spatial sizes (shape {}) must be positive",
                input.sizes());
  MIXT_CHECK_OP((a.interpolation_mode == 0 || a.interpolation_mode == 1) && (a.padding_mode == 0 || a.padding_mode == 1),
                c, "interpolation_mode must be 0 (bilinear) or 1 (nearest) and padding_mode 0 (zeros) or 1 (border), "
                "got {} and {}", a.interpolation_mode, a.padding_mode);
  const int64_t n = input.size(0), h = input.size(2), w = input.size(3);
  const Tensor points = reshape(grid, {n, -1, 2});  // [N, L, 2]
  const Tensor x = unnormalize(select(points, 2, 0), w, a.align_corners, a.padding_mode == 1);
  const Tensor y = unnormalize(select(points, 2, 1), h, a.align_corners, a.padding_mode == 1);
  const Tensor flat = reshape(input, {n, input.size(1), h * w});
  Tensor out;
  if (a.interpolation_mode == 1) {
    out = read_corner(flat, round(x), round(y), ones_like(x), h, w);  // round half to even, as nearbyint
  } else {
    const Tensor x0 = floor(x), y0 = floor(y), x1 = add(x0, 1.0), y1 = add(y0, 1.0);
    const Tensor east = sub(x, x0), west = sub(x1, x), south = sub(y, y0), north = sub(y1, y);
    out = add(add(read_corner(flat, x0, y0, mul(west, north), h, w), read_corner(flat, x1, y0, mul(east, north), h, w)),
              add(read_corner(flat, x0, y1, mul(west, south), h, w), read_corner(flat, x1, y1, mul(east, south), h, w)));
  }
  finish(c, reshape(out, {n, input.size(1), grid.size(1), grid.size(2)}), c.in[0].dtype());
}

}  // namespace

void register_resample_kernels() {
  register_composite(OpId::upsample_nearest2d, upsample_nearest_kernel);
  register_composite(OpId::upsample_bilinear2d, upsample_bilinear_kernel);
  register_composite(OpId::grid_sampler_2d, grid_sampler_kernel);
}

}  // namespace mixt::composite
