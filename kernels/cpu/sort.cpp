// Sorting on the CPU: sort, argsort and topk (a stable sort of each line along the dim,
// topk keeping its first k), and unique (one stable sort of the flattened input).
// Elements compare by their exact value (integers as int64, floats as double) with NaN
// as the largest value; equal elements keep their input order, in both directions.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>
#include <vector>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/common/index_checks.h>
#include <mixt/kernels/common/sort_checks.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/runtime/dtype_visit.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cpu {
namespace {

// The value an element sorts by: integers and bool exactly as int64, floats as double.
template <class T>
auto sort_key(T v) {
  if constexpr (std::is_integral_v<T>) return static_cast<int64_t>(v);
  else if constexpr (std::is_floating_point_v<T>) return static_cast<double>(v);
  else return static_cast<double>(static_cast<float>(v));
}

// a before b in ascending order, NaN as the largest value (two NaNs are equivalent).
template <class K>
bool before(K a, K b) {
  if constexpr (std::is_floating_point_v<K>) return !std::isnan(a) && (std::isnan(b) || a < b);
  else return a < b;
}

// Sets output i to `t`, or copies `t` into the caller's output i.
void set_output(OpCall& c, int i, const Tensor& t) {
  Tensor& out = c.out[static_cast<size_t>(i)];
  if (!out.defined()) {
    out = t;
    return;
  }
  MIXT_CHECK_OP(out.sizes() == t.sizes() && out.dtype() == t.dtype(), c, "output {} is {} but the result is {}", i,
                out.describe(), t.describe());
  host::copy_into(out, t, c);
}

struct Sorted {
  Tensor values;   // undefined unless asked for
  Tensor indices;  // int64
};

// Every line of `t` along dim `d` stably sorted, keeping its first `keep` elements: the
// values (when `with_values`) and int64 indices, contiguous, t's sizes with `keep` at d.
Sorted sort_lines(const OpCall& c, const Tensor& t_in, int d, bool descending, int64_t keep, bool with_values) {
  MIXT_CHECK_OP(t_in.is_cpu(), c, "the CPU kernel got an input on {}", t_in.device());
  const Tensor t = host::contiguous(index_checks::at_least_1d(t_in), c);
  const Shape& sizes = t.sizes();
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < d; ++k) outer *= sizes[k];
  for (int k = d + 1; k < sizes.size(); ++k) inner *= sizes[k];
  const int64_t len = sizes[d];
  Shape out_sizes = sizes;
  out_sizes[d] = keep;
  Sorted r;
  r.indices = make_empty(out_sizes, kInt64, Device::cpu());
  if (with_values) r.values = make_empty(out_sizes, t.dtype(), Device::cpu());
  if (outer * inner * keep == 0) return r;
  visit_dtype(t.dtype(), op_name(c.op).data(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    using K = decltype(sort_key(T{}));
    const T* src = static_cast<const T*>(t.data_ptr());
    T* vals = with_values ? static_cast<T*>(r.values.data_ptr()) : nullptr;
    int64_t* idx = static_cast<int64_t*>(r.indices.data_ptr());
    parallel_for(outer * inner, std::max<int64_t>(1, kParallelGrain / len), [&](int64_t b, int64_t e) {
      std::vector<int64_t> order(static_cast<size_t>(len));
      std::vector<K> keys(static_cast<size_t>(len));
      for (int64_t line = b; line < e; ++line) {
        const int64_t o = line / inner, i = line % inner, base = o * len * inner + i;
        for (int64_t j = 0; j < len; ++j) keys[j] = sort_key(src[base + j * inner]);
        std::iota(order.begin(), order.end(), int64_t{0});
        std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) {
          return descending ? before(keys[y], keys[x]) : before(keys[x], keys[y]);
        });
        for (int64_t j = 0; j < keep; ++j) {
          const int64_t at = (o * keep + j) * inner + i;
          idx[at] = order[j];
          if (vals) vals[at] = src[base + order[j] * inner];
        }
      }
    });
  });
  return r;
}

void sort_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& t = c.in[0];
  const auto& a = c.attrs.get<attrs::Sort>();
  const int d = sort_checks::sort_dim(c, t, a.dim);
  const int64_t len = t.dim() == 0 ? 1 : t.sizes()[d];
  const bool argsort = c.op == OpId::argsort;
  const Sorted s = sort_lines(c, t, d, a.descending, len, !argsort);
  if (argsort) {
    set_output(c, 0, s.indices.reshape(t.sizes()));
    return;
  }
  set_output(c, 0, s.values.reshape(t.sizes()));
  set_output(c, 1, s.indices.reshape(t.sizes()));
}

void topk_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& t = c.in[0];
  const auto& a = c.attrs.get<attrs::Topk>();
  const Shape sizes = sort_checks::topk_sizes(c, t);
  const Sorted s = sort_lines(c, t, sort_checks::sort_dim(c, t, a.dim), a.largest, a.k, true);
  set_output(c, 0, s.values.reshape(sizes));
  set_output(c, 1, s.indices.reshape(sizes));
}

// unique: the flattened input stably sorted; a value starts a new group unless it equals
// the previous one (a NaN equals nothing, so each NaN is its own group).
void unique_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& t_in = c.in[0];
  MIXT_CHECK_OP(t_in.is_cpu(), c, "the CPU kernel got an input on {}", t_in.device());
  const auto& a = c.attrs.get<attrs::Unique>();
  const Tensor t = host::contiguous(t_in, c);
  const int64_t n = t.numel();
  std::vector<int64_t> inverse(static_cast<size_t>(n)), counts;
  std::vector<int64_t> firsts;  // the flat position of each group's first element
  visit_dtype(t.dtype(), "unique", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using K = decltype(sort_key(T{}));
    const T* src = static_cast<const T*>(t.data_ptr());
    std::vector<K> keys(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) keys[j] = sort_key(src[j]);
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return before(keys[x], keys[y]); });
    for (int64_t j = 0; j < n; ++j) {
      const K k = keys[order[j]];
      const bool same = j > 0 && k == keys[order[j - 1]];  // false for NaN
      if (!same) {
        firsts.push_back(order[j]);
        counts.push_back(0);
      }
      ++counts.back();
      inverse[order[j]] = static_cast<int64_t>(firsts.size()) - 1;
    }
  });
  const int64_t groups = static_cast<int64_t>(firsts.size());
  const Tensor values = make_empty({groups}, t.dtype(), Device::cpu());
  const int64_t es = t.element_size();
  for (int64_t g = 0; g < groups; ++g)
    std::memcpy(static_cast<char*>(values.data_ptr()) + g * es, static_cast<const char*>(t.data_ptr()) + firsts[g] * es,
                static_cast<size_t>(es));
  set_output(c, 0, values);
  if (a.return_inverse) set_output(c, 1, from_vector(inverse, {n}).reshape(t_in.sizes()));
  if (a.return_counts) set_output(c, 2, from_vector(counts, {groups}));
}

}  // namespace

void register_sort_kernels() {
  register_kernel(OpId::sort, DispatchKey::CPU, sort_kernel);
  register_kernel(OpId::argsort, DispatchKey::CPU, sort_kernel);
  register_kernel(OpId::topk, DispatchKey::CPU, topk_kernel);
  register_kernel(OpId::unique, DispatchKey::CPU, unique_kernel);
}

}  // namespace mixt::cpu
