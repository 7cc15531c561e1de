// Spatial references: see reference_spatial.h.
#include "reference_spatial.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace mixt::testing::ref {
namespace {

// The spatial sizes of a [N, C, *spatial] tensor.
Sizes spatial_of(const Sizes& s) { return Sizes(s.begin() + 2, s.end()); }

Sizes with_spatial(int64_t n, int64_t c, const Sizes& spatial) {
  Sizes s{n, c};
  s.insert(s.end(), spatial.begin(), spatial.end());
  return s;
}

// The flat position of `at` in a plane of `sizes`, or -1 when outside.
int64_t plane_offset(const Sizes& at, const Sizes& sizes) {
  int64_t off = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (at[i] < 0 || at[i] >= sizes[i]) return -1;
    off = off * sizes[i] + at[i];
  }
  return off;
}

// A pooling output size, as PyTorch's pooling_output_shape.
int64_t pool_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1;
  int64_t out = (ceil_mode ? (span + s - 1) / s : span / s) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

}  // namespace

Ref conv_nd(const Ref& x, const Ref& w, const Vec& bias, const Sizes& stride, const Sizes& padding,
            const Sizes& dilation, int64_t groups) {
  const Sizes in = spatial_of(x.sizes), k = spatial_of(w.sizes);
  const int64_t N = x.sizes[0], C = x.sizes[1], O = w.sizes[0], cg = C / groups, og = O / groups;
  Sizes out;
  for (size_t i = 0; i < in.size(); ++i)
    out.push_back((in[i] + 2 * padding[i] - dilation[i] * (k[i] - 1) - 1) / stride[i] + 1);
  const int64_t plane = numel_of(in), kn = numel_of(k), on = numel_of(out);
  Ref y{with_spatial(N, O, out), Vec(static_cast<size_t>(N * O * on))};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t q = 0; q < on; ++q) {
        const Sizes op = unravel(q, out);
        double acc = bias.empty() ? 0.0 : bias[o];
        for (int64_t c = 0; c < cg; ++c)
          for (int64_t t = 0; t < kn; ++t) {
            const Sizes kp = unravel(t, k);
            Sizes at(in.size());
            for (size_t i = 0; i < in.size(); ++i) at[i] = op[i] * stride[i] - padding[i] + kp[i] * dilation[i];
            const int64_t off = plane_offset(at, in);
            if (off < 0) continue;
            const int64_t ci = (o / og) * cg + c;
            acc += x.v[(n * C + ci) * plane + off] * w.v[(o * cg + c) * kn + t];
          }
        y.v[(n * O + o) * on + q] = acc;
      }
  return y;
}

Ref conv_transpose_nd(const Ref& x, const Ref& w, const Vec& bias, const Sizes& stride, const Sizes& padding,
                      const Sizes& output_padding, const Sizes& dilation, int64_t groups) {
  const Sizes in = spatial_of(x.sizes), k = spatial_of(w.sizes);
  const int64_t N = x.sizes[0], C = x.sizes[1], cg = C / groups, og = w.sizes[1], O = og * groups;
  Sizes out;
  for (size_t i = 0; i < in.size(); ++i)
    out.push_back((in[i] - 1) * stride[i] - 2 * padding[i] + dilation[i] * (k[i] - 1) + output_padding[i] + 1);
  const int64_t plane = numel_of(in), kn = numel_of(k), on = numel_of(out);
  Ref y{with_spatial(N, O, out), Vec(static_cast<size_t>(N * O * on))};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t q = 0; q < on; ++q) y.v[(n * O + o) * on + q] = bias.empty() ? 0.0 : bias[o];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < plane; ++p) {
        const Sizes ip = unravel(p, in);
        for (int64_t oo = 0; oo < og; ++oo)
          for (int64_t t = 0; t < kn; ++t) {
            const Sizes kp = unravel(t, k);
            Sizes at(in.size());
            for (size_t i = 0; i < in.size(); ++i) at[i] = ip[i] * stride[i] - padding[i] + kp[i] * dilation[i];
            const int64_t off = plane_offset(at, out);
            if (off < 0) continue;
            const int64_t o = (c / cg) * og + oo;
            y.v[(n * O + o) * on + off] += x.v[(n * C + c) * plane + p] * w.v[(c * og + oo) * kn + t];
          }
      }
  return y;
}

Ref avg_pool_nd(const Ref& x, const Window& win, bool ceil_mode, bool count_include_pad) {
  const Sizes in = spatial_of(x.sizes);
  const int64_t planes = x.sizes[0] * x.sizes[1], plane = numel_of(in);
  Sizes out;
  for (size_t i = 0; i < in.size(); ++i)
    out.push_back(pool_out(in[i], win.kernel[i], win.stride[i], win.padding[i], 1, ceil_mode));
  const int64_t on = numel_of(out);
  Ref y{with_spatial(x.sizes[0], x.sizes[1], out), Vec(static_cast<size_t>(planes * on))};
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t q = 0; q < on; ++q) {
      const Sizes op = unravel(q, out);
      // The window [start, end) clipped to the padded input, then to the input.
      Sizes lo(in.size()), hi(in.size());
      double padded_count = 1, inner_count = 1;
      for (size_t i = 0; i < in.size(); ++i) {
        const int64_t start = op[i] * win.stride[i] - win.padding[i];
        const int64_t end = std::min(start + win.kernel[i], in[i] + win.padding[i]);
        padded_count *= static_cast<double>(end - start);
        lo[i] = std::max<int64_t>(start, 0);
        hi[i] = std::min(end, in[i]);
        inner_count *= static_cast<double>(hi[i] - lo[i]);
      }
      double acc = 0;
      for (int64_t p = 0; p < plane; ++p) {
        const Sizes ip = unravel(p, in);
        bool inside = true;
        for (size_t i = 0; i < in.size(); ++i) inside = inside && ip[i] >= lo[i] && ip[i] < hi[i];
        if (inside) acc += x.v[pl * plane + p];
      }
      y.v[pl * on + q] = acc / (count_include_pad ? padded_count : inner_count);
    }
  return y;
}

Ref max_pool_nd(const Ref& x, const Window& win, bool ceil_mode, bool indices) {
  const Sizes in = spatial_of(x.sizes);
  const int64_t planes = x.sizes[0] * x.sizes[1], plane = numel_of(in), kn = numel_of(win.kernel);
  Sizes out;
  for (size_t i = 0; i < in.size(); ++i)
    out.push_back(pool_out(in[i], win.kernel[i], win.stride[i], win.padding[i], win.dilation[i], ceil_mode));
  const int64_t on = numel_of(out);
  Ref y{with_spatial(x.sizes[0], x.sizes[1], out), Vec(static_cast<size_t>(planes * on))};
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t q = 0; q < on; ++q) {
      const Sizes op = unravel(q, out);
      double best = -std::numeric_limits<double>::infinity();
      int64_t where = -1;
      for (int64_t t = 0; t < kn; ++t) {
        const Sizes kp = unravel(t, win.kernel);
        Sizes at(in.size());
        for (size_t i = 0; i < in.size(); ++i) at[i] = op[i] * win.stride[i] - win.padding[i] + kp[i] * win.dilation[i];
        const int64_t off = plane_offset(at, in);
        if (off < 0) continue;
        const double v = x.v[pl * plane + off];
        if (where < 0 || v > best || (std::isnan(v) && !std::isnan(best))) best = v, where = off;
      }
      y.v[pl * on + q] = indices ? static_cast<double>(where) : best;
    }
  return y;
}

Ref adaptive_avg_pool_nd(const Ref& x, const Sizes& out) {
  const Sizes in = spatial_of(x.sizes);
  const int64_t planes = x.sizes[0] * x.sizes[1], plane = numel_of(in), on = numel_of(out);
  Ref y{with_spatial(x.sizes[0], x.sizes[1], out), Vec(static_cast<size_t>(planes * on))};
  for (int64_t pl = 0; pl < planes; ++pl)
    for (int64_t q = 0; q < on; ++q) {
      const Sizes op = unravel(q, out);
      double acc = 0, count = 0;
      for (int64_t p = 0; p < plane; ++p) {
        const Sizes ip = unravel(p, in);
        bool inside = true;
        for (size_t i = 0; i < in.size(); ++i) {
          const int64_t start = op[i] * in[i] / out[i], end = ((op[i] + 1) * in[i] + out[i] - 1) / out[i];
          inside = inside && ip[i] >= start && ip[i] < end;
        }
        if (inside) acc += x.v[pl * plane + p], count += 1;
      }
      y.v[pl * on + q] = acc / count;
    }
  return y;
}

Ref pad_nd(const Ref& x, const Sizes& pads, char mode, double value) {
  Sizes out = x.sizes;
  const size_t dims = x.sizes.size();
  for (size_t j = 0; j < pads.size() / 2; ++j) out[dims - 1 - j] += pads[2 * j] + pads[2 * j + 1];
  Ref y{out, Vec(static_cast<size_t>(numel_of(out)))};
  for (int64_t q = 0; q < numel_of(out); ++q) {
    Sizes at = unravel(q, out);
    bool outside = false;
    for (size_t j = 0; j < pads.size() / 2; ++j) {
      const size_t d = dims - 1 - j;
      const int64_t n = x.sizes[d];
      int64_t i = at[d] - pads[2 * j];
      if (mode == 'r') {
        if (i < 0) i = -i;
        if (i >= n) i = 2 * (n - 1) - i;
      } else if (mode == 'e') {
        i = std::clamp<int64_t>(i, 0, n - 1);
      } else if (i < 0 || i >= n) {
        outside = true;
      }
      at[d] = i;
    }
    y.v[q] = outside ? value : x.v[ravel(at, x.sizes)];
  }
  return y;
}

Ref upsample_nearest2d(const Ref& x, int64_t oh, int64_t ow, std::optional<double> scale_h,
                       std::optional<double> scale_w) {
  // PyTorch's nearest_idx: the scale and the product in float.
  auto source = [](int64_t o, int64_t in, int64_t out, std::optional<double> scale) -> int64_t {
    if (out == in) return o;
    if (out == 2 * in) return o / 2;
    const float s = scale && *scale > 0 ? static_cast<float>(1.0 / *scale)
                                        : static_cast<float>(in) / static_cast<float>(out);
    return std::min(static_cast<int64_t>(std::floor(static_cast<float>(o) * s)), in - 1);
  };
  const int64_t planes = x.sizes[0] * x.sizes[1], H = x.sizes[2], W = x.sizes[3];
  Ref y{{x.sizes[0], x.sizes[1], oh, ow}, Vec(static_cast<size_t>(planes * oh * ow))};
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j)
        y.v[(p * oh + i) * ow + j] = x.v[(p * H + source(i, H, oh, scale_h)) * W + source(j, W, ow, scale_w)];
  return y;
}

Ref upsample_bilinear2d(const Ref& x, int64_t oh, int64_t ow, bool align_corners, std::optional<double> scale_h,
                        std::optional<double> scale_w) {
  struct Tap {
    int64_t lo, hi;
    double w_hi;
  };
  auto tap = [&](int64_t o, int64_t in, int64_t out, std::optional<double> scale) {
    double src;
    if (align_corners) {
      src = out > 1 ? static_cast<double>(o) * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
    } else {
      const double s = scale && *scale > 0 ? 1.0 / *scale : static_cast<double>(in) / static_cast<double>(out);
      src = std::max(s * (static_cast<double>(o) + 0.5) - 0.5, 0.0);
    }
    const auto lo = std::min(static_cast<int64_t>(std::floor(src)), in - 1);
    return Tap{lo, std::min(lo + 1, in - 1), std::min(src - std::floor(src), 1.0)};
  };
  const int64_t planes = x.sizes[0] * x.sizes[1], H = x.sizes[2], W = x.sizes[3];
  Ref y{{x.sizes[0], x.sizes[1], oh, ow}, Vec(static_cast<size_t>(planes * oh * ow))};
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t i = 0; i < oh; ++i)
      for (int64_t j = 0; j < ow; ++j) {
        const Tap r = tap(i, H, oh, scale_h), c = tap(j, W, ow, scale_w);
        auto at = [&](int64_t h, int64_t w) { return x.v[(p * H + h) * W + w]; };
        y.v[(p * oh + i) * ow + j] = (1 - r.w_hi) * ((1 - c.w_hi) * at(r.lo, c.lo) + c.w_hi * at(r.lo, c.hi)) +
                                     r.w_hi * ((1 - c.w_hi) * at(r.hi, c.lo) + c.w_hi * at(r.hi, c.hi));
      }
  return y;
}

Ref grid_sample2d(const Ref& x, const Ref& grid, bool nearest, bool border, bool align_corners) {
  const int64_t N = x.sizes[0], C = x.sizes[1], H = x.sizes[2], W = x.sizes[3];
  const int64_t OH = grid.sizes[1], OW = grid.sizes[2];
  auto pixel = [&](double g, int64_t size) {
    const double s = static_cast<double>(size);
    const double p = align_corners ? (g + 1) / 2 * (s - 1) : ((g + 1) * s - 1) / 2;
    return border ? std::clamp(p, 0.0, s - 1) : p;
  };
  Ref y{{N, C, OH, OW}, Vec(static_cast<size_t>(N * C * OH * OW))};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        const int64_t g = ((n * OH + i) * OW + j) * 2;
        const double px = pixel(grid.v[g], W), py = pixel(grid.v[g + 1], H);
        for (int64_t c = 0; c < C; ++c) {
          auto read = [&](double xx, double yy) {
            if (xx < 0 || yy < 0 || xx > static_cast<double>(W - 1) || yy > static_cast<double>(H - 1)) return 0.0;
            return x.v[((n * C + c) * H + static_cast<int64_t>(yy)) * W + static_cast<int64_t>(xx)];
          };
          double v;
          if (nearest) {
            v = read(std::nearbyint(px), std::nearbyint(py));
          } else {
            const double x0 = std::floor(px), y0 = std::floor(py), fx = px - x0, fy = py - y0;
            v = (1 - fx) * (1 - fy) * read(x0, y0) + fx * (1 - fy) * read(x0 + 1, y0) +
                (1 - fx) * fy * read(x0, y0 + 1) + fx * fy * read(x0 + 1, y0 + 1);
          }
          y.v[((n * C + c) * OH + i) * OW + j] = v;
        }
      }
  return y;
}

}  // namespace mixt::testing::ref
