#include "reference_margin.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

namespace mixt::testing::ref {
namespace {

size_t pos(int64_t i) { return static_cast<size_t>(i); }

// `sizes` without its last `k` entries.
Sizes drop_last(Sizes sizes, size_t k) {
  sizes.resize(sizes.size() - k);
  return sizes;
}

// The reduction of per-sample losses: the mean over their count.
Ref reduced(const Ref& per, Reduce r) { return reduce_loss(per, r, static_cast<double>(per.v.size())); }

// Row `row` of a row-major matrix with `cols` columns.
Vec row_of(const Vec& v, int64_t row, int64_t cols) {
  return Vec(v.begin() + row * cols, v.begin() + (row + 1) * cols);
}

}  // namespace

double p_norm(const Vec& d, double p) {
  double acc = 0;
  for (double x : d) {
    if (std::isinf(p)) acc = std::max(acc, std::abs(x));
    else if (p == 0) acc += x != 0;
    else acc += std::pow(std::abs(x), p);
  }
  return std::isinf(p) || p == 0 ? acc : std::pow(acc, 1 / p);
}

Ref poisson_nll_loss(const Ref& x, const Ref& t, bool log_input, bool full, double eps, Reduce r) {
  return reduced(zip(x, t,
                     [&](double xv, double tv) {
                       double l = log_input ? std::exp(xv) - tv * xv : xv - tv * std::log(xv + eps);
                       if (full && tv > 1) l += tv * std::log(tv) - tv + 0.5 * std::log(2 * std::numbers::pi * tv);
                       return l;
                     }),
                 r);
}

Ref cosine_embedding_loss(const Ref& x1, const Ref& x2, const Ref& t, double margin, Reduce r) {
  const int64_t cols = x1.sizes.back(), rows = numel_of(x1.sizes) / cols;
  Ref per{t.sizes, Vec(pos(rows))};
  for (int64_t n = 0; n < rows; ++n) {
    double dot = 0, s1 = 1e-12, s2 = 1e-12;
    for (int64_t d = 0; d < cols; ++d) {
      const double a = x1.v[pos(n * cols + d)], b = x2.v[pos(n * cols + d)];
      dot += a * b, s1 += a * a, s2 += b * b;
    }
    const double cos = dot / std::sqrt(s1 * s2), y = t.v[pos(n)];
    per.v[pos(n)] = y == 1 ? 1 - cos : y == -1 ? std::max(0.0, cos - margin) : 0.0;
  }
  return reduced(per, r);
}

Ref hinge_embedding_loss(const Ref& x, const Ref& t, double margin, Reduce r) {
  return reduced(zip(x, t,
                     [&](double xv, double tv) {
                       return (tv != 1 ? std::max(0.0, margin - xv) : 0.0) + (tv != -1 ? xv : 0.0);
                     }),
                 r);
}

Ref margin_ranking_loss(const Ref& x1, const Ref& x2, const Ref& t, double margin, Reduce r) {
  return reduced(zip3(x1, x2, t, [&](double a, double b, double y) { return std::max(0.0, -y * (a - b) + margin); }),
                 r);
}

Ref triplet_margin_loss(const Ref& a, const Ref& pos_in, const Ref& neg_in, double margin, double p, double eps,
                        bool swap, Reduce r) {
  const int64_t cols = a.sizes.back(), rows = numel_of(a.sizes) / cols;
  auto distance = [&](const Ref& u, const Ref& w, int64_t n) {
    Vec d(pos(cols));
    for (int64_t k = 0; k < cols; ++k) d[pos(k)] = u.v[pos(n * cols + k)] - w.v[pos(n * cols + k)] + eps;
    return p_norm(d, p);
  };
  Ref per{drop_last(a.sizes, 1), Vec(pos(rows))};
  for (int64_t n = 0; n < rows; ++n) {
    double d_neg = distance(a, neg_in, n);
    if (swap) d_neg = std::min(d_neg, distance(pos_in, neg_in, n));
    per.v[pos(n)] = std::max(0.0, distance(a, pos_in, n) - d_neg + margin);
  }
  return reduced(per, r);
}

Ref multilabel_margin_loss(const Ref& x, const Ref& t, Reduce r) {
  const int64_t classes = x.sizes.back(), rows = numel_of(x.sizes) / classes;
  Ref per{drop_last(x.sizes, 1), Vec(pos(rows))};
  for (int64_t n = 0; n < rows; ++n) {
    const Vec xs = row_of(x.v, n, classes), ts = row_of(t.v, n, classes);
    const auto end = std::find(ts.begin(), ts.end(), -1.0);
    double total = 0;
    for (auto y = ts.begin(); y != end; ++y)
      for (int64_t i = 0; i < classes; ++i)
        if (std::find(ts.begin(), end, static_cast<double>(i)) == end)
          total += std::max(0.0, 1 - xs[pos(static_cast<int64_t>(*y))] + xs[pos(i)]);
    per.v[pos(n)] = total / static_cast<double>(classes);
  }
  return reduced(per, r);
}

Ref soft_margin_loss(const Ref& x, const Ref& t, Reduce r) {
  return reduced(zip(x, t, [](double xv, double tv) { return std::log1p(std::exp(-tv * xv)); }), r);
}

Ref multi_margin_loss(const Ref& x, const Ref& t, int64_t p, double margin, const Vec& w, Reduce r) {
  const int64_t classes = x.sizes.back(), rows = numel_of(x.sizes) / classes;
  Ref per{t.sizes, Vec(pos(rows))};
  for (int64_t n = 0; n < rows; ++n) {
    const auto y = static_cast<int64_t>(t.v[pos(n)]);
    const double xy = x.v[pos(n * classes + y)], weight = w.empty() ? 1.0 : w[pos(y)];
    double total = 0;
    for (int64_t i = 0; i < classes; ++i) {
      const double z = std::max(0.0, margin - xy + x.v[pos(n * classes + i)]);
      if (i != y) total += weight * (p == 2 ? z * z : z);
    }
    per.v[pos(n)] = total / static_cast<double>(classes);
  }
  return reduced(per, r);
}

Ref dist(const Ref& a, const Ref& b, double p) {
  return {{}, {p_norm(zip(a, b, [](double x, double y) { return x - y; }).v, p)}};
}

Ref cdist(const Ref& x1, const Ref& x2, double p) {
  const size_t nd = x1.sizes.size();
  const int64_t P = x1.sizes[nd - 2], R = x2.sizes[x2.sizes.size() - 2], M = x1.sizes.back();
  const Sizes batch = broadcast_sizes(drop_last(x1.sizes, 2), drop_last(x2.sizes, 2));
  auto grown = [&](const Ref& x, int64_t rows) {
    Sizes s = batch;
    s.push_back(rows);
    s.push_back(M);
    return expand(x, s);
  };
  const Ref a = grown(x1, P), b = grown(x2, R);
  Sizes out = batch;
  out.push_back(P);
  out.push_back(R);
  Ref res{out, Vec(pos(numel_of(out)))};
  const int64_t count = numel_of(batch);
  for (int64_t k = 0; k < count; ++k)
    for (int64_t i = 0; i < P; ++i)
      for (int64_t j = 0; j < R; ++j) {
        Vec d(pos(M));
        for (int64_t m = 0; m < M; ++m) d[pos(m)] = a.v[pos((k * P + i) * M + m)] - b.v[pos((k * R + j) * M + m)];
        res.v[pos((k * P + i) * R + j)] = p_norm(d, p);
      }
  return res;
}

Ref pdist(const Ref& x, double p) {
  const int64_t n = x.sizes[0], m = x.sizes[1];
  Ref res{{n * (n - 1) / 2}, {}};
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) {
      Vec d(pos(m));
      for (int64_t k = 0; k < m; ++k) d[pos(k)] = x.v[pos(i * m + k)] - x.v[pos(j * m + k)];
      res.v.push_back(p_norm(d, p));
    }
  return res;
}

Ref renorm(const Ref& x, double p, int64_t dim, double maxnorm) {
  const int d = wrap_dim(dim, static_cast<int64_t>(x.sizes.size()));
  std::vector<Vec> slices(pos(x.sizes[pos(d)]));
  for_each_index(x.sizes, [&](int64_t i, const Sizes& idx) { slices[pos(idx[pos(d)])].push_back(x.v[pos(i)]); });
  Ref res = x;
  for_each_index(x.sizes, [&](int64_t i, const Sizes& idx) {
    const double norm = p_norm(slices[pos(idx[pos(d)])], p);
    if (norm > maxnorm) res.v[pos(i)] = x.v[pos(i)] * (maxnorm / (norm + 1e-7));
  });
  return res;
}

Ref cross(const Ref& a_in, const Ref& b_in, int64_t dim) {
  const Sizes sizes = broadcast_sizes(a_in.sizes, b_in.sizes);
  const Ref a = expand(a_in, sizes), b = expand(b_in, sizes);
  const int d = wrap_dim(dim, static_cast<int64_t>(sizes.size()));
  Ref res{sizes, Vec(a.v.size())};
  for_each_index(sizes, [&](int64_t i, const Sizes& idx) {
    auto component = [&](const Ref& r, int64_t k) { return r.v[pos(ravel_with(idx, sizes, pos(d), k))]; };
    const int64_t k = idx[pos(d)], k1 = (k + 1) % 3, k2 = (k + 2) % 3;
    res.v[pos(i)] = component(a, k1) * component(b, k2) - component(a, k2) * component(b, k1);
  });
  return res;
}

}  // namespace mixt::testing::ref
