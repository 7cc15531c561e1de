// Op cases of index_add, index_put, masked_select, nonzero, sort, argsort, topk and
// unique, with their references: plain loops over the values in double, written from
// PyTorch's definitions (they never call mixt). Repeated indices of the accumulating ops
// add up in index order, each addition rounded to the tensor's dtype, so the references
// round the same way and the results are exact. Sorting orders NaN as the largest value
// and keeps equal elements in input order.
#include <algorithm>
#include <cmath>
#include <limits>

#include "op_case_builder.h"

namespace mixt::testing {
namespace {

using ref::Ref;
using ref::Sizes;
using ref::Vec;
using Ins = std::vector<Tensor>;

size_t at(int64_t i) { return static_cast<size_t>(i); }

// Index value `v` of a dim of `size`, negative ones counted from the end.
int64_t wrapped(double v, int64_t size) {
  const auto i = static_cast<int64_t>(v);
  return i < 0 ? i + size : i;
}

// out = x; out[p with p[dim] = index[p[dim]]] += alpha * src[p], in row-major order of p.
Ref index_add_ref(const Ref& x, int64_t dim, const Ref& index, const Ref& src, double alpha,
                  const std::function<double(double)>& round) {
  Ref out = x;
  const int d = ref::wrap_dim(dim, static_cast<int64_t>(x.sizes.size()));
  ref::for_each_index(src.sizes, [&](int64_t i, const Sizes& p) {
    const int64_t target = ref::ravel_with(p, x.sizes, at(d), wrapped(index.v[at(p[at(d)])], x.sizes[at(d)]));
    out.v[at(target)] = round(out.v[at(target)] + alpha * src.v[at(i)]);
  });
  return out;
}

// out = x; for each position b of the broadcast indices and r of the remaining dims,
// out[idx0[b], idx1[b], ..., r] = values[b, r] (or += with accumulate).
Ref index_put_ref(const Ref& x, const std::vector<Ref>& indices, const Ref& values, bool accumulate,
                  const std::function<double(double)>& round) {
  Sizes batch = indices[0].sizes;
  for (const Ref& i : indices) batch = ref::broadcast_sizes(batch, i.sizes);
  std::vector<Ref> idx;
  for (const Ref& i : indices) idx.push_back(ref::expand(i, batch));
  const size_t k = indices.size();
  Sizes rest(x.sizes.begin() + static_cast<std::ptrdiff_t>(k), x.sizes.end());
  Sizes target = batch;
  target.insert(target.end(), rest.begin(), rest.end());
  const Ref vals = ref::expand(values, target);
  Ref out = x;
  ref::for_each_index(target, [&](int64_t i, const Sizes& p) {
    Sizes b(p.begin(), p.begin() + static_cast<std::ptrdiff_t>(batch.size()));
    const int64_t bi = ref::ravel(b, batch);
    Sizes q;
    for (size_t d = 0; d < k; ++d) q.push_back(wrapped(idx[d].v[at(bi)], x.sizes[d]));
    for (size_t d = batch.size(); d < p.size(); ++d) q.push_back(p[d]);
    double& o = out.v[at(ref::ravel(q, x.sizes))];
    o = accumulate ? round(o + vals.v[at(i)]) : vals.v[at(i)];
  });
  return out;
}

Ref masked_select_ref(const Ref& x, const Ref& mask) {
  const Sizes shape = ref::broadcast_sizes(x.sizes, mask.sizes);
  const Ref xs = ref::expand(x, shape), ms = ref::expand(mask, shape);
  Ref out{{0}, {}};
  for (size_t i = 0; i < xs.v.size(); ++i)
    if (ms.v[i] != 0) out.v.push_back(xs.v[i]);
  out.sizes[0] = static_cast<int64_t>(out.v.size());
  return out;
}

Ref nonzero_ref(const Ref& x) {
  Ref out{{0, static_cast<int64_t>(x.sizes.size())}, {}};
  ref::for_each_index(x.sizes, [&](int64_t i, const Sizes& p) {
    if (x.v[at(i)] == 0) return;  // NaN is nonzero
    ++out.sizes[0];
    for (int64_t c : p) out.v.push_back(static_cast<double>(c));
  });
  return out;
}

// a strictly before b in ascending order, NaN the largest value.
bool less_nan_last(double a, double b) { return !std::isnan(a) && (std::isnan(b) || a < b); }

// The positions 0..n-1 of `v` ordered by insertion sort (stable): ascending, or descending.
std::vector<int64_t> stable_order(const Vec& v, bool descending) {
  std::vector<int64_t> order;
  for (int64_t i = 0; i < static_cast<int64_t>(v.size()); ++i) {
    size_t j = order.size();
    // Move i before every element it strictly precedes (equal elements stay in input order).
    while (j > 0 && (descending ? less_nan_last(v[at(order[j - 1])], v[at(i)])
                                : less_nan_last(v[at(i)], v[at(order[j - 1])])))
      --j;
    order.insert(order.begin() + static_cast<std::ptrdiff_t>(j), i);
  }
  return order;
}

struct SortRef {
  Ref values, indices;
};

// Each line of x along dim sorted, keeping its first `keep` elements.
SortRef sort_ref(const Ref& x, int64_t dim, bool descending, int64_t keep) {
  const int d = ref::wrap_dim(dim, static_cast<int64_t>(x.sizes.size()));
  Sizes out_sizes = x.sizes;
  out_sizes[at(d)] = keep;
  SortRef r{{out_sizes, Vec(at(ref::numel_of(out_sizes)))}, {out_sizes, Vec(at(ref::numel_of(out_sizes)))}};
  Sizes lines = x.sizes;
  lines[at(d)] = 1;
  ref::for_each_index(lines, [&](int64_t, const Sizes& p) {
    Vec line;
    for (int64_t j = 0; j < x.sizes[at(d)]; ++j) line.push_back(x.v[at(ref::ravel_with(p, x.sizes, at(d), j))]);
    const std::vector<int64_t> order = stable_order(line, descending);
    for (int64_t j = 0; j < keep; ++j) {
      const int64_t o = ref::ravel_with(p, out_sizes, at(d), j);
      r.values.v[at(o)] = line[at(order[at(j)])];
      r.indices.v[at(o)] = static_cast<double>(order[at(j)]);
    }
  });
  return r;
}

struct UniqueRef {
  Ref values, inverse, counts;
};

UniqueRef unique_ref(const Ref& x) {
  const std::vector<int64_t> order = stable_order(x.v, false);
  UniqueRef r{{{0}, {}}, {x.sizes, Vec(x.v.size())}, {{0}, {}}};
  for (size_t j = 0; j < order.size(); ++j) {
    const double v = x.v[at(order[j])];
    if (j == 0 || !(v == r.values.v.back())) {  // NaN equals nothing: each is its own value
      r.values.v.push_back(v);
      r.counts.v.push_back(0);
    }
    r.counts.v.back() += 1;
    r.inverse.v[at(order[j])] = static_cast<double>(r.values.v.size() - 1);
  }
  r.values.sizes[0] = r.counts.sizes[0] = static_cast<int64_t>(r.values.v.size());
  return r;
}

Run run(std::function<Tensor(const Ins&)> f) {
  return [f](const Ins& in, ScalarType, Device) { return f(in); };
}

// [3, 5] data with NaN at two places (the integer dtypes and bool hold what NaN converts to).
Tensor with_nans(ScalarType dt) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  return from_vector(Vec{1, nan, -2, 0.5, 1, 3, -1, 2, nan, -2, 0, 2, -0.5, 1.5, 2}, {3, 5}).to(dt);
}

void add_index_put_cases(Builder& b) {
  // Index 2 repeats (added twice, in order); -1 counts from the end.
  auto index_add_inputs = [](ScalarType dt) {
    return CaseInputs{{data(dt, {3, 4}, -3, 3, 70), index_tensor({2, 0, -1, 2}, {4}), data(dt, {3, 4}, -3, 3, 71)},
                      0b101};
  };
  b.add("index_add", OpId::index_add, A, A, index_add_inputs,
        run([](const Ins& in) { return index_add(in[0], 1, in[1], in[2]); }))
      .with([](const Refs& in, ScalarType dt) {
        return index_add_ref(in[0], 1, in[1], in[2], 1, [dt](double v) { return stored(dt, v); });
      }, kExact);
  // alpha * source is exact (a power of two), then each addition rounds (bool refuses alpha 2).
  b.add("index_add/alpha", OpId::index_add, N, N, index_add_inputs,
        run([](const Ins& in) { return index_add(in[0], -1, in[1], in[2], 2); }))
      .with([](const Refs& in, ScalarType dt) {
        return index_add_ref(in[0], 1, in[1], in[2], 2, [dt](double v) { return stored(dt, v); });
      }, kExact);
  // Two index tensors [2, 1] and [3] broadcast to [2, 3] positions of the first two dims of [3, 4, 2].
  auto put_inputs = [](std::vector<int64_t> rows, std::vector<int64_t> cols) {
    return [=](ScalarType dt) {
      return CaseInputs{{data(dt, {3, 4, 2}, -3, 3, 72), data(dt, {3, 2}, -3, 3, 73), index_tensor(rows, {2, 1}),
                         index_tensor(cols, {3})},
                        0b11};
    };
  };
  auto put_ref = [](bool accumulate) {
    return [=](const Refs& in, ScalarType dt) {
      return index_put_ref(in[0], {in[2], in[3]}, in[1], accumulate, [dt](double v) { return stored(dt, v); });
    };
  };
  // Distinct positions for the plain write (which of two writes to one position wins is unspecified).
  b.add("index_put", OpId::index_put, A, A, put_inputs({0, -1}, {1, 3, 0}),
        run([](const Ins& in) { return index_put(in[0], {in[2], in[3]}, in[1]); }))
      .with(put_ref(false), kExact);
  b.add("index_put/accumulate", OpId::index_put, A, A, put_inputs({1, 1}, {2, -2, 0}),
        run([](const Ins& in) { return index_put(in[0], {in[2], in[3]}, in[1], true); }))
      .with(put_ref(true), kExact);
  b.add("masked_select", OpId::masked_select, A, A,
        [](ScalarType dt) { return CaseInputs{{data(dt, {3, 4}, -3, 3, 74), data(kBool, {4}, 0, 1, 75)}, 0b01}; },
        run([](const Ins& in) { return masked_select(in[0], in[1]); }))
      .with([](const Refs& in, ScalarType) { return masked_select_ref(in[0], in[1]); }, kExact);
  // Integers in [-1, 1] and bool give zeros among the values.
  b.add("nonzero", OpId::nonzero, A, A,
        [](ScalarType dt) { return CaseInputs{{data(dt, {3, 2, 3}, -1, 1, 76)}, 0}; },
        run([](const Ins& in) { return nonzero(in[0]); }), kInt64Out)
      .with([](const Refs& in, ScalarType) { return nonzero_ref(in[0]); }, kExact);
}

void add_sort_cases(Builder& b) {
  // Integer inputs in [-3, 3] have ties, which keep their input order.
  auto sort_inputs = [](ScalarType dt) { return CaseInputs{{data(dt, {3, 5}, -3, 3, 77)}, 0b1}; };
  b.add("sort/values", OpId::sort, A, A, sort_inputs, run([](const Ins& in) { return sort(in[0]).values; }))
      .with([](const Refs& in, ScalarType) { return sort_ref(in[0], -1, false, 5).values; }, kExact);
  b.add("sort/indices descending", OpId::sort, A, A, sort_inputs,
        run([](const Ins& in) { return sort(in[0], 0, true, true).indices; }), kInt64Out)
      .with([](const Refs& in, ScalarType) { return sort_ref(in[0], 0, true, 3).indices; }, kExact);
  b.add("sort/nan", OpId::sort, A, A, [](ScalarType dt) { return CaseInputs{{with_nans(dt)}, 0}; },
        run([](const Ins& in) { return sort(in[0], 1, true).indices; }), kInt64Out)
      .with([](const Refs& in, ScalarType) { return sort_ref(in[0], 1, true, 5).indices; }, kExact);
  b.add("argsort", OpId::argsort, A, A, sort_inputs,
        run([](const Ins& in) { return argsort(in[0], 1, false, true); }), kInt64Out)
      .with([](const Refs& in, ScalarType) { return sort_ref(in[0], 1, false, 5).indices; }, kExact);
  b.add("topk/values", OpId::topk, A, A, sort_inputs, run([](const Ins& in) { return topk(in[0], 2, 0).values; }))
      .with([](const Refs& in, ScalarType) { return sort_ref(in[0], 0, true, 2).values; }, kExact);
  b.add("topk/smallest indices", OpId::topk, A, A, sort_inputs,
        run([](const Ins& in) { return topk(in[0], 3, 1, false).indices; }), kInt64Out)
      .with([](const Refs& in, ScalarType) { return sort_ref(in[0], 1, false, 3).indices; }, kExact);
  b.add("topk/nan", OpId::topk, A, A, [](ScalarType dt) { return CaseInputs{{with_nans(dt)}, 0}; },
        run([](const Ins& in) { return topk(in[0], 2, 1).values; }))
      .with([](const Refs& in, ScalarType) { return sort_ref(in[0], 1, true, 2).values; }, kExact);
  auto unique_inputs = [](ScalarType dt) { return CaseInputs{{data(dt, {3, 4}, -2, 2, 78)}, 0}; };
  b.add("unique/values", OpId::unique, A, A, unique_inputs, run([](const Ins& in) { return unique(in[0]).values; }))
      .with([](const Refs& in, ScalarType) { return unique_ref(in[0]).values; }, kExact);
  b.add("unique/inverse", OpId::unique, A, A, unique_inputs,
        run([](const Ins& in) { return unique(in[0], true, true).inverse; }), kInt64Out)
      .with([](const Refs& in, ScalarType) { return unique_ref(in[0]).inverse; }, kExact);
  b.add("unique/counts", OpId::unique, A, A, unique_inputs,
        run([](const Ins& in) { return unique(in[0], true, false, true).counts; }), kInt64Out)
      .with([](const Refs& in, ScalarType) { return unique_ref(in[0]).counts; }, kExact);
  b.add("unique/nan", OpId::unique, A, A, [](ScalarType dt) { return CaseInputs{{with_nans(dt)}, 0}; },
        run([](const Ins& in) { return unique(in[0]).values; }))
      .with([](const Refs& in, ScalarType) { return unique_ref(in[0]).values; }, kExact);
}

}  // namespace

void add_select_cases(Builder& b) {
  add_index_put_cases(b);
  add_sort_cases(b);
}

}  // namespace mixt::testing
