// Pooling composites: avg_pool1d/2d/3d and max_pool1d/2d take the windows of the
// padded input (im2col, or strided slices for 3-D) and reduce each; adaptive_avg_pool
// multiplies by averaging matrices. Narrow floats compute in float32 and round once.
#include <limits>

#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/conv_geometry.h>
#include <mixt/kernels/composite/helpers.h>
#include <mixt/kernels/composite/spatial.h>
#include <mixt/runtime/ops/nn.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::composite {
namespace {

namespace F = nn::functional;

// The geometry of a pooling call along each spatial dim.
struct PoolGeometry {
  Shape kernel, stride, padding, dilation, in, out;
  // The padding after each dim that makes the windows cover exactly `out` positions (negative: a
  // crop; ceil_mode can need more than `padding`, or less).
  Shape after() const {
    Shape a;
    for (int i = 0; i < kernel.size(); ++i)
      a.push_back((out[i] - 1) * stride[i] + dilation[i] * (kernel[i] - 1) + 1 - in[i] - padding[i]);
    return a;
  }
};

PoolGeometry pool_geometry(const OpCall& c, const Tensor& x, int rank, const Shape& kernel, const Shape& stride,
                           const Shape& padding, const Shape& dilation, bool ceil_mode) {
  check_floating(c, x, "input");
  MIXT_CHECK_OP(kernel.size() == rank && stride.size() == rank && padding.size() == rank && dilation.size() == rank,
                c, "expected kernel, stride, padding and dilation with {} values each, got {}, {}, {}, {}", rank,
                kernel, stride, padding, dilation);
  PoolGeometry g{kernel, stride, padding, dilation, {}, {}};
  for (int i = 0; i < rank; ++i) {
    g.in.push_back(x.size(2 + i));
    g.out.push_back(pool_output_size(c, g.in[i], kernel[i], stride[i], padding[i], dilation[i], ceil_mode));
  }
  return g;
}

// The windows of xp (already padded: no padding of their own): [N, C, K, L].
Tensor windows(const OpCall& c, const Tensor& xp, const PoolGeometry& g) {
  const Shape none = Shape::filled(g.kernel.size(), 0);
  const Tensor cols = g.kernel.size() <= 2 ? F::im2col(xp, g.kernel, g.stride, none, g.dilation)
                                           : unfold_windows(c, xp, g.kernel, g.stride, none, g.dilation);
  return reshape(cols, {xp.size(0), xp.size(1), g.kernel.numel(), g.out.numel()});
}

// [N, C, L] back to [N, C, *out], without the batch dim when the input had none.
void finish_pool(OpCall& c, int i, const Tensor& y, const PoolGeometry& g, ScalarType dtype) {
  Shape sizes{y.size(0), y.size(1)};
  for (int64_t s : g.out) sizes.push_back(s);
  const Tensor r = reshape(y, sizes);
  c.out[i] = (c.in[0].dim() == r.dim() ? r : squeeze(r, {0})).to(dtype);
}

// The mean of each window; the divisor counts the window's positions inside the padded input
// (count_include_pad) or inside the input.
template <int Rank>
void avg_pool_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::AvgPool>();
  const Tensor x = up(batched(c, c.in[0], Rank));
  const PoolGeometry g =
      pool_geometry(c, x, Rank, a.kernel, a.stride, a.padding, Shape::filled(Rank, 1), a.ceil_mode);
  const Shape after = g.after();
  const Tensor sums = sum(windows(c, F::constant_pad_nd(x, pad_pairs(g.padding, after)), g), {2});
  // The divisors from a mask of ones over what counts.
  Shape mask_sizes{1, 1}, mask_before, mask_after;
  for (int i = 0; i < Rank; ++i) {
    const int64_t counted = a.count_include_pad ? g.in[i] + 2 * g.padding[i] : g.in[i];
    mask_sizes.push_back(counted);
    mask_before.push_back(a.count_include_pad ? 0 : g.padding[i]);
    mask_after.push_back(a.count_include_pad ? after[i] - g.padding[i] : after[i]);
  }
  const Tensor mask = ones(mask_sizes, {.dtype = x.dtype(), .device = x.device()});
  const Tensor counts = sum(windows(c, F::constant_pad_nd(mask, pad_pairs(mask_before, mask_after)), g), {2});
  finish_pool(c, 0, div(sums, counts), g, c.in[0].dtype());
}

// The flat index (into one input plane) of each window tap: [K, L], int64.
Tensor tap_positions(const PoolGeometry& g, Device device) {
  const TensorOptions o{.dtype = kInt64, .device = device};
  Tensor flat;
  for (int i = 0; i < g.kernel.size(); ++i) {
    // position = out * stride - padding + tap * dilation: [kernel, out]
    const Tensor taps = mul(arange(g.kernel[i], o), g.dilation[i]);
    const Tensor starts = sub(mul(arange(g.out[i], o), g.stride[i]), g.padding[i]);
    const Tensor pos = add(unsqueeze(taps, 1), unsqueeze(starts, 0));
    if (!flat.defined()) {
      flat = pos;
      continue;
    }
    // [K0, 1, L0, 1] * W + [1, K1, 1, L1] -> [K0, K1, L0, L1]
    flat = add(mul(unsqueeze(unsqueeze(flat, 1), 3), g.in[i]), unsqueeze(unsqueeze(pos, 0), 2));
  }
  return reshape(flat, {g.kernel.numel(), g.out.numel()});
}

// The maximum of each window (padding reads -inf; the first maximum, or the first NaN, wins) and
// its flat index in the input plane.
template <int Rank>
void max_pool_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::MaxPool>();
  const Tensor x = up(batched(c, c.in[0], Rank));  // float8 has no -inf to pad with
  const PoolGeometry g = pool_geometry(c, x, Rank, a.kernel, a.stride, a.padding, a.dilation, a.ceil_mode);
  const Tensor xp = F::constant_pad_nd(x, pad_pairs(g.padding, g.after()), -std::numeric_limits<double>::infinity());
  const Tensor w = windows(c, xp, g);  // [N, C, K, L]
  const Tensor pick = argmax(w, 2, /*keepdim=*/true);
  finish_pool(c, 0, squeeze(gather(w, 2, pick), {2}), g, c.in[0].dtype());
  const Tensor taps = expand(reshape(tap_positions(g, x.device()), {1, 1, g.kernel.numel(), g.out.numel()}), w.sizes());
  finish_pool(c, 1, squeeze(gather(taps, 2, pick), {2}), g, kInt64);
}

// The averaging matrix [out, in] of adaptive pooling: row i averages [floor(i in / out),
// ceil((i + 1) in / out)).
Tensor averaging_matrix(int64_t in, int64_t out, ScalarType dtype, Device device) {
  const TensorOptions o{.dtype = kInt64, .device = device};
  const Tensor i = arange(out, o);
  const Tensor start = div(mul(i, in), out, "floor");
  const Tensor end = div(add(mul(add(i, 1), in), out - 1), out, "floor");
  const Tensor j = unsqueeze(arange(in, o), 0);
  const Tensor inside = logical_and(ge(j, unsqueeze(start, 1)), lt(j, unsqueeze(end, 1)));
  const Tensor counts = unsqueeze(sub(end, start), 1).to(dtype);
  return div(inside.to(dtype), counts);
}

template <int Rank>
void adaptive_avg_pool_kernel(OpCall& c, DispatchKeySet) {
  const Shape& out = c.attrs.get<attrs::AdaptivePool>().output_size;
  const Tensor x = up(c.in[0]);
  check_floating(c, x, "input");
  MIXT_CHECK_OP(x.dim() == Rank + 1 || x.dim() == Rank + 2, c,
                "expected a {}-D (unbatched) or {}-D (batched) input, got shape {}", Rank + 1, Rank + 2, x.sizes());
  MIXT_CHECK_OP(out.size() == Rank, c, "expected {} output sizes, got {}", Rank, out);
  Tensor y = x;
  for (int i = 0; i < Rank; ++i) {
    const int64_t d = x.dim() - Rank + i, in = x.size(d);
    MIXT_CHECK_OP(out[i] > 0 && in > 0, c, "the output sizes {} and the input's spatial sizes (shape {}) must be positive",
                  out, x.sizes());
    // Pool dim d: move it last, multiply by the transposed averaging matrix, move it back.
    const Tensor m = averaging_matrix(in, out[i], x.dtype(), x.device());
    y = transpose(matmul(transpose(y, d, -1), transpose(m, 0, 1)), d, -1);
  }
  finish(c, y, c.in[0].dtype());
}

}  // namespace

void register_pooling_kernels() {
  register_composite(OpId::avg_pool1d, avg_pool_kernel<1>);
  register_composite(OpId::avg_pool2d, avg_pool_kernel<2>);
  register_composite(OpId::avg_pool3d, avg_pool_kernel<3>);
  register_composite(OpId::max_pool1d, max_pool_kernel<1>);
  register_composite(OpId::max_pool2d, max_pool_kernel<2>);
  register_composite(OpId::adaptive_avg_pool1d, adaptive_avg_pool_kernel<1>);
  register_composite(OpId::adaptive_avg_pool2d, adaptive_avg_pool_kernel<2>);
}

}  // namespace mixt::composite
