// The op front ends: typed functions that build an OpCall and dispatch it. Math on
// tensors lives here, in mixt::; the neural-network layer ops (linear, embedding, the
// nn-only activations gelu/silu/softplus, norms, dropout, losses, attention, conv) live
// in mixt::nn::functional (runtime/ops/nn.h), as in PyTorch. See docs/ops.md. Every
// front end lives in runtime/ops (Note [Layering]).
// Every function raises mixt::Error (naming the op and its inputs) on bad input.
#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include <mixt/runtime/generator.h>
#include <mixt/runtime/tensor.h>

namespace mixt {

// ---- creation (TensorOptions::dtype Undefined = the factory's default) ----
Tensor empty(const Shape& sizes, TensorOptions options = {});
Tensor zeros(const Shape& sizes, TensorOptions options = {});
Tensor ones(const Shape& sizes, TensorOptions options = {});
// Filled with `value`; default dtype from the value (bool, int64 or float32).
Tensor full(const Shape& sizes, const Scalar& value, TensorOptions options = {});
// [0, end) in steps of 1; int64 when every bound is an integer, else float32.
Tensor arange(const Scalar& end, TensorOptions options = {});
Tensor arange(const Scalar& start, const Scalar& end, const Scalar& step = 1, TensorOptions options = {});
// `steps` evenly spaced values from start to end inclusive.
Tensor linspace(const Scalar& start, const Scalar& end, int64_t steps, TensorOptions options = {});
// Identity matrix n x m (m = n when negative).
Tensor eye(int64_t n, int64_t m = -1, TensorOptions options = {});
// Uniform [0, 1).
Tensor rand(const Shape& sizes, TensorOptions options = {}, Generator* gen = nullptr);
// Standard normal.
Tensor randn(const Shape& sizes, TensorOptions options = {}, Generator* gen = nullptr);
// Integers uniform in [low, high); default dtype int64.
Tensor randint(int64_t low, int64_t high, const Shape& sizes, TensorOptions options = {},
               Generator* gen = nullptr);
// *_like: shape (and by default dtype and device) of `t`.
Tensor empty_like(const Tensor& t, TensorOptions options = {});
Tensor zeros_like(const Tensor& t, TensorOptions options = {});
Tensor ones_like(const Tensor& t, TensorOptions options = {});
Tensor full_like(const Tensor& t, const Scalar& value, TensorOptions options = {});
Tensor rand_like(const Tensor& t, TensorOptions options = {}, Generator* gen = nullptr);
Tensor randn_like(const Tensor& t, TensorOptions options = {}, Generator* gen = nullptr);
Tensor randint_like(const Tensor& t, int64_t low, int64_t high, TensorOptions options = {},
                    Generator* gen = nullptr);
// In-place fills.
Tensor& fill_(Tensor& t, const Scalar& value);
Tensor& zero_(Tensor& t);
Tensor& uniform_(Tensor& t, double low = 0.0, double high = 1.0, Generator* gen = nullptr);
Tensor& normal_(Tensor& t, double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
Tensor& random_(Tensor& t, int64_t low, int64_t high, Generator* gen = nullptr);

// ---- views (share storage) ----
// New shape with the same elements; one size may be -1. Needs compatible strides.
Tensor view(const Tensor& t, const Shape& shape);
// The same bytes read as `dtype` (a bit cast, not a conversion; not differentiable). When
// the element sizes differ the last dim (stride 1) scales by their ratio. Note [Bit-cast views].
Tensor view(const Tensor& t, ScalarType dtype);
// view() when possible, else a contiguous copy.
Tensor reshape(const Tensor& t, const Shape& shape);
Tensor permute(const Tensor& t, const Shape& dims);
Tensor transpose(const Tensor& t, int64_t dim0, int64_t dim1);
Tensor slice(const Tensor& t, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor narrow(const Tensor& t, int64_t dim, int64_t start, int64_t length);
Tensor select(const Tensor& t, int64_t dim, int64_t index);
// Broadcast to `shape` without copying (-1 keeps a size).
Tensor expand(const Tensor& t, const Shape& shape);
Tensor broadcast_to(const Tensor& t, const Shape& shape);
// Removes size-1 dims (all of them, or those in `dims`).
Tensor squeeze(const Tensor& t);
Tensor squeeze(const Tensor& t, const Shape& dims);
Tensor unsqueeze(const Tensor& t, int64_t dim);
Tensor flatten(const Tensor& t, int64_t start_dim = 0, int64_t end_dim = -1);
Tensor as_strided(const Tensor& t, const Shape& sizes, const Shape& strides, int64_t storage_offset = -1);
// Pieces of `split_size` along dim (the last may be smaller).
std::vector<Tensor> split(const Tensor& t, int64_t split_size, int64_t dim = 0);
std::vector<Tensor> split_with_sizes(const Tensor& t, const std::vector<int64_t>& sizes, int64_t dim = 0);
// `chunks` pieces of equal size (the last may be smaller).
std::vector<Tensor> chunk(const Tensor& t, int64_t chunks, int64_t dim = 0);

// ---- copies and movement ----
Tensor contiguous(const Tensor& t);
Tensor clone(const Tensor& t);
// Copies src into dst (broadcasting src, casting, across devices); returns dst.
Tensor& copy_(Tensor& dst, const Tensor& src);
Tensor to(const Tensor& t, ScalarType dtype);
Tensor to(const Tensor& t, Device device);
Tensor to(const Tensor& t, Device device, ScalarType dtype);
Tensor cat(const std::vector<Tensor>& tensors, int64_t dim = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t dim = 0);

// ---- indexing ----
Tensor index_select(const Tensor& t, int64_t dim, const Tensor& index);
Tensor gather(const Tensor& t, int64_t dim, const Tensor& index);
Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src);
Tensor scatter(const Tensor& t, int64_t dim, const Tensor& index, const Scalar& value);
Tensor& scatter_(Tensor& t, int64_t dim, const Tensor& index, const Tensor& src);
Tensor& scatter_(Tensor& t, int64_t dim, const Tensor& index, const Scalar& value);
Tensor scatter_add(const Tensor& t, int64_t dim, const Tensor& index, const Tensor& src);
Tensor& scatter_add_(Tensor& t, int64_t dim, const Tensor& index, const Tensor& src);
Tensor masked_fill(const Tensor& t, const Tensor& mask, const Scalar& value);
Tensor& masked_fill_(Tensor& t, const Tensor& mask, const Scalar& value);
// condition ? a : b, broadcasting all three.
Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& condition, const Scalar& a, const Tensor& b);
Tensor where(const Tensor& condition, const Tensor& a, const Scalar& b);
// self with alpha * source added at the slices `index` (1-D, int64 or int32) along `dim`;
// source is self's shape with index.numel() at `dim`. Repeated indices add up, in index order.
Tensor index_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& source, const Scalar& alpha = 1);
// self with `values` written at self[indices[0][i], indices[1][i], ...]: the index tensors (int64 or
// int32, negative counts from the end) address self's leading dims and broadcast together; values
// broadcast to the indexed shape. accumulate: added instead (repeated indices add up, in index order).
Tensor index_put(const Tensor& self, const std::vector<Tensor>& indices, const Tensor& values,
                 bool accumulate = false);
// The elements of t where the bool mask (broadcast with t) is true, as a 1-D tensor in row-major order.
Tensor masked_select(const Tensor& t, const Tensor& mask);
// The coordinates of t's nonzero elements, row-major: int64 [n, t.dim()].
Tensor nonzero(const Tensor& t);

// ---- elementwise unary ----
#define MIXT_DECLARE_UNARY_FRONT(name) \
  Tensor name(const Tensor& t);        \
  Tensor& name##_(Tensor& t);
MIXT_DECLARE_UNARY_FRONT(neg)
MIXT_DECLARE_UNARY_FRONT(abs)
MIXT_DECLARE_UNARY_FRONT(sign)
MIXT_DECLARE_UNARY_FRONT(exp)
MIXT_DECLARE_UNARY_FRONT(expm1)
MIXT_DECLARE_UNARY_FRONT(log)
MIXT_DECLARE_UNARY_FRONT(log1p)
MIXT_DECLARE_UNARY_FRONT(log2)
MIXT_DECLARE_UNARY_FRONT(log10)
MIXT_DECLARE_UNARY_FRONT(sqrt)
MIXT_DECLARE_UNARY_FRONT(rsqrt)
MIXT_DECLARE_UNARY_FRONT(reciprocal)
MIXT_DECLARE_UNARY_FRONT(sin)
MIXT_DECLARE_UNARY_FRONT(cos)
MIXT_DECLARE_UNARY_FRONT(tan)
MIXT_DECLARE_UNARY_FRONT(tanh)
MIXT_DECLARE_UNARY_FRONT(sigmoid)
MIXT_DECLARE_UNARY_FRONT(relu)
MIXT_DECLARE_UNARY_FRONT(erf)
MIXT_DECLARE_UNARY_FRONT(erfinv)
MIXT_DECLARE_UNARY_FRONT(floor)
MIXT_DECLARE_UNARY_FRONT(ceil)
MIXT_DECLARE_UNARY_FRONT(acos)
MIXT_DECLARE_UNARY_FRONT(asin)
MIXT_DECLARE_UNARY_FRONT(sinh)
MIXT_DECLARE_UNARY_FRONT(cosh)
MIXT_DECLARE_UNARY_FRONT(asinh)
MIXT_DECLARE_UNARY_FRONT(acosh)
MIXT_DECLARE_UNARY_FRONT(atanh)
MIXT_DECLARE_UNARY_FRONT(trunc)  // toward zero; the identity on integers
MIXT_DECLARE_UNARY_FRONT(frac)   // x - trunc(x), floating tensors only
#undef MIXT_DECLARE_UNARY_FRONT
// log(x / (1 - x)); with `eps`, x is first clamped to [eps, 1 - eps].
Tensor logit(const Tensor& t, std::optional<double> eps = std::nullopt);
Tensor& logit_(Tensor& t, std::optional<double> eps = std::nullopt);
// Round half to even, at `decimals` decimal places.
Tensor round(const Tensor& t, int64_t decimals = 0);
Tensor& round_(Tensor& t, int64_t decimals = 0);
// Clamp to [min, max]; either bound may be an empty Scalar().
Tensor clamp(const Tensor& t, const Scalar& min, const Scalar& max = Scalar());
Tensor& clamp_(Tensor& t, const Scalar& min, const Scalar& max = Scalar());
Tensor clamp_min(const Tensor& t, const Scalar& min);
Tensor clamp_max(const Tensor& t, const Scalar& max);
Tensor isfinite(const Tensor& t);
Tensor isnan(const Tensor& t);
Tensor isinf(const Tensor& t);
Tensor logical_not(const Tensor& t);

// ---- elementwise binary (broadcasting, type promotion) ----
Tensor add(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor add(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor sub(const Tensor& a, const Scalar& b, const Scalar& alpha = 1);
// a - alpha * b with a scalar first operand.
Tensor sub(const Scalar& a, const Tensor& b, const Scalar& alpha = 1);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Scalar& b);
// rounding_mode: "" (true division), "trunc" or "floor".
Tensor div(const Tensor& a, const Tensor& b, std::string_view rounding_mode = "");
Tensor div(const Tensor& a, const Scalar& b, std::string_view rounding_mode = "");
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, const Scalar& b);
Tensor pow(const Scalar& a, const Tensor& b);
Tensor atan2(const Tensor& a, const Tensor& b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor& add_(Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor& add_(Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor& sub_(Tensor& a, const Tensor& b, const Scalar& alpha = 1);
Tensor& sub_(Tensor& a, const Scalar& b, const Scalar& alpha = 1);
Tensor& mul_(Tensor& a, const Tensor& b);
Tensor& mul_(Tensor& a, const Scalar& b);
Tensor& div_(Tensor& a, const Tensor& b, std::string_view rounding_mode = "");
Tensor& div_(Tensor& a, const Scalar& b, std::string_view rounding_mode = "");
Tensor& pow_(Tensor& a, const Tensor& b);
Tensor& pow_(Tensor& a, const Scalar& b);
Tensor& atan2_(Tensor& a, const Tensor& b);
// Comparisons and logical ops return bool tensors.
#define MIXT_DECLARE_COMPARE_FRONT(name)            \
  Tensor name(const Tensor& a, const Tensor& b); \
  Tensor name(const Tensor& a, const Scalar& b);
MIXT_DECLARE_COMPARE_FRONT(eq)
MIXT_DECLARE_COMPARE_FRONT(ne)
MIXT_DECLARE_COMPARE_FRONT(lt)
MIXT_DECLARE_COMPARE_FRONT(le)
MIXT_DECLARE_COMPARE_FRONT(gt)
MIXT_DECLARE_COMPARE_FRONT(ge)
#undef MIXT_DECLARE_COMPARE_FRONT
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_xor(const Tensor& a, const Tensor& b);
// t + value * t1 * t2
Tensor addcmul(const Tensor& t, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor& addcmul_(Tensor& t, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
// t + value * t1 / t2
Tensor addcdiv(const Tensor& t, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
Tensor& addcdiv_(Tensor& t, const Tensor& t1, const Tensor& t2, const Scalar& value = 1);
// t + weight * (end - t)
Tensor lerp(const Tensor& t, const Tensor& end, const Tensor& weight);
Tensor lerp(const Tensor& t, const Tensor& end, const Scalar& weight);
Tensor& lerp_(Tensor& t, const Tensor& end, const Tensor& weight);
Tensor& lerp_(Tensor& t, const Tensor& end, const Scalar& weight);

Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator+(const Tensor& a, const Scalar& b);
Tensor operator+(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Scalar& b);
Tensor operator-(const Scalar& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Scalar& b);
Tensor operator*(const Scalar& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Scalar& b);
Tensor operator/(const Scalar& a, const Tensor& b);
Tensor operator-(const Tensor& a);
// Elementwise comparisons (eq ne lt le gt ge): bool tensors, broadcasting, promotion.
// `t == 0` is a tensor, never an identity test: use Tensor::is_same() or equal().
#define MIXT_DECLARE_COMPARE_OPERATOR(op)          \
  Tensor operator op(const Tensor& a, const Tensor& b); \
  Tensor operator op(const Tensor& a, const Scalar& b); \
  Tensor operator op(const Scalar& a, const Tensor& b);
MIXT_DECLARE_COMPARE_OPERATOR(==)
MIXT_DECLARE_COMPARE_OPERATOR(!=)
MIXT_DECLARE_COMPARE_OPERATOR(<)
MIXT_DECLARE_COMPARE_OPERATOR(<=)
MIXT_DECLARE_COMPARE_OPERATOR(>)
MIXT_DECLARE_COMPARE_OPERATOR(>=)
#undef MIXT_DECLARE_COMPARE_OPERATOR
// True when a and b have the same shape and equal values, compared in their promoted
// dtype as eq() does (NaN equals nothing). Raises for tensors on different devices,
// meta tensors (no values) and dtypes that do not promote.
bool equal(const Tensor& a, const Tensor& b);

// ---- reductions (dims empty = all dims; dtype Undefined = the op's default) ----
// Sum; integer and bool inputs accumulate to int64.
Tensor sum(const Tensor& t, const Shape& dims = {}, bool keepdim = false, ScalarType dtype = ScalarType::Undefined);
// Mean of floating inputs.
Tensor mean(const Tensor& t, const Shape& dims = {}, bool keepdim = false, ScalarType dtype = ScalarType::Undefined);
Tensor prod(const Tensor& t, const Shape& dims = {}, bool keepdim = false, ScalarType dtype = ScalarType::Undefined);
Tensor amax(const Tensor& t, const Shape& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& t, const Shape& dims = {}, bool keepdim = false);
struct ValuesIndices {
  Tensor values;
  Tensor indices;  // int64
};
// Maximum over all elements (0-dim).
Tensor max(const Tensor& t);
Tensor min(const Tensor& t);
// Maximum along `dim` and where it is (first occurrence; NaN wins).
ValuesIndices max(const Tensor& t, int64_t dim, bool keepdim = false);
ValuesIndices min(const Tensor& t, int64_t dim, bool keepdim = false);
// Index of the maximum along `dim` (or of the flattened tensor).
Tensor argmax(const Tensor& t, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
Tensor argmin(const Tensor& t, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
// ---- sorting and selection (NaN sorts as the largest value; ties keep their input order) ----
// t sorted along `dim`, and where each value came from.
ValuesIndices sort(const Tensor& t, int64_t dim = -1, bool descending = false, bool stable = false);
// The indices of sort(t, dim, descending, stable).
Tensor argsort(const Tensor& t, int64_t dim = -1, bool descending = false, bool stable = false);
// The k largest (or smallest) values along `dim` and their indices, in sorted order.
ValuesIndices topk(const Tensor& t, int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true);
struct UniqueResult {
  Tensor values;   // the distinct values of the flattened t, ascending (each NaN is distinct)
  Tensor inverse;  // int64, t's shape: where each element of t is in values (return_inverse)
  Tensor counts;   // int64, how often each value occurs (return_counts)
};
// The distinct values of t (flattened, as torch.unique without dim); always sorted.
UniqueResult unique(const Tensor& t, bool sorted = true, bool return_inverse = false, bool return_counts = false);
// Variance with Bessel-style `correction` (1: unbiased).
Tensor var(const Tensor& t, const Shape& dims = {}, double correction = 1.0, bool keepdim = false);
Tensor std(const Tensor& t, const Shape& dims = {}, double correction = 1.0, bool keepdim = false);
// Vector p-norm (p may be inf, -inf or 0).
Tensor norm(const Tensor& t, double p = 2.0, const Shape& dims = {}, bool keepdim = false,
            ScalarType dtype = ScalarType::Undefined);
// log(sum(exp(t))), computed stably.
Tensor logsumexp(const Tensor& t, const Shape& dims = {}, bool keepdim = false);
Tensor cumsum(const Tensor& t, int64_t dim, ScalarType dtype = ScalarType::Undefined);
Tensor cumprod(const Tensor& t, int64_t dim, ScalarType dtype = ScalarType::Undefined);
// Logical reductions (bool results).
Tensor all(const Tensor& t, const Shape& dims = {}, bool keepdim = false);
Tensor any(const Tensor& t, const Shape& dims = {}, bool keepdim = false);

// ---- distances and vector products (floating; p >= 0, inf allowed) ----
// dist (torch.dist): the Tensor method a.dist(b, p) (runtime/tensor.h). `mixt::dist` is the
// distributed layer's namespace (after PyTorch's `import torch.distributed as dist`).
// The p-norm distance of every row of x1 [*, P, M] to every row of x2 [*, R, M]: [*, P, R]
// (batch dims broadcast).
Tensor cdist(const Tensor& x1, const Tensor& x2, double p = 2.0);
// The p-norm distance of every pair of rows i < j of x [N, M], in row-major order: [N (N - 1) / 2].
Tensor pdist(const Tensor& x, double p = 2.0);
// Each slice x.select(dim, i) whose p-norm (p > 0) exceeds maxnorm scaled to norm maxnorm.
Tensor renorm(const Tensor& x, double p, int64_t dim, double maxnorm);
// The cross product of 3-vectors along `dim` (size 3 in both; a and b broadcast, one
// number of dims and one dtype), as torch.linalg.cross.
Tensor cross(const Tensor& a, const Tensor& b, int64_t dim = -1);

// ---- matmul family (out_dtype: float32 to keep low-precision products in f32) ----
Tensor mm(const Tensor& a, const Tensor& b, ScalarType out_dtype = ScalarType::Undefined);
Tensor bmm(const Tensor& a, const Tensor& b, ScalarType out_dtype = ScalarType::Undefined);
// beta * bias + alpha * (a @ b)
Tensor addmm(const Tensor& bias, const Tensor& a, const Tensor& b, const Scalar& beta = 1, const Scalar& alpha = 1,
             ScalarType out_dtype = ScalarType::Undefined);
Tensor baddbmm(const Tensor& bias, const Tensor& a, const Tensor& b, const Scalar& beta = 1,
               const Scalar& alpha = 1, ScalarType out_dtype = ScalarType::Undefined);
// numpy-style matmul: vectors, matrices, and broadcast batches.
Tensor matmul(const Tensor& a, const Tensor& b, ScalarType out_dtype = ScalarType::Undefined);
Tensor dot(const Tensor& a, const Tensor& b);
Tensor mv(const Tensor& m, const Tensor& v);
Tensor outer(const Tensor& a, const Tensor& b);

// ---- linear algebra (composites of the matmul family; PyTorch's names and argument order) ----
// beta * self + alpha * (mat [n, m] @ vec [m]); self broadcasts to [n]. beta = 0 ignores self's values
// (NaN and Inf included), as addmm does.
Tensor addmv(const Tensor& self, const Tensor& mat, const Tensor& vec, const Scalar& beta = 1, const Scalar& alpha = 1);
// beta * self + alpha * outer(vec1 [n], vec2 [m]); self broadcasts to [n, m].
Tensor addr(const Tensor& self, const Tensor& vec1, const Tensor& vec2, const Scalar& beta = 1,
            const Scalar& alpha = 1);
// beta * self + alpha * the sum over b of batch1[b] [n, k] @ batch2[b] [k, m]; self broadcasts to [n, m].
Tensor addbmm(const Tensor& self, const Tensor& batch1, const Tensor& batch2, const Scalar& beta = 1,
              const Scalar& alpha = 1);
// torch._addmm_activation: addmm(self, mat1, mat2, beta, alpha), then relu, or with use_gelu the
// exact (erf) gelu on every device (PyTorch's CUDA kernel: the tanh form; docs/ops.md).
Tensor addmm_activation(const Tensor& self, const Tensor& mat1, const Tensor& mat2, const Scalar& beta = 1,
                        const Scalar& alpha = 1, bool use_gelu = false);
// Dot product of two 1-D tensors of one dtype (mixt's dtypes are real: no conjugation).
Tensor vdot(const Tensor& a, const Tensor& b);
// sum(x * y, dim) of x and y broadcast together (torch.linalg.vecdot; real dtypes).
Tensor linalg_vecdot(const Tensor& x, const Tensor& y, int64_t dim = -1);
// The product of 2-D matrices, multiplied in the order that costs the fewest multiplications.
Tensor chain_matmul(const std::vector<Tensor>& matrices);
// As chain_matmul; the first argument may be 1-D (a row vector) and the last 1-D (a column
// vector), and those dims are dropped from the result (torch.linalg.multi_dot).
Tensor linalg_multi_dot(const std::vector<Tensor>& tensors);
// Sums the products of a and b over the last `dims` dims of a and the first `dims` of b.
Tensor tensordot(const Tensor& a, const Tensor& b, int64_t dims = 2);
// Sums over a's dims_a[i] paired with b's dims_b[i]; the result has a's free dims, then b's.
Tensor tensordot(const Tensor& a, const Tensor& b, const Shape& dims_a, const Shape& dims_b);
// Einstein summation, as torch.einsum: "ij,jk->ik", implicit outputs ("ij,jk": the labels seen
// once, in alphabetical order), repeated labels on one operand (a diagonal: "ii->i"), and "..."
// for broadcast dims. Letters a-z and A-Z; spaces are ignored. See docs/ops.md.
Tensor einsum(std::string_view equation, const std::vector<Tensor>& operands);
// scaled_mm's optional arguments (torch._scaled_mm's keywords).
struct ScaledMmOptions {
  // [N]: bfloat16 for bfloat16 results, float16 for float16 results, either for float8; none for float32.
  Tensor bias = {};
  // One float32 element, float8 results only: multiplies the result before the float8 store.
  Tensor scale_result = {};
  ScalarType out_dtype = ScalarType::Undefined;  // bfloat16, float16, float32 or a float8 (unset: a's dtype)
  bool use_fast_accum = false;                   // cuBLASLt's fast accumulation (no effect on the CPU)
};
// scaled_mm's results: the product, and for float8 results the float32 amax of the result before
// scale_result and the float8 store (undefined for other results).
struct ScaledMmResult {
  Tensor out;
  Tensor amax;
};
// The float8 GEMM of torch._scaled_mm: out = scale_a * scale_b * (a @ b) + bias in float32, rounded once
// to out_dtype. a [M, K] and b [K, N] are float8_e4m3fn or float8_e5m2 (not both e5m2); the float32
// scales are per tensor (one element each) or row-wise (scale_a [M, 1], scale_b [1, N]). Float8 results
// saturate to the format's finite range. Not differentiable. See docs/ops.md.
ScaledMmResult scaled_mm(const Tensor& a, const Tensor& b, const Tensor& scale_a, const Tensor& scale_b,
                         const ScaledMmOptions& options = {});

// ---- type promotion of actual operands ----
// How an operand counts in type promotion: a wrapped scalar, a zero-dim tensor or a tensor.
inline OperandKind operand_kind(const Tensor& t) {
  return t.impl()->wrapped_number ? OperandKind::WrappedScalar : t.dim() == 0 ? OperandKind::ZeroDim : OperandKind::Dim;
}
// The dtype an elementwise op over these operands computes in (wrapped scalars
// and zero-dim tensors count less, as in PyTorch).
ScalarType result_type(std::initializer_list<Tensor> operands);

}  // namespace mixt
