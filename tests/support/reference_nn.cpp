// The double-loop references of reference_nn.h.
#include "reference_nn.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace mixt::testing::ref {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

size_t at(int64_t i) { return static_cast<size_t>(i); }

// Product of sizes[from..].
int64_t tail_numel(const Sizes& s, size_t from) {
  int64_t n = 1;
  for (size_t i = from; i < s.size(); ++i) n *= s[i];
  return n;
}

// Sizes seen as [outer, n, inner] around `dim`.
struct Lines {
  int64_t outer, n, inner;
};
Lines lines_along(const Sizes& s, int64_t dim) {
  const int d = wrap_dim(dim, static_cast<int64_t>(s.size()));
  Lines l{1, s.empty() ? 1 : s[at(d)], 1};
  for (int i = 0; i < d; ++i) l.outer *= s[at(i)];
  for (size_t i = at(d) + 1; i < s.size(); ++i) l.inner *= s[i];
  return l;
}

// The mean (0 with `rms`) and the biased variance about it (the mean square with `rms`) of
// the `cols` values at row.
void row_moments(const double* row, int64_t cols, bool rms, double* mean, double* var) {
  const double n = static_cast<double>(cols);
  double m = 0, v = 0;
  if (!rms) {
    for (int64_t j = 0; j < cols; ++j) m += row[j];
    m /= n;
  }
  for (int64_t j = 0; j < cols; ++j) v += (row[j] - m) * (row[j] - m);
  *mean = m;
  *var = v / n;
}

}  // namespace

// ---- softmax and normalization ----

Ref softmax(const Ref& x, int64_t dim, bool log) {
  const Sizes& s = x.sizes;
  const auto [outer, n, inner] = lines_along(s, dim);
  Ref y{s, Vec(x.v.size())};
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      auto pos = [&](int64_t j) { return at((o * n + j) * inner + i); };
      double m = -kInf, z = 0;
      for (int64_t j = 0; j < n; ++j) m = std::isnan(x.v[pos(j)]) ? kNan : std::max(m, x.v[pos(j)]);
      for (int64_t j = 0; j < n; ++j) z += std::exp(x.v[pos(j)] - m);
      for (int64_t j = 0; j < n; ++j)
        y.v[pos(j)] = log ? x.v[pos(j)] - m - std::log(z) : std::exp(x.v[pos(j)] - m) / z;
    }
  return y;
}

Vec norm_rows(const Vec& x, int64_t cols, double eps, const Vec& w, const Vec& b, bool rms) {
  Vec y(x.size());
  for (size_t r = 0; r < x.size() / at(cols); ++r) {
    const double* row = &x[r * at(cols)];
    double m = 0, v = 0;
    row_moments(row, cols, rms, &m, &v);
    for (int64_t j = 0; j < cols; ++j) {
      double o = (row[j] - m) / std::sqrt(v + eps);
      if (!w.empty()) o *= w[at(j)];
      if (!b.empty()) o += b[at(j)];
      y[r * at(cols) + at(j)] = o;
    }
  }
  return y;
}

double gelu_derivative(double x, bool tanh) {
  const double pi = std::acos(-1.0);
  if (!tanh) return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) + x * std::exp(-0.5 * x * x) / std::sqrt(2 * pi);
  const double k = std::sqrt(2 / pi), c = 0.044715, t = std::tanh(k * (x + c * x * x * x));
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * c * x * x);
}

double silu_derivative(double x) {
  const double s = 1 / (1 + std::exp(-x));
  return s * (1 + x * (1 - s));
}

Ref softmax_backward(const Ref& g, const Ref& y, int64_t dim, bool log) {
  const Sizes& s = y.sizes;
  const auto [outer, n, inner] = lines_along(s, dim);
  Ref gx{s, Vec(y.v.size())};
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t k = 0; k < inner; ++k) {
      auto pos = [&](int64_t j) { return at((o * n + j) * inner + k); };
      for (int64_t i = 0; i < n; ++i) {
        double acc = 0;  // sum over j of g_j * d y_j / d x_i
        for (int64_t j = 0; j < n; ++j) {
          const double delta = i == j ? 1.0 : 0.0;
          const double jac = log ? delta - std::exp(y.v[pos(i)]) : y.v[pos(j)] * (delta - y.v[pos(i)]);
          acc += g.v[pos(j)] * jac;
        }
        gx.v[pos(i)] = acc;
      }
    }
  return gx;
}

Ref norm_backward(const Ref& g, const Ref& x, int64_t cols, const Vec& w, double eps, bool rms, int which) {
  const size_t rows = x.v.size() / at(cols);
  const double n = static_cast<double>(cols);
  Ref out = which == 0 ? Ref{x.sizes, Vec(x.v.size())} : Ref{{cols}, Vec(at(cols), 0.0)};
  for (size_t r = 0; r < rows; ++r) {
    const double* row = &x.v[r * at(cols)];
    const double* gr = &g.v[r * at(cols)];
    double m = 0, v = 0;
    row_moments(row, cols, rms, &m, &v);
    const double rs = 1 / std::sqrt(v + eps);
    auto xhat = [&](int64_t j) { return (row[j] - m) * rs; };
    for (int64_t i = 0; i < cols; ++i) {
      if (which == 1) out.v[at(i)] += gr[i] * xhat(i);
      if (which == 2) out.v[at(i)] += gr[i];
      if (which != 0) continue;
      double acc = 0;  // sum over j of g_j w_j d xhat_j / d x_i
      for (int64_t j = 0; j < cols; ++j) {
        const double delta = i == j ? 1.0 : 0.0;
        const double jac = rs * (delta - (rms ? 0.0 : 1 / n) - xhat(i) * xhat(j) / n);
        acc += gr[j] * (w.empty() ? 1.0 : w[at(j)]) * jac;
      }
      out.v[r * at(cols) + at(i)] = acc;
    }
  }
  return out;
}

Ref layer_norm(const Ref& x, int64_t normalized, const Vec& w, const Vec& b, double eps) {
  return {x.sizes, norm_rows(x.v, normalized, eps, w, b)};
}

Ref rms_norm(const Ref& x, int64_t normalized, const Vec& w, double eps) {
  return {x.sizes, norm_rows(x.v, normalized, eps, w, {}, true)};
}

namespace {
// y * w[c] + b[c] for the channel c (dim 1) of each element of y [N, C, *].
Ref channel_affine(Ref y, const Vec& w, const Vec& b) {
  const int64_t C = y.sizes[1], inner = tail_numel(y.sizes, 2);
  for (size_t i = 0; i < y.v.size(); ++i) {
    const size_t c = at((static_cast<int64_t>(i) / inner) % C);
    if (!w.empty()) y.v[i] *= w[c];
    if (!b.empty()) y.v[i] += b[c];
  }
  return y;
}
}  // namespace

Ref group_norm(const Ref& x, int64_t groups, const Vec& w, const Vec& b, double eps) {
  const int64_t per_group = x.sizes[1] / groups * tail_numel(x.sizes, 2);
  return channel_affine({x.sizes, norm_rows(x.v, per_group, eps, {}, {})}, w, b);
}

void channel_stats(const Ref& x, Vec& mean, Vec& var) {
  const int64_t N = x.sizes[0], C = x.sizes[1], L = tail_numel(x.sizes, 2);
  mean.assign(at(C), 0.0);
  var.assign(at(C), 0.0);
  for (int64_t c = 0; c < C; ++c) {
    for (int64_t n = 0; n < N; ++n)
      for (int64_t l = 0; l < L; ++l) mean[at(c)] += x.v[at((n * C + c) * L + l)];
    mean[at(c)] /= static_cast<double>(N * L);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t l = 0; l < L; ++l) {
        const double d = x.v[at((n * C + c) * L + l)] - mean[at(c)];
        var[at(c)] += d * d;
      }
    var[at(c)] /= static_cast<double>(N * L);
  }
}

Ref batch_norm(const Ref& x, const Vec& mean, const Vec& var, const Vec& w, const Vec& b, bool training, double eps) {
  Vec m = mean, v = var;
  if (training) channel_stats(x, m, v);
  const int64_t C = x.sizes[1], inner = tail_numel(x.sizes, 2);
  Ref y = x;
  for (size_t i = 0; i < y.v.size(); ++i) {
    const size_t c = at((static_cast<int64_t>(i) / inner) % C);
    y.v[i] = (x.v[i] - m[c]) / std::sqrt(v[c] + eps);
  }
  return channel_affine(y, w, b);
}

// ---- convolution ----

namespace {
int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d) { return (in + 2 * p - d * (k - 1) - 1) / s + 1; }
}  // namespace

Ref conv2d(const Ref& x, const Ref& w, const Vec& bias, const ConvGeom& g) {
  const int64_t N = x.sizes[0], C = x.sizes[1], H = x.sizes[2], W = x.sizes[3];
  const int64_t O = w.sizes[0], Cg = w.sizes[1], KH = w.sizes[2], KW = w.sizes[3];
  const int64_t OH = out_size(H, KH, g.sh, g.ph, g.dh), OW = out_size(W, KW, g.sw, g.pw, g.dw);
  Ref y{{N, O, OH, OW}, Vec(at(N * O * OH * OW))};
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double acc = bias.empty() ? 0.0 : bias[at(o)];
          const int64_t group = o / (O / g.groups);
          for (int64_t ci = 0; ci < Cg; ++ci)
            for (int64_t kh = 0; kh < KH; ++kh)
              for (int64_t kw = 0; kw < KW; ++kw) {
                const int64_t ih = oh * g.sh - g.ph + kh * g.dh, iw = ow * g.sw - g.pw + kw * g.dw;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                acc += w.v[at(((o * Cg + ci) * KH + kh) * KW + kw)] *
                       x.v[at(((n * C + group * Cg + ci) * H + ih) * W + iw)];
              }
          y.v[at(((n * O + o) * OH + oh) * OW + ow)] = acc;
        }
  return y;
}

namespace {
// Calls f(n, c, row, block, input position or -1) for every tap of im2col's window.
template <class F>
void for_each_tap(int64_t N, int64_t C, int64_t H, int64_t W, int64_t KH, int64_t KW, const ConvGeom& g, F&& f) {
  const int64_t OH = out_size(H, KH, g.sh, g.ph, g.dh), OW = out_size(W, KW, g.sw, g.pw, g.dw);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t kh = 0; kh < KH; ++kh)
        for (int64_t kw = 0; kw < KW; ++kw)
          for (int64_t oh = 0; oh < OH; ++oh)
            for (int64_t ow = 0; ow < OW; ++ow) {
              const int64_t ih = oh * g.sh - g.ph + kh * g.dh, iw = ow * g.sw - g.pw + kw * g.dw;
              const bool inside = ih >= 0 && ih < H && iw >= 0 && iw < W;
              f(n, c, (c * KH + kh) * KW + kw, oh * OW + ow, inside ? ((n * C + c) * H + ih) * W + iw : -1);
            }
}
}  // namespace

Ref im2col(const Ref& x, int64_t KH, int64_t KW, const ConvGeom& g) {
  const int64_t N = x.sizes[0], C = x.sizes[1], H = x.sizes[2], W = x.sizes[3];
  const int64_t L = out_size(H, KH, g.sh, g.ph, g.dh) * out_size(W, KW, g.sw, g.pw, g.dw);
  Ref y{{N, C * KH * KW, L}, Vec(at(N * C * KH * KW * L), 0.0)};
  for_each_tap(N, C, H, W, KH, KW, g, [&](int64_t n, int64_t, int64_t row, int64_t block, int64_t src) {
    if (src >= 0) y.v[at((n * C * KH * KW + row) * L + block)] = x.v[at(src)];
  });
  return y;
}

Ref col2im(const Ref& cols, int64_t H, int64_t W, int64_t KH, int64_t KW, const ConvGeom& g) {
  const int64_t N = cols.sizes[0], C = cols.sizes[1] / (KH * KW), L = cols.sizes[2];
  Ref y{{N, C, H, W}, Vec(at(N * C * H * W), 0.0)};
  for_each_tap(N, C, H, W, KH, KW, g, [&](int64_t n, int64_t, int64_t row, int64_t block, int64_t dst) {
    if (dst >= 0) y.v[at(dst)] += cols.v[at((n * C * KH * KW + row) * L + block)];
  });
  return y;
}

// ---- attention and similarity ----

Ref attention(const Ref& q, const Ref& k, const Ref& v, double scale, const Ref* keep, const Ref* bias, bool causal) {
  const size_t nd = q.sizes.size();
  const int64_t L = q.sizes[nd - 2], E = q.sizes[nd - 1], S = k.sizes[nd - 2], Ev = v.sizes[nd - 1];
  const int64_t B = static_cast<int64_t>(q.v.size()) / (L * E);
  const Ref keep_ls = keep ? expand(*keep, {L, S}) : Ref{}, bias_ls = bias ? expand(*bias, {L, S}) : Ref{};
  Ref out{q.sizes, Vec(at(B * L * Ev), 0.0)};
  out.sizes.back() = Ev;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t l = 0; l < L; ++l) {
      Vec s(at(S));
      double m = -kInf;
      for (int64_t j = 0; j < S; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < E; ++e) dot += q.v[at((b * L + l) * E + e)] * k.v[at((b * S + j) * E + e)];
        s[at(j)] = dot * scale + (bias ? bias_ls.v[at(l * S + j)] : 0.0);
        if ((keep && keep_ls.v[at(l * S + j)] == 0) || (causal && j > l)) s[at(j)] = -kInf;
        m = std::max(m, s[at(j)]);
      }
      if (m == -kInf) continue;  // nothing to attend to: zeros
      double z = 0;
      for (int64_t j = 0; j < S; ++j) z += std::exp(s[at(j)] - m);
      for (int64_t j = 0; j < S; ++j)
        for (int64_t e = 0; e < Ev; ++e)
          out.v[at((b * L + l) * Ev + e)] += std::exp(s[at(j)] - m) / z * v.v[at((b * S + j) * Ev + e)];
    }
  return out;
}

Ref cosine_similarity(const Ref& a, const Ref& b, int64_t dim, double eps) {
  const Sizes s = broadcast_sizes(a.sizes, b.sizes);
  const Ref x = expand(a, s), y = expand(b, s);
  const Sizes d{dim};
  const Ref nx = norm(x, 2.0, d, true), ny = norm(y, 2.0, d, true);
  const Ref ux = zip(x, nx, [eps](double u, double n) { return u / std::max(n, eps); });
  const Ref uy = zip(y, ny, [eps](double u, double n) { return u / std::max(n, eps); });
  return sum(zip(ux, uy, [](double u, double w) { return u * w; }), d);
}

// ---- losses ----

Ref reduce_loss(const Ref& per, Reduce r, double denominator) {
  if (r == Reduce::None) return per;
  double s = 0;
  for (double x : per.v) s += x;
  return {{}, {r == Reduce::Sum ? s : s / denominator}};
}

Ref cross_entropy(const Ref& logits, const Ref& target, const Vec& weight, int64_t ignore_index, Reduce r,
                  double smoothing, bool already_log) {
  const bool single = logits.sizes.size() == 1;
  const int64_t N = single ? 1 : logits.sizes[0], C = single ? logits.sizes[0] : logits.sizes[1];
  const int64_t D = single ? 1 : tail_numel(logits.sizes, 2);
  Ref per{target.sizes, Vec(at(N * D), 0.0)};
  double den = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      auto x = [&](int64_t c) { return logits.v[at((n * C + c) * D + d)]; };
      double m = -kInf, z = 0;
      for (int64_t c = 0; c < C; ++c) m = std::max(m, x(c));
      for (int64_t c = 0; c < C; ++c) z += std::exp(x(c) - m);
      auto logp = [&](int64_t c) { return already_log ? x(c) : x(c) - m - std::log(z); };
      const auto t = static_cast<int64_t>(target.v[at(n * D + d)]);
      if (t == ignore_index) continue;
      const double wt = weight.empty() ? 1.0 : weight[at(t)];
      double smooth = 0;
      for (int64_t c = 0; c < C; ++c) smooth -= (weight.empty() ? 1.0 : weight[at(c)]) * logp(c);
      per.v[at(n * D + d)] = (1 - smoothing) * -wt * logp(t) + smoothing / static_cast<double>(C) * smooth;
      den += wt;
    }
  return reduce_loss(per, r, den);
}

Ref logsumexp_rows(const Ref& logits) {
  const int64_t N = logits.sizes[0], C = logits.sizes[1];
  Ref out{{N}, Vec(at(N))};
  for (int64_t n = 0; n < N; ++n) {
    double m = -kInf, z = 0;
    for (int64_t c = 0; c < C; ++c) m = std::max(m, logits.v[at(n * C + c)]);
    for (int64_t c = 0; c < C; ++c) z += std::exp(logits.v[at(n * C + c)] - m);
    out.v[at(n)] = m + std::log(z);
  }
  return out;
}

Ref cross_entropy_rows_grad(const Ref& g, const Ref& logits, const Ref& target, const Vec& weight,
                            int64_t ignore_index, double smoothing) {
  const int64_t N = logits.sizes[0], C = logits.sizes[1];
  const Ref lse = logsumexp_rows(logits);
  Ref out{logits.sizes, Vec(at(N * C), 0.0)};
  for (int64_t n = 0; n < N; ++n) {
    const auto t = static_cast<int64_t>(target.v[at(n)]);
    if (t == ignore_index) continue;
    auto a = [&](int64_t c) {
      auto w = [&](int64_t k) { return weight.empty() ? 1.0 : weight[at(k)]; };
      return smoothing * w(c) / static_cast<double>(C) + (c == t ? (1 - smoothing) * w(t) : 0.0);
    };
    double A = 0;
    for (int64_t c = 0; c < C; ++c) A += a(c);
    for (int64_t c = 0; c < C; ++c)
      out.v[at(n * C + c)] = g.v[at(n)] * (A * std::exp(logits.v[at(n * C + c)] - lse.v[at(n)]) - a(c));
  }
  return out;
}

Ref cross_entropy_probs(const Ref& logits, const Ref& probs, const Vec& weight, Reduce r, double smoothing) {
  const bool single = logits.sizes.size() == 1;
  const int64_t N = single ? 1 : logits.sizes[0], C = single ? logits.sizes[0] : logits.sizes[1];
  const int64_t D = single ? 1 : tail_numel(logits.sizes, 2);
  const Ref logp = softmax(logits, single ? 0 : 1, true);
  Ref per{{}, Vec(at(N * D), 0.0)};
  per.sizes = logits.sizes;
  per.sizes.erase(per.sizes.begin() + (single ? 0 : 1));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t c = 0; c < C; ++c) {
        const size_t i = at((n * C + c) * D + d);
        const double t = probs.v[i] * (1 - smoothing) + smoothing / static_cast<double>(C);
        per.v[at(n * D + d)] -= (weight.empty() ? 1.0 : weight[at(c)]) * logp.v[i] * t;
      }
  return reduce_loss(per, r, static_cast<double>(N * D));
}

Ref pair_loss(const std::string& kind, const Ref& a, const Ref& b, Reduce r, double param) {
  const Ref per = zip(a, b, [&](double x, double y) {
    const double d = std::abs(x - y);
    if (kind == "mse") return d * d;
    if (kind == "l1") return d;
    if (kind == "smooth_l1") return param == 0 ? d : d < param ? 0.5 * d * d / param : d - 0.5 * param;
    if (kind == "huber") return d < param ? 0.5 * d * d : param * (d - 0.5 * param);
    throw std::invalid_argument("reference: no pair loss " + kind);
  });
  return reduce_loss(per, r, static_cast<double>(per.v.size()));
}

Ref binary_cross_entropy(const Ref& p, const Ref& y, const Ref* w, Reduce r) {
  Ref per = zip(p, y, [](double pv, double yv) {
    return -(yv * std::max(std::log(pv), -100.0) + (1 - yv) * std::max(std::log1p(-pv), -100.0));
  });
  if (w) per = zip(per, *w, [](double l, double wv) { return l * wv; });
  return reduce_loss(per, r, static_cast<double>(per.v.size()));
}

Ref bce_with_logits(const Ref& x, const Ref& y, const Ref* w, const Ref* pw, Reduce r) {
  const Ref one{{}, {1.0}};
  Ref per = zip3(x, y, pw ? *pw : one, [](double xv, double yv, double pwv) {
    const double soft = std::log1p(std::exp(-std::abs(xv)));
    const double log_sig = -(std::max(-xv, 0.0) + soft), log_1m = -(std::max(xv, 0.0) + soft);
    return -(pwv * yv * log_sig + (1 - yv) * log_1m);
  });
  if (w) per = zip(per, *w, [](double l, double wv) { return l * wv; });
  return reduce_loss(per, r, static_cast<double>(per.v.size()));
}

Ref kl_div(const Ref& x, const Ref& t, Reduce r, bool log_target) {
  const Ref per = zip(x, t, [log_target](double xv, double tv) {
    if (log_target) return std::exp(tv) * (tv - xv);
    return tv == 0 ? 0.0 : tv * (std::log(tv) - xv);
  });
  return reduce_loss(per, r, static_cast<double>(per.v.size()));
}

// ---- optimizer steps ----

void SgdState::step(Vec& p, Vec g, const std::function<double(double)>& store) {
  const SgdRule& o = rule;
  for (size_t i = 0; i < p.size(); ++i) g[i] += o.weight_decay * p[i];
  if (o.momentum != 0) {
    if (buf.empty())
      buf = g;
    else
      for (size_t i = 0; i < p.size(); ++i) buf[i] = o.momentum * buf[i] + (1 - o.dampening) * g[i];
    for (size_t i = 0; i < p.size(); ++i) g[i] = o.nesterov ? g[i] + o.momentum * buf[i] : buf[i];
  }
  for (size_t i = 0; i < p.size(); ++i) {
    p[i] -= o.lr * g[i];
    if (store) p[i] = store(p[i]);
  }
}

void AdamState::step(Vec& p, Vec g, const std::function<double(double)>& store) {
  const AdamRule& o = rule;
  if (m.empty()) m = v = vmax = Vec(p.size(), 0.0);
  ++t;
  for (size_t i = 0; i < p.size(); ++i) {
    if (o.decoupled)
      p[i] *= 1 - o.lr * o.weight_decay;
    else
      g[i] += o.weight_decay * p[i];
    m[i] = o.beta1 * m[i] + (1 - o.beta1) * g[i];
    v[i] = o.beta2 * v[i] + (1 - o.beta2) * g[i] * g[i];
    vmax[i] = std::max(vmax[i], v[i]);
    const double m_hat = m[i] / (1 - std::pow(o.beta1, t));
    const double v_hat = (o.amsgrad ? vmax[i] : v[i]) / (1 - std::pow(o.beta2, t));
    p[i] -= o.lr * m_hat / (std::sqrt(v_hat) + o.eps);
    if (store) p[i] = store(p[i]);
  }
}

}  // namespace mixt::testing::ref
