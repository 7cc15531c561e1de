// The double-loop references of reference.h.
#include "reference.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numbers>
#include <stdexcept>

namespace mixt::testing::ref {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNan = std::numeric_limits<double>::quiet_NaN();

size_t at(int64_t i) { return static_cast<size_t>(i); }

// An index value (held as a double) wrapped into [0, n).
int64_t wrap_index(double v, int64_t n) {
  const auto i = static_cast<int64_t>(v);
  return i < 0 ? i + n : i;
}

// The element of `r` at a multi-index of a broadcast shape (trailing dims aligned, size-1 dims repeat).
double broadcast_at(const Ref& r, const Sizes& idx) {
  const size_t off = idx.size() - r.sizes.size();
  int64_t lin = 0;
  for (size_t d = 0; d < r.sizes.size(); ++d) lin = lin * r.sizes[d] + (r.sizes[d] == 1 ? 0 : idx[off + d]);
  return r.v[at(lin)];
}

}  // namespace

int64_t numel_of(const Sizes& s) {
  int64_t n = 1;
  for (int64_t x : s) n *= x;
  return n;
}

Sizes unravel(int64_t i, const Sizes& sizes) {
  Sizes idx(sizes.size());
  for (size_t d = sizes.size(); d-- > 0;) {
    idx[d] = i % sizes[d];
    i /= sizes[d];
  }
  return idx;
}

int64_t ravel(const Sizes& idx, const Sizes& sizes) {
  int64_t i = 0;
  for (size_t d = 0; d < sizes.size(); ++d) i = i * sizes[d] + idx[d];
  return i;
}

int64_t ravel_with(const Sizes& idx, const Sizes& sizes, size_t d, int64_t v) {
  int64_t i = 0;
  for (size_t k = 0; k < sizes.size(); ++k) i = i * sizes[k] + (k == d ? v : idx[k]);
  return i;
}

ReduceStrides reduce_strides(const Sizes& sizes, const Sizes& dims) {
  const std::vector<int> red = wrap_dims(dims, static_cast<int>(sizes.size()));
  ReduceStrides st{Sizes(sizes.size(), 0), Sizes(sizes.size(), 0), 1};
  int64_t red_count = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    if (std::find(red.begin(), red.end(), static_cast<int>(d)) != red.end()) {
      st.red[d] = red_count;
      red_count *= sizes[d];
    } else {
      st.out[d] = st.outputs;
      st.outputs *= sizes[d];
    }
  }
  return st;
}

int wrap_dim(int64_t d, int64_t nd) { return static_cast<int>(d < 0 ? d + std::max<int64_t>(nd, 1) : d); }

std::vector<int> wrap_dims(const Sizes& dims, int nd) {
  std::vector<int> out;
  for (int d = 0; d < nd; ++d) {
    bool listed = dims.empty();
    for (int64_t x : dims) listed = listed || wrap_dim(x, nd) == d;
    if (listed) out.push_back(d);
  }
  return out;
}

// ---- elementwise ----

Sizes broadcast_sizes(const Sizes& a, const Sizes& b) {
  Sizes out(std::max(a.size(), b.size()), 1);
  for (size_t i = 1; i <= out.size(); ++i) {
    const int64_t x = i <= a.size() ? a[a.size() - i] : 1, y = i <= b.size() ? b[b.size() - i] : 1;
    if (x != y && x != 1 && y != 1) throw std::invalid_argument("reference: shapes do not broadcast");
    out[out.size() - i] = x == 1 ? y : x;
  }
  return out;
}

Ref expand(const Ref& r, const Sizes& to) {
  Ref out{to, Vec(at(numel_of(to)))};
  for_each_index(to, [&](int64_t i, const Sizes& idx) { out.v[at(i)] = broadcast_at(r, idx); });
  return out;
}

Ref map(const Ref& a, const std::function<double(double)>& f) {
  Ref out = a;
  for (double& x : out.v) x = f(x);
  return out;
}

Ref zip(const Ref& a, const Ref& b, const std::function<double(double, double)>& f) {
  const Sizes s = broadcast_sizes(a.sizes, b.sizes);
  Ref out{s, Vec(at(numel_of(s)))};
  for_each_index(s, [&](int64_t i, const Sizes& idx) { out.v[at(i)] = f(broadcast_at(a, idx), broadcast_at(b, idx)); });
  return out;
}

Ref zip3(const Ref& a, const Ref& b, const Ref& c, const std::function<double(double, double, double)>& f) {
  const Sizes s = broadcast_sizes(broadcast_sizes(a.sizes, b.sizes), c.sizes);
  Ref out{s, Vec(at(numel_of(s)))};
  for_each_index(s, [&](int64_t i, const Sizes& idx) {
    out.v[at(i)] = f(broadcast_at(a, idx), broadcast_at(b, idx), broadcast_at(c, idx));
  });
  return out;
}

double erfinv(double y) {
  if (std::isnan(y) || std::abs(y) > 1) return kNan;
  if (std::abs(y) == 1) return std::copysign(kInf, y);
  const double a = std::abs(y);
  if (a < 1e-20) return y * std::sqrt(std::numbers::pi) / 2;  // the next term is a^3: below double's resolution
  double lo = 0, hi = 30;
  if (a <= 0.5) {
    for (int i = 0; i < 200; ++i) (std::erf(0.5 * (lo + hi)) < a ? lo : hi) = 0.5 * (lo + hi);
  } else {
    const double tail = 1.0 - a;  // exact (Sterbenz): erfc has the resolution erf lacks near 1
    for (int i = 0; i < 200; ++i) (std::erfc(0.5 * (lo + hi)) > tail ? lo : hi) = 0.5 * (lo + hi);
  }
  return std::copysign(0.5 * (lo + hi), y);
}

double softplus(double x, double beta, double threshold) {
  return x * beta > threshold ? x : std::log1p(std::exp(x * beta)) / beta;
}

double elu(double x, double alpha, double scale, double input_scale) {
  return x > 0 ? scale * x : scale * alpha * std::expm1(input_scale * x);
}

double div_floor(double a, double b) { return std::floor(a / b); }

double unary(std::string_view name, double x) {
  static const std::map<std::string_view, double (*)(double)> table = {
      {"neg", [](double v) { return -v; }},
      {"abs", [](double v) { return std::abs(v); }},
      // -1, 0, 1; NaN stays NaN (a documented difference: PyTorch gives 0); sign(-0) is +0.
      {"sign", [](double v) { return std::isnan(v) ? v : static_cast<double>((v > 0) - (v < 0)); }},
      {"exp", [](double v) { return std::exp(v); }},
      {"expm1", [](double v) { return std::expm1(v); }},
      {"log", [](double v) { return std::log(v); }},
      {"log1p", [](double v) { return std::log1p(v); }},
      {"log2", [](double v) { return std::log2(v); }},
      {"log10", [](double v) { return std::log10(v); }},
      {"sqrt", [](double v) { return std::sqrt(v); }},
      {"rsqrt", [](double v) { return 1.0 / std::sqrt(v); }},  // rsqrt(-0) = -Inf, as 1 / sqrt(-0)
      {"reciprocal", [](double v) { return 1.0 / v; }},
      {"sin", [](double v) { return std::sin(v); }},
      {"cos", [](double v) { return std::cos(v); }},
      {"tan", [](double v) { return std::tan(v); }},
      {"tanh", [](double v) { return std::tanh(v); }},
      {"sigmoid", [](double v) { return 1.0 / (1.0 + std::exp(-v)); }},
      // x unless x < 0: relu(-0) keeps -0 (neither PyTorch nor <cmath> defines that sign; this is mixt's rule).
      {"relu", [](double v) { return v < 0 ? 0.0 : v; }},
      {"silu", [](double v) { return v / (1.0 + std::exp(-v)); }},
      {"erf", [](double v) { return std::erf(v); }},
      {"erfinv", erfinv},
      {"floor", [](double v) { return std::floor(v); }},
      {"ceil", [](double v) { return std::ceil(v); }},
      {"round", [](double v) { return std::nearbyint(v); }},  // half to even in the default rounding mode
      {"gelu", [](double v) { return 0.5 * v * (1.0 + std::erf(v / std::numbers::sqrt2)); }},
      {"gelu_tanh",
       [](double v) {
         return 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
       }},
      {"softplus", [](double v) { return softplus(v, 1.0, 20.0); }},
      {"acos", [](double v) { return std::acos(v); }},
      {"asin", [](double v) { return std::asin(v); }},
      {"sinh", [](double v) { return std::sinh(v); }},
      {"cosh", [](double v) { return std::cosh(v); }},
      {"asinh", [](double v) { return std::asinh(v); }},
      {"acosh", [](double v) { return std::acosh(v); }},
      {"atanh", [](double v) { return std::atanh(v); }},
      {"trunc", [](double v) { return std::trunc(v); }},
      {"frac", [](double v) { return v - std::trunc(v); }},
      {"logit", [](double v) { return std::log(v / (1.0 - v)); }},
      // The piecewise activations with their default parameters, from their definitions.
      {"hardtanh", [](double v) { return std::isnan(v) ? v : std::min(std::max(v, -1.0), 1.0); }},
      {"hardswish", [](double v) { return v <= -3 ? v * 0.0 : v >= 3 ? v : v * (v + 3) / 6; }},  // -0 below -3, as x * 0
      {"hardsigmoid", [](double v) { return v <= -3 ? 0.0 : v >= 3 ? 1.0 : v / 6 + 0.5; }},
      {"leaky_relu", [](double v) { return v > 0 ? v : 0.01 * v; }},
      {"elu", [](double v) { return elu(v, 1.0, 1.0, 1.0); }},
      {"selu", [](double v) { return elu(v, 1.6732632423543772848170429916717, 1.0507009873554804934193349852946, 1.0); }},
      {"mish", [](double v) { return v * std::tanh(std::log1p(std::exp(v))); }},
      {"isfinite", [](double v) { return std::isfinite(v) ? 1.0 : 0.0; }},
      {"isnan", [](double v) { return std::isnan(v) ? 1.0 : 0.0; }},
      {"isinf", [](double v) { return std::isinf(v) ? 1.0 : 0.0; }},
      {"logical_not", [](double v) { return v == 0 ? 1.0 : 0.0; }},
  };
  const auto it = table.find(name);
  if (it == table.end()) throw std::invalid_argument("reference: no unary op " + std::string(name));
  return it->second(x);
}

// ---- views and movement ----

Ref reshape(const Ref& r, const Sizes& sizes) { return {sizes, r.v}; }

Ref permute(const Ref& r, const Sizes& perm) {
  Ref out;
  for (int64_t p : perm) out.sizes.push_back(r.sizes[at(p)]);
  out.v.resize(r.v.size());
  Sizes in_strides(r.sizes.size(), 1);  // row-major strides of r, then in the output's dim order
  for (size_t d = r.sizes.size(); d-- > 1;) in_strides[d - 1] = in_strides[d] * r.sizes[d];
  for_each_index(out.sizes, [&](int64_t i, const Sizes& oi) {
    int64_t j = 0;
    for (size_t k = 0; k < perm.size(); ++k) j += oi[k] * in_strides[at(perm[k])];
    out.v[at(i)] = r.v[at(j)];
  });
  return out;
}

Ref transpose(const Ref& r, int64_t d0, int64_t d1) {
  Sizes perm(r.sizes.size());
  for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
  const int64_t nd = static_cast<int64_t>(r.sizes.size());
  std::swap(perm[at(wrap_dim(d0, nd))], perm[at(wrap_dim(d1, nd))]);
  return permute(r, perm);
}

Ref slice(const Ref& r, int64_t dim, int64_t start, int64_t end, int64_t step) {
  const int d = wrap_dim(dim, static_cast<int64_t>(r.sizes.size()));
  end = std::min(end, r.sizes[at(d)]);
  Ref out{r.sizes, {}};
  out.sizes[at(d)] = end > start ? (end - start + step - 1) / step : 0;
  out.v.resize(at(numel_of(out.sizes)));
  for_each_index(out.sizes, [&](int64_t i, const Sizes& idx) {
    out.v[at(i)] = r.v[at(ravel_with(idx, r.sizes, at(d), start + idx[at(d)] * step))];
  });
  return out;
}

Ref select(const Ref& r, int64_t dim, int64_t index) {
  const int d = wrap_dim(dim, static_cast<int64_t>(r.sizes.size()));
  const int64_t i = index < 0 ? index + r.sizes[at(d)] : index;
  Ref s = slice(r, d, i, i + 1, 1);
  s.sizes.erase(s.sizes.begin() + d);
  return s;
}

Ref unsqueeze(const Ref& r, int64_t dim) {
  Ref out = r;
  const int d = wrap_dim(dim, static_cast<int64_t>(r.sizes.size()) + 1);
  out.sizes.insert(out.sizes.begin() + d, 1);
  return out;
}

Ref as_strided(const Ref& r, const Sizes& sizes, const Sizes& strides, int64_t offset) {
  Ref out{sizes, Vec(at(numel_of(sizes)))};
  for_each_index(sizes, [&](int64_t i, const Sizes& idx) {
    int64_t p = offset;
    for (size_t d = 0; d < sizes.size(); ++d) p += idx[d] * strides[d];
    out.v[at(i)] = r.v[at(p)];
  });
  return out;
}

Ref cat(const std::vector<Ref>& parts, int64_t dim) {
  const int d = wrap_dim(dim, static_cast<int64_t>(parts[0].sizes.size()));
  Ref out{parts[0].sizes, {}};
  out.sizes[at(d)] = 0;
  for (const Ref& p : parts) out.sizes[at(d)] += p.sizes[at(d)];
  out.v.resize(at(numel_of(out.sizes)));
  for_each_index(out.sizes, [&](int64_t i, const Sizes& idx) {
    size_t k = 0;
    int64_t j = idx[at(d)];
    while (j >= parts[k].sizes[at(d)]) j -= parts[k++].sizes[at(d)];
    out.v[at(i)] = parts[k].v[at(ravel_with(idx, parts[k].sizes, at(d), j))];
  });
  return out;
}

Ref stack(const std::vector<Ref>& parts, int64_t dim) {
  std::vector<Ref> u;
  for (const Ref& p : parts) u.push_back(unsqueeze(p, dim));
  return cat(u, wrap_dim(dim, static_cast<int64_t>(parts[0].sizes.size()) + 1));
}

// ---- indexing ----

Ref index_select(const Ref& x, int64_t dim, const Ref& index) {
  const int d = wrap_dim(dim, static_cast<int64_t>(x.sizes.size()));
  Ref out{x.sizes, {}};
  out.sizes[at(d)] = static_cast<int64_t>(index.v.size());
  out.v.resize(at(numel_of(out.sizes)));
  for_each_index(out.sizes, [&](int64_t i, const Sizes& idx) {
    out.v[at(i)] = x.v[at(ravel_with(idx, x.sizes, at(d), wrap_index(index.v[at(idx[at(d)])], x.sizes[at(d)])))];
  });
  return out;
}

Ref gather(const Ref& x, int64_t dim, const Ref& index) {
  const int d = wrap_dim(dim, static_cast<int64_t>(x.sizes.size()));
  Ref out{index.sizes, Vec(index.v.size())};
  for_each_index(index.sizes, [&](int64_t i, const Sizes& idx) {
    out.v[at(i)] = x.v[at(ravel_with(idx, x.sizes, at(d), wrap_index(index.v[at(i)], x.sizes[at(d)])))];
  });
  return out;
}

namespace {
// out = x; for every position of `index` (row-major): out[.. index ..] = combine(old, src value).
Ref scatter_with(const Ref& x, int64_t dim, const Ref& index, const Ref& src,
                 const std::function<double(double, double)>& combine) {
  const int d = wrap_dim(dim, static_cast<int64_t>(x.sizes.size()));
  Ref out = x;
  for (int64_t i = 0; i < static_cast<int64_t>(index.v.size()); ++i) {
    const Sizes pos = unravel(i, index.sizes);
    Sizes idx = pos;
    idx[at(d)] = wrap_index(index.v[at(i)], x.sizes[at(d)]);
    double& dst = out.v[at(ravel(idx, x.sizes))];
    dst = combine(dst, src.v[at(ravel(pos, src.sizes))]);
  }
  return out;
}
}  // namespace

Ref scatter(const Ref& x, int64_t dim, const Ref& index, const Ref& src) {
  return scatter_with(x, dim, index, src, [](double, double s) { return s; });
}

Ref scatter_add(const Ref& x, int64_t dim, const Ref& index, const Ref& src,
                const std::function<double(double)>& round) {
  return scatter_with(x, dim, index, src, [&](double o, double s) { return round(o + s); });
}

Ref masked_fill(const Ref& x, const Ref& mask, double value) {
  return zip(x, mask, [value](double v, double m) { return m != 0 ? value : v; });
}

Ref where(const Ref& cond, const Ref& a, const Ref& b) {
  return zip3(cond, a, b, [](double c, double x, double y) { return c != 0 ? x : y; });
}

Ref embedding(const Ref& weight, const Ref& index) {
  const int64_t dim = weight.sizes[1];
  Ref out{index.sizes, {}};
  out.sizes.push_back(dim);
  for (double i : index.v) {
    const int64_t row = wrap_index(i, weight.sizes[0]);
    for (int64_t j = 0; j < dim; ++j) out.v.push_back(weight.v[at(row * dim + j)]);
  }
  return out;
}

// ---- reductions and scans ----

Sizes reduced_sizes(const Sizes& sizes, const Sizes& dims, bool keepdim) {
  const std::vector<int> red = wrap_dims(dims, static_cast<int>(sizes.size()));
  Sizes out;
  for (int d = 0; d < static_cast<int>(sizes.size()); ++d) {
    if (std::find(red.begin(), red.end(), d) == red.end())
      out.push_back(sizes[at(d)]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

namespace {
// A reduction of `r` to values: fold, then finish(acc, count).
Ref reduce_to(const Ref& r, const Sizes& dims, bool keepdim, double init,
              const std::function<void(double&, double, int64_t)>& fold,
              const std::function<double(double, double)>& finish) {
  const double count = static_cast<double>(r.v.size()) /
                       static_cast<double>(std::max<int64_t>(1, numel_of(reduced_sizes(r.sizes, dims, false))));
  Ref out{reduced_sizes(r.sizes, dims, keepdim), reduce<double>(r, dims, init, fold)};
  for (double& x : out.v) x = finish(x, r.v.empty() ? 0.0 : count);
  return out;
}
double keep(double a, double) { return a; }

// For each element of a tensor of `sizes`, the row-major index of its output in a reduction over `dims`.
std::vector<size_t> output_of(const Sizes& sizes, const Sizes& dims) {
  const ReduceStrides st = reduce_strides(sizes, dims);
  std::vector<size_t> out(at(numel_of(sizes)));
  for_each_index(sizes, [&](int64_t i, const Sizes& idx) {
    int64_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * st.out[d];
    out[at(i)] = at(o);
  });
  return out;
}
}  // namespace

Ref sum(const Ref& r, const Sizes& dims, bool keepdim) {
  return reduce_to(r, dims, keepdim, 0.0, [](double& a, double x, int64_t) { a += x; }, keep);
}

Ref mean(const Ref& r, const Sizes& dims, bool keepdim) {
  return reduce_to(r, dims, keepdim, 0.0, [](double& a, double x, int64_t) { a += x; },
                   [](double a, double n) { return a / n; });
}

Ref prod(const Ref& r, const Sizes& dims, bool keepdim) {
  return reduce_to(r, dims, keepdim, 1.0, [](double& a, double x, int64_t) { a *= x; }, keep);
}

Ref amax(const Ref& r, const Sizes& dims, bool keepdim) {
  return reduce_to(r, dims, keepdim, -kInf,
                   [](double& a, double x, int64_t) { a = std::isnan(a) || std::isnan(x) ? kNan : std::max(a, x); },
                   keep);
}

Ref amin(const Ref& r, const Sizes& dims, bool keepdim) {
  return reduce_to(r, dims, keepdim, kInf,
                   [](double& a, double x, int64_t) { a = std::isnan(a) || std::isnan(x) ? kNan : std::min(a, x); },
                   keep);
}

ArgResult max_dim(const Ref& r, int64_t dim, bool keepdim, bool is_max) {
  using P = std::pair<double, int64_t>;
  const int d = wrap_dim(dim, static_cast<int64_t>(r.sizes.size()));
  const std::vector<P> acc = reduce<P>(r, {d}, {0.0, -1}, [is_max](P& a, double x, int64_t i) {
    const bool better = is_max ? x > a.first : x < a.first;
    if (a.second < 0 || (!std::isnan(a.first) && (std::isnan(x) || better))) a = {x, i};
  });
  ArgResult out;
  out.values.sizes = out.indices.sizes = reduced_sizes(r.sizes, {d}, keepdim);
  for (const P& p : acc) {
    out.values.v.push_back(p.first);
    out.indices.v.push_back(static_cast<double>(p.second));
  }
  return out;
}

Ref var(const Ref& r, const Sizes& dims, double correction, bool keepdim) {
  const Ref m = mean(r, dims, false);
  Ref out{reduced_sizes(r.sizes, dims, keepdim), Vec(m.v.size(), 0.0)};
  const std::vector<size_t> o = output_of(r.sizes, dims);
  for (size_t i = 0; i < r.v.size(); ++i) out.v[o[i]] += (r.v[i] - m.v[o[i]]) * (r.v[i] - m.v[o[i]]);
  const double n = static_cast<double>(r.v.size()) / static_cast<double>(std::max<size_t>(1, m.v.size()));
  for (double& x : out.v) x /= std::max(0.0, (r.v.empty() ? 0.0 : n) - correction);
  return out;
}

Ref std_dev(const Ref& r, const Sizes& dims, double correction, bool keepdim) {
  return map(var(r, dims, correction, keepdim), [](double v) { return std::sqrt(v); });
}

Ref norm(const Ref& r, double p, const Sizes& dims, bool keepdim) {
  if (std::isinf(p))
    return reduce_to(r, dims, keepdim, p > 0 ? 0.0 : kInf,
                     [p](double& a, double x, int64_t) {
                       const double m = std::abs(x);
                       a = std::isnan(a) || std::isnan(m) ? kNan : p > 0 ? std::max(a, m) : std::min(a, m);
                     },
                     keep);
  if (p == 0)
    return reduce_to(r, dims, keepdim, 0.0, [](double& a, double x, int64_t) { a += x != 0 ? 1.0 : 0.0; }, keep);
  return reduce_to(r, dims, keepdim, 0.0, [p](double& a, double x, int64_t) { a += std::pow(std::abs(x), p); },
                   [p](double a, double) { return p == 1 ? a : p == 2 ? std::sqrt(a) : std::pow(a, 1.0 / p); });
}

Ref logsumexp(const Ref& r, const Sizes& dims, bool keepdim) {
  const Ref m = amax(r, dims, false);
  Ref out{reduced_sizes(r.sizes, dims, keepdim), Vec(m.v.size(), 0.0)};
  const std::vector<size_t> o = output_of(r.sizes, dims);
  for (size_t i = 0; i < r.v.size(); ++i)
    if (std::isfinite(m.v[o[i]])) out.v[o[i]] += std::exp(r.v[i] - m.v[o[i]]);
  for (size_t k = 0; k < m.v.size(); ++k)
    out.v[k] = std::isfinite(m.v[k]) ? m.v[k] + std::log(out.v[k]) : m.v[k];  // +-Inf and NaN pass through
  return out;
}

Ref all(const Ref& r, const Sizes& dims, bool keepdim) {
  return reduce_to(r, dims, keepdim, 1.0, [](double& a, double x, int64_t) { a = a != 0 && x != 0 ? 1 : 0; }, keep);
}

Ref any(const Ref& r, const Sizes& dims, bool keepdim) {
  return reduce_to(r, dims, keepdim, 0.0, [](double& a, double x, int64_t) { a = a != 0 || x != 0 ? 1 : 0; }, keep);
}

Ref scan(const Ref& r, int64_t dim, bool product) {
  Ref out = r;
  if (r.sizes.empty()) return out;
  const int d = wrap_dim(dim, static_cast<int64_t>(r.sizes.size()));
  const int64_t n = r.sizes[at(d)];
  int64_t inner = 1;
  for (size_t k = at(d) + 1; k < r.sizes.size(); ++k) inner *= r.sizes[k];
  for (int64_t start = 0; start < static_cast<int64_t>(r.v.size()); ++start) {
    if ((start / inner) % n != 0) continue;  // not the first of its line
    double acc = product ? 1.0 : 0.0;
    for (int64_t k = 0; k < n; ++k) {
      const size_t j = at(start + k * inner);
      acc = product ? acc * r.v[j] : acc + r.v[j];
      out.v[j] = acc;
    }
  }
  return out;
}

// ---- matmul family ----

Ref matmul(const Ref& a, const Ref& b) {
  Sizes as = a.sizes, bs = b.sizes;
  const bool drop_n = as.size() == 1, drop_m = bs.size() == 1;
  if (drop_n) as.insert(as.begin(), 1);
  if (drop_m) bs.push_back(1);
  const int64_t n = as[as.size() - 2], k = as.back(), m = bs.back();
  const size_t nb = std::max(as.size(), bs.size()) - 2;
  Sizes batch(nb), abatch(nb, 1), bbatch(nb, 1);
  for (size_t i = 0; i + 2 < as.size(); ++i) abatch[nb - (as.size() - 2) + i] = as[i];
  for (size_t i = 0; i + 2 < bs.size(); ++i) bbatch[nb - (bs.size() - 2) + i] = bs[i];
  int64_t count = 1;
  for (size_t i = 0; i < nb; ++i) count *= (batch[i] = std::max(abatch[i], bbatch[i]));
  Ref r;
  r.sizes = batch;
  if (!drop_n) r.sizes.push_back(n);
  if (!drop_m) r.sizes.push_back(m);
  for (int64_t idx = 0; idx < count; ++idx) {
    int64_t rem = idx, aoff = 0, boff = 0, astride = n * k, bstride = k * m;
    for (size_t d = nb; d-- > 0;) {
      const int64_t i = rem % batch[d];
      rem /= batch[d];
      aoff += (abatch[d] == 1 ? 0 : i) * astride;
      boff += (bbatch[d] == 1 ? 0 : i) * bstride;
      astride *= abatch[d];
      bstride *= bbatch[d];
    }
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j) {
        double s = 0;
        for (int64_t q = 0; q < k; ++q) s += a.v[at(aoff + i * k + q)] * b.v[at(boff + q * m + j)];
        r.v.push_back(s);
      }
  }
  return r;
}

Ref addmm(const Ref& bias, const Ref& a, const Ref& b, double beta, double alpha) {
  const Ref p = matmul(a, b);
  return zip(expand(bias, p.sizes), p, [=](double c, double x) { return (beta == 0 ? 0.0 : beta * c) + alpha * x; });
}

Ref linear(const Ref& x, const Ref& w, const Ref* bias) {
  const Ref y = matmul(x, transpose(w, 0, 1));
  return bias ? zip(y, *bias, [](double u, double c) { return u + c; }) : y;
}

LinearGrads linear_backward(const Ref& g, const Ref& x, const Ref& w) {
  const int64_t out = w.sizes[0], in = w.sizes[1];
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < x.sizes.size(); ++d) rows *= x.sizes[d];
  LinearGrads r{{x.sizes, Vec(at(rows * in), 0.0)}, {{out, in}, Vec(at(out * in), 0.0)}, {{out}, Vec(at(out), 0.0)}};
  for (int64_t q = 0; q < rows; ++q)
    for (int64_t o = 0; o < out; ++o) {
      const double gv = g.v[at(q * out + o)];
      r.bias.v[at(o)] += gv;
      for (int64_t i = 0; i < in; ++i) {
        r.input.v[at(q * in + i)] += gv * w.v[at(o * in + i)];
        r.weight.v[at(o * in + i)] += gv * x.v[at(q * in + i)];
      }
    }
  return r;
}

Ref outer(const Ref& a, const Ref& b) {
  return zip(reshape(a, {static_cast<int64_t>(a.v.size()), 1}), b, [](double x, double y) { return x * y; });
}

Ref scaled_mm(const Ref& a, const Ref& b, const Ref& scale_a, const Ref& scale_b, const Ref* bias,
              double scale_result, double limit, Ref* amax) {
  const int64_t m = a.sizes[0], k = a.sizes[1], n = b.sizes[1];
  const double roundings = static_cast<double>(k + 3) * 0x1p-23;
  Ref r{{m, n}, {}, {}};
  double big = 0, big_slack = 0;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0, size = 0;
      for (int64_t q = 0; q < k; ++q) {
        s += a.v[at(i * k + q)] * b.v[at(q * n + j)];
        size += std::abs(a.v[at(i * k + q)] * b.v[at(q * n + j)]);
      }
      const double scale = (scale_a.v.size() == 1 ? scale_a.v[0] : scale_a.v[at(i)]) *
                           (scale_b.v.size() == 1 ? scale_b.v[0] : scale_b.v[at(j)]);
      const double c = bias ? bias->v[at(j)] : 0.0;
      double v = s * scale + c;
      double slack = roundings * (size * std::abs(scale) + std::abs(c));
      if (limit > 0) {
        if (std::isnan(v) || std::isnan(big)) big = kNan;
        else big = std::max(big, std::abs(v));
        big_slack = std::max(big_slack, slack);
        v *= scale_result;
        slack *= std::abs(scale_result);
        if (!std::isnan(v)) v = std::clamp(v, -limit, limit);
      }
      r.v.push_back(v);
      r.slack.push_back(slack);
    }
  if (amax) *amax = Ref{{}, {big}, {big_slack}};
  return r;
}

// ---- creation ----

Ref full(const Sizes& sizes, double value) { return {sizes, Vec(at(numel_of(sizes)), value)}; }

Ref arange(double start, double end, double step) {
  Ref out;
  const auto n = static_cast<int64_t>(std::ceil((end - start) / step));
  for (int64_t i = 0; i < n; ++i) out.v.push_back(start + static_cast<double>(i) * step);
  out.sizes = {n};
  return out;
}

Ref linspace(double start, double end, int64_t steps) {
  Ref out{{steps}, {}};
  for (int64_t i = 0; i < steps; ++i)
    out.v.push_back(steps == 1 ? start : start + (end - start) * static_cast<double>(i) / static_cast<double>(steps - 1));
  return out;
}

Ref eye(int64_t n, int64_t m) {
  Ref out{{n, m}, Vec(at(n * m), 0.0)};
  for (int64_t i = 0; i < std::min(n, m); ++i) out.v[at(i * m + i)] = 1;
  return out;
}

}  // namespace mixt::testing::ref
