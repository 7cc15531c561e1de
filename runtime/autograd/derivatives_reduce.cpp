// Backward formulas of the reductions, scans and the matmul family, plus the
// shared reduction helpers.
#include <algorithm>
#include <cmath>

#include <mixt/runtime/autograd/derivatives.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/ops/nn.h>

namespace mixt::autograd {

Shape reduced_dims(const Shape& dims, int64_t ndim) {
  Shape out;
  if (dims.empty()) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  for (int64_t d : dims) out.push_back(wrap_dim(d, ndim, "reduction"));
  std::sort(out.begin(), out.end());
  return out;
}

Tensor expand_reduced(const Tensor& g, const Shape& input_sizes, const Shape& dims, bool keepdim) {
  Tensor r = g;
  if (!keepdim && input_sizes.size() > 0)
    for (int64_t d : reduced_dims(dims, input_sizes.size())) r = unsqueeze(r, d);
  return expand(r, input_sizes);
}

int64_t reduced_count(const Shape& input_sizes, const Shape& dims) {
  int64_t n = 1;
  for (int64_t d : reduced_dims(dims, input_sizes.size())) n *= input_sizes[static_cast<int>(d)];
  return n;
}

Tensor flip(const Tensor& t, int64_t dim) {
  const int64_t n = t.size(dim);
  return index_select(t, dim, arange(n - 1, -1, -1, {.device = t.device()}));
}

namespace {

const Tensor& G(const Grads& g) { return g[0]; }
const Shape& in_sizes(const BackwardContext& c) { return c.input_meta(0).sizes; }

// The reduced dims and keepdim of a reduction (their attribute struct depends on the op).
struct ReduceArgs {
  const Shape& dims;
  bool keepdim;
};
ReduceArgs reduce_args(const BackwardContext& c) {
  if (c.op() == OpId::var || c.op() == OpId::std) {
    const auto& a = c.attrs().get<attrs::Variance>();
    return {a.dims, a.keepdim};
  }
  if (c.op() == OpId::norm) {
    const auto& a = c.attrs().get<attrs::Norm>();
    return {a.dims, a.keepdim};
  }
  const auto& a = c.attrs().get<attrs::Reduce>();
  return {a.dims, a.keepdim};
}
Tensor expand_g(const BackwardContext& c, const Tensor& g) {
  return expand_reduced(g, in_sizes(c), reduce_args(c).dims, reduce_args(c).keepdim);
}
Tensor expand_out(const BackwardContext& c, int i = 0) {
  return expand_reduced(c.output(i), in_sizes(c), reduce_args(c).dims, reduce_args(c).keepdim);
}

Grads sum_bw(const BackwardContext& c, const Grads& g) { return {expand_g(c, G(g))}; }

Grads mean_bw(const BackwardContext& c, const Grads& g) {
  return {div(expand_g(c, G(g)), static_cast<double>(reduced_count(in_sizes(c), reduce_args(c).dims)))};
}

// Product of all other elements of each reduced slice, without dividing (zeros work).
Grads prod_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0);
  if (x.numel() == 0) return {zeros_like(x)};
  const Shape red = reduced_dims(reduce_args(c).dims, x.dim());
  Shape perm, kept_sizes;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (std::find(red.begin(), red.end(), d) == red.end()) {
      perm.push_back(d);
      kept_sizes.push_back(x.size(d));
    }
  for (int64_t d : red) perm.push_back(d);
  const Tensor xp = permute(x, perm);
  const Shape permuted_sizes = xp.sizes();
  Shape flat_sizes = kept_sizes;
  flat_sizes.push_back(-1);
  const Tensor flat = reshape(xp, flat_sizes);  // [kept..., R]
  const int64_t last = flat.dim() - 1, R = flat.size(last);
  Shape one_sizes = kept_sizes;
  one_sizes.push_back(1);
  const Tensor one = ones(one_sizes, {.dtype = x.dtype(), .device = x.device()});
  const Tensor left = cat({one, cumprod(narrow(flat, last, 0, R - 1), last)}, last);
  const Tensor rev = flip(flat, last);
  const Tensor right = flip(cat({one, cumprod(narrow(rev, last, 0, R - 1), last)}, last), last);
  Shape inverse = Shape::filled(perm.size(), 0);
  for (int i = 0; i < perm.size(); ++i) inverse[static_cast<int>(perm[i])] = i;
  const Tensor others = permute(reshape(mul(left, right), permuted_sizes), inverse);
  return {mul(expand_g(c, G(g)), others)};
}

// Ties share the gradient evenly, as in PyTorch (Note [Subgradients]).
Grads amax_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0);
  const Tensor mask = eq(x, expand_out(c));
  const Tensor count = sum(mask, reduce_args(c).dims, /*keepdim=*/true);
  return {div(mul(expand_g(c, G(g)), mask), expand(count, x.sizes()))};
}

// The returned index (the first of a tie) takes the whole gradient (Note [Subgradients]).
Grads max_dim_bw(const BackwardContext& c, const Grads& g) {
  const TensorMeta& m = c.input_meta(0);
  Tensor idx = c.output(1), grad = G(g);
  if (m.sizes.size() == 0) return {grad};
  const auto& a = c.attrs().get<attrs::ReduceDim>();
  const int64_t dim = wrap_dim(a.dim, m.sizes.size(), "max");
  if (!a.keepdim) {
    idx = unsqueeze(idx, dim);
    grad = unsqueeze(grad, dim);
  }
  return {scatter(zeros(m.sizes, {.dtype = grad.dtype(), .device = m.device}), dim, idx, grad)};
}

Grads var_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0);
  const double n = static_cast<double>(reduced_count(x.sizes(), reduce_args(c).dims));
  const double corr = c.attrs().get<attrs::Variance>().correction;
  const Tensor centered = sub(x, mean(x, reduce_args(c).dims, /*keepdim=*/true));
  return {mul(expand_g(c, G(g)), mul(centered, 2.0 / (n - corr)))};
}

Grads std_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0);
  const double n = static_cast<double>(reduced_count(x.sizes(), reduce_args(c).dims));
  const double corr = c.attrs().get<attrs::Variance>().correction;
  const Tensor centered = sub(x, mean(x, reduce_args(c).dims, /*keepdim=*/true));
  return {div(mul(expand_g(c, G(g)), centered), mul(expand_out(c), n - corr))};
}

Grads norm_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0), y = expand_out(c), gx = expand_g(c, G(g));
  const double p = c.attrs().get<attrs::Norm>().p;
  if (p == 0.0) return {zeros_like(x)};
  if (p == 1.0) return {mul(gx, sign(x))};
  if (std::isinf(p)) {
    const Tensor mask = eq(abs(x), y);
    const Tensor count = expand(sum(mask, reduce_args(c).dims, /*keepdim=*/true), x.sizes());
    return {div(mul(mul(gx, sign(x)), mask), count)};
  }
  // x |x|^(p-2) / ||x||^(p-1); zero where the norm is zero.
  const Tensor num = p == 2.0 ? x : mul(x, pow(abs(x), p - 2));
  const Tensor r = div(mul(gx, num), p == 2.0 ? y : pow(y, p - 1));
  return {masked_fill(r, eq(y, 0), 0)};
}

Grads logsumexp_bw(const BackwardContext& c, const Grads& g) {
  return {mul(expand_g(c, G(g)), exp(sub(c.input(0), expand_out(c))))};
}

Grads cumsum_bw(const BackwardContext& c, const Grads& g) {
  const int64_t dim = c.attrs().get<attrs::Dim>().dim;
  if (G(g).dim() == 0) return {G(g)};
  return {flip(cumsum(flip(G(g), dim), dim), dim)};
}

// Note [cumprod backward]: d out_j / d x_i = prod_{k <= j, k != i} x_k for j >= i, so
// grad_i = sum_{j >= i} g_j prod_{k <= j, k != i} x_k. Before the first zero z of a slice
// that is (reversed cumsum of g * out)_i / x_i (terms from z on are 0 on both sides); at z
// it is the reversed cumsum of g times the cumulative product with x_z replaced by 1,
// over j >= z; after z every term holds the factor x_z = 0. Exact with any number of zeros.
Grads cumprod_bw(const BackwardContext& c, const Grads& g) {
  const int64_t dim = c.attrs().get<attrs::Dim>().dim;
  const Tensor gr = G(g);
  if (gr.dim() == 0) return {gr};
  const Tensor x = c.input(0).to(gr.dtype()), y = c.output(0).to(gr.dtype());
  const auto reversed_cumsum = [&](const Tensor& t) { return flip(cumsum(flip(t, dim), dim), dim); };
  const Tensor is_zero = eq(x, 0);
  const Tensor zeros_so_far = cumsum(is_zero, dim, kInt64);
  const Tensor before = eq(zeros_so_far, 0);
  const Tensor first_zero = logical_and(is_zero, eq(zeros_so_far, 1));
  const Tensor head = div(reversed_cumsum(mul(gr, y)), where(before, x, Scalar(1.0)));
  const Tensor skipping_zero = cumprod(where(first_zero, Scalar(1.0), x), dim);
  const Tensor at_zero = reversed_cumsum(mul(gr, where(before, Scalar(0.0), skipping_zero)));
  return {where(before, head, where(first_zero, at_zero, Scalar(0.0)))};
}

// ---- matmul family (gradients computed in the operands' dtype) ----
Tensor mt(const Tensor& t) { return transpose(t, -2, -1); }

Grads mm_bw(const BackwardContext& c, const Grads& g) {
  const Tensor a = c.input(0), b = c.input(1), gr = G(g).to(a.dtype());
  Grads out(2);
  if (c.needs_grad(0)) out[0] = c.op() == OpId::mm ? mm(gr, mt(b)) : bmm(gr, mt(b));
  if (c.needs_grad(1)) out[1] = c.op() == OpId::mm ? mm(mt(a), gr) : bmm(mt(a), gr);
  return out;
}

Grads addmm_bw(const BackwardContext& c, const Grads& g) {
  const Tensor a = c.input(1), b = c.input(2), gr = G(g).to(a.dtype());
  const double beta = c.attrs().get<attrs::Addmm>().beta.to_double();
  const double alpha = c.attrs().get<attrs::Addmm>().alpha.to_double();
  const bool batched = c.op() == OpId::baddbmm;
  Grads out(3);
  if (c.needs_grad(0)) out[0] = sum_to(mul(G(g), beta), c.input_meta(0).sizes);
  if (c.needs_grad(1)) out[1] = mul(batched ? bmm(gr, mt(b)) : mm(gr, mt(b)), alpha);
  if (c.needs_grad(2)) out[2] = mul(batched ? bmm(mt(a), gr) : mm(mt(a), gr), alpha);
  return out;
}

// linear's own kernels (the CPU's and CUDA's fused GEMMs): x [*, in], weight [out, in], bias.
// Backends that run linear's composite never record this node. One linear_backward op
// computes the gradients asked for (on CUDA the bias's comes out of the weight's GEMM).
// The bias's gradient is summed from g itself, as before, when g is not in the operands'
// dtype (a float32 out_dtype product of narrow operands: summing the rounded g would lose
// precision) or the bias is not [out] (0-D or [1], broadcast).
Grads linear_bw(const BackwardContext& c, const Grads& g) {
  const Tensor x = c.input(0), w = c.input(1);
  const Tensor& go = G(g);
  const bool bias_needed = c.num_inputs() > 2 && c.needs_grad(2);
  const bool fused_bias = bias_needed && go.dtype() == x.dtype() && c.input_meta(2).sizes == Shape{w.size(0)};
  Grads out(3);
  if (c.needs_grad(0) || c.needs_grad(1) || fused_bias) {
    nn::functional::LinearGrads r =
        nn::functional::linear_backward(go.to(x.dtype()), x, w, c.needs_grad(0), c.needs_grad(1), fused_bias);
    out[0] = std::move(r.input);
    out[1] = std::move(r.weight);
    out[2] = std::move(r.bias);
  }
  if (bias_needed && !fused_bias) out[2] = sum_to(go, c.input_meta(2).sizes);
  return out;
}

}  // namespace

void register_reduction_derivatives() {
  define_derivative(OpId::sum, {sum_bw});
  define_derivative(OpId::mean, {mean_bw});
  define_derivative(OpId::prod, {prod_bw, in0});
  define_derivative(OpId::amax, {amax_bw, in0, out0});
  define_derivative(OpId::amin, {amax_bw, in0, out0});
  define_derivative(OpId::max, {max_dim_bw, 0, out1});
  define_derivative(OpId::min, {max_dim_bw, 0, out1});
  define_derivative(OpId::var, {var_bw, in0});
  define_derivative(OpId::std, {std_bw, in0, out0});
  define_derivative(OpId::norm, {norm_bw, in0, out0});
  define_derivative(OpId::logsumexp, {logsumexp_bw, in0, out0});
  define_derivative(OpId::cumsum, {cumsum_bw});
  define_derivative(OpId::cumprod, {cumprod_bw, in0, out0});
  define_derivative(OpId::mm, {mm_bw, in0 | in1});
  define_derivative(OpId::bmm, {mm_bw, in0 | in1});
  define_derivative(OpId::addmm, {addmm_bw, in1 | in2});
  define_derivative(OpId::baddbmm, {addmm_bw, in1 | in2});
  define_derivative(OpId::linear, {linear_bw, in0 | in1});
}

}  // namespace mixt::autograd
