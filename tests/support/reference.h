// Independent references for the CPU tests: values in double, row-major, and
// plain loops written from each op's definition (PyTorch's documented formulas,
// C++ <cmath> for the math functions). They never call mixt, so a formula bug in
// mixt cannot hide in its own reference. The nn ops, losses and optimizer steps
// are in reference_nn.h.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace mixt::testing::ref {

using Vec = std::vector<double>;
using Sizes = std::vector<int64_t>;

// A tensor's logical values in row-major order, with its sizes (empty: a 0-dim value).
// `slack` (empty, or one per value) is extra absolute error a comparison allows for
// choices the reference cannot pin down, such as which neighbour an intermediate value
// stored in a narrow dtype rounded to when it lay within float32 error of a tie.
struct Ref {
  Sizes sizes;
  Vec v;
  Vec slack = {};
};

int64_t numel_of(const Sizes& s);
// Row-major multi-index of linear position i, and back.
Sizes unravel(int64_t i, const Sizes& sizes);
int64_t ravel(const Sizes& idx, const Sizes& sizes);
// ravel with idx[d] replaced by v.
int64_t ravel_with(const Sizes& idx, const Sizes& sizes, size_t d, int64_t v);

// Calls f(i, idx) for every row-major position i of `sizes` with its multi-index idx.
template <class F>
void for_each_index(const Sizes& sizes, F&& f) {
  const int64_t n = numel_of(sizes);
  Sizes idx(sizes.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    f(i, static_cast<const Sizes&>(idx));
    for (size_t d = sizes.size(); d-- > 0;) {
      if (++idx[d] < sizes[d]) break;
      idx[d] = 0;
    }
  }
}
// `d` wrapped into [0, nd) (negative dims count from the end).
int wrap_dim(int64_t d, int64_t nd);
// Wrapped and sorted dims (empty: all of them).
std::vector<int> wrap_dims(const Sizes& dims, int nd);

// ---- elementwise (numpy broadcasting) ----
Sizes broadcast_sizes(const Sizes& a, const Sizes& b);
Ref expand(const Ref& r, const Sizes& to);
Ref map(const Ref& a, const std::function<double(double)>& f);
Ref zip(const Ref& a, const Ref& b, const std::function<double(double, double)>& f);
Ref zip3(const Ref& a, const Ref& b, const Ref& c, const std::function<double(double, double, double)>& f);

// The definition of a unary op by name ("exp", "gelu_tanh", ...) on one value, in double:
// <cmath> where C++ has the function, the textbook formula otherwise (sigmoid = 1 / (1 + e^-x)).
// Raises std::invalid_argument for an unknown name.
double unary(std::string_view name, double x);
// softplus(x) = log(1 + e^(beta x)) / beta, x where beta x > threshold.
double softplus(double x, double beta, double threshold);
// elu(x) = scale x for x > 0, else scale alpha (e^(input_scale x) - 1).
double elu(double x, double alpha, double scale, double input_scale);
// erf^-1(y) by bisection on std::erf (and on erfc near +-1, where erf has no resolution left).
double erfinv(double y);
// floor division as Python's //, truncated division, in double.
double div_floor(double a, double b);

// ---- views and movement ----
Ref reshape(const Ref& r, const Sizes& sizes);
Ref permute(const Ref& r, const Sizes& perm);
Ref transpose(const Ref& r, int64_t d0, int64_t d1);
Ref slice(const Ref& r, int64_t dim, int64_t start, int64_t end, int64_t step);
Ref select(const Ref& r, int64_t dim, int64_t index);
Ref unsqueeze(const Ref& r, int64_t dim);
// A view over r's row-major storage with element strides and an offset.
Ref as_strided(const Ref& r, const Sizes& sizes, const Sizes& strides, int64_t offset);
Ref cat(const std::vector<Ref>& parts, int64_t dim);
Ref stack(const std::vector<Ref>& parts, int64_t dim);

// ---- indexing (indices held as doubles; negative ones count from the end) ----
Ref index_select(const Ref& x, int64_t dim, const Ref& index);
Ref gather(const Ref& x, int64_t dim, const Ref& index);
// scatter: out = x with out[..index..] = src; scatter_add adds instead, rounding each
// addition with `round` (the kernels accumulate in the tensor's own dtype, in index order).
Ref scatter(const Ref& x, int64_t dim, const Ref& index, const Ref& src);
Ref scatter_add(const Ref& x, int64_t dim, const Ref& index, const Ref& src,
                const std::function<double(double)>& round);
Ref masked_fill(const Ref& x, const Ref& mask, double value);
Ref where(const Ref& cond, const Ref& a, const Ref& b);
Ref embedding(const Ref& weight, const Ref& index);

// ---- reductions and scans ----
// Sizes of a reduction of r over dims (empty: all).
Sizes reduced_sizes(const Sizes& sizes, const Sizes& dims, bool keepdim);
// Folds each element into its output's accumulator: fold(acc, value, position in the
// reduced dims, row-major). Returns the accumulators in output order.
// For a reduction of `sizes` over `dims`: each dim's stride in the row-major output (0 for a reduced
// dim) and in the row-major reduced positions (0 for a kept dim), and the number of outputs.
struct ReduceStrides {
  Sizes out, red;
  int64_t outputs = 1;
};
ReduceStrides reduce_strides(const Sizes& sizes, const Sizes& dims);

template <class Acc>
std::vector<Acc> reduce(const Ref& r, const Sizes& dims, Acc init, const std::function<void(Acc&, double, int64_t)>& fold) {
  const ReduceStrides st = reduce_strides(r.sizes, dims);
  std::vector<Acc> acc(static_cast<size_t>(st.outputs), init);
  for_each_index(r.sizes, [&](int64_t i, const Sizes& idx) {
    int64_t o = 0, k = 0;
    for (size_t d = 0; d < idx.size(); ++d) o += idx[d] * st.out[d], k += idx[d] * st.red[d];
    fold(acc[static_cast<size_t>(o)], r.v[static_cast<size_t>(i)], k);
  });
  return acc;
}
Ref sum(const Ref& r, const Sizes& dims = {}, bool keepdim = false);
Ref mean(const Ref& r, const Sizes& dims = {}, bool keepdim = false);
Ref prod(const Ref& r, const Sizes& dims = {}, bool keepdim = false);
// amax / amin: NaN wins.
Ref amax(const Ref& r, const Sizes& dims = {}, bool keepdim = false);
Ref amin(const Ref& r, const Sizes& dims = {}, bool keepdim = false);
// The first maximum (or minimum) along `dim`, the first NaN if there is one: values and indices.
struct ArgResult {
  Ref values, indices;
};
ArgResult max_dim(const Ref& r, int64_t dim, bool keepdim, bool is_max = true);
// Two-pass variance: sum((x - mean)^2) / (n - correction) (NaN for 0/0, Inf for x/0).
Ref var(const Ref& r, const Sizes& dims, double correction, bool keepdim = false);
Ref std_dev(const Ref& r, const Sizes& dims, double correction, bool keepdim = false);
// (sum |x|^p)^(1/p), max |x| for Inf, min |x| for -Inf, the count of non-zeros for 0.
Ref norm(const Ref& r, double p, const Sizes& dims = {}, bool keepdim = false);
// log(sum(exp(x))), max-subtracted.
Ref logsumexp(const Ref& r, const Sizes& dims, bool keepdim = false);
Ref all(const Ref& r, const Sizes& dims = {}, bool keepdim = false);
Ref any(const Ref& r, const Sizes& dims = {}, bool keepdim = false);
// Running sum (or product) along `dim`.
Ref scan(const Ref& r, int64_t dim, bool product);

// ---- matmul family ----
// numpy-rule matmul (1-D operands, broadcast batches), sums of products in double.
Ref matmul(const Ref& a, const Ref& b);
// beta * bias + alpha * (a @ b) (bias broadcast; beta = 0 ignores it, NaN included).
Ref addmm(const Ref& bias, const Ref& a, const Ref& b, double beta, double alpha);
// x @ w^T (+ bias).
Ref linear(const Ref& x, const Ref& w, const Ref* bias = nullptr);
// linear's gradients from grad_output g [*, out], x [*, in], w [out, in] by their definitions:
// input = g @ w (x's sizes), weight = sum over rows of g[r, o] * x[r, i], bias = sum over rows of g.
struct LinearGrads {
  Ref input, weight, bias;
};
LinearGrads linear_backward(const Ref& g, const Ref& x, const Ref& w);
Ref outer(const Ref& a, const Ref& b);
// torch._scaled_mm in double: v = (a @ b) * scale_a * scale_b + bias, the scales one value each or
// one per row of a ([M, 1]) and column of b ([1, N]). A float8 result (`limit` > 0, its largest finite
// value) is v * scale_result clamped to [-limit, limit] (NaN stays NaN); `amax`, when given, receives
// max |v| before that (NaN when any v is NaN; 0 for an empty result). Each value's slack is what
// float32 arithmetic may add (k + 3 roundings at the size of its terms): the order of sgemm's
// sums is the kernel's choice.
Ref scaled_mm(const Ref& a, const Ref& b, const Ref& scale_a, const Ref& scale_b, const Ref* bias = nullptr,
              double scale_result = 1.0, double limit = 0.0, Ref* amax = nullptr);

// ---- creation ----
Ref full(const Sizes& sizes, double value);
Ref arange(double start, double end, double step);
Ref linspace(double start, double end, int64_t steps);
Ref eye(int64_t n, int64_t m);

}  // namespace mixt::testing::ref
