// Composite distances and vector products (runtime/ops/ops.h): dist, cdist, pdist,
// renorm and cross, written with front-end calls (sub, norm, where, select, stack),
// so every backend runs them and autograd differentiates through them. Narrow
// floats compute in float32 and the result is rounded once.
#include <vector>

#include <mixt/kernels/composite/helpers.h>
#include <mixt/kernels/composite/register.h>

namespace mixt {
namespace {

using namespace composite;

// The common floating dtype of two operands.
ScalarType floating_pair(const OpCall& c, const Tensor& a, const Tensor& b) {
  check_floating(c, a, "first input");
  check_floating(c, b, "second input");
  const ScalarType dt = promote_types_or_undefined(a.dtype(), b.dtype());
  MIXT_CHECK_OP(dt != ScalarType::Undefined, c, "no common dtype for {} and {}", a.dtype(), b.dtype());
  return dt;
}

double non_negative_p(const OpCall& c) {
  const double p = c.attrs.get<attrs::Distance>().p;
  MIXT_CHECK_OP(p >= 0, c, "only non-negative p values are supported, got {}", p);
  return p;
}

// ||a - b||_p over every element of the broadcast difference (p may be negative, as torch.dist's).
void dist_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType dt = floating_pair(c, c.in[0], c.in[1]);
  broadcast_shapes(c.in[0].sizes(), c.in[1].sizes(), "dist");
  finish(c, norm(sub(up(c.in[0]), up(c.in[1])), c.attrs.get<attrs::Distance>().p), dt);
}

// x1 [*, P, M] and x2 [*, R, M] -> [*, P, R]: the norm of every row difference, the batch dims broadcast.
void cdist_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &x1 = c.in[0], &x2 = c.in[1];
  const double p = non_negative_p(c);
  const ScalarType dt = floating_pair(c, x1, x2);
  MIXT_CHECK_OP(x1.dim() >= 2 && x2.dim() >= 2, c, "expected inputs of at least 2 dims, got shapes {} and {}",
                x1.sizes(), x2.sizes());
  MIXT_CHECK_OP(x1.size(-1) == x2.size(-1), c, "x1 {} and x2 {} must have the same number of columns", x1.sizes(),
                x2.sizes());
  Shape batch1 = x1.sizes(), batch2 = x2.sizes();
  batch1.erase(batch1.size() - 1);
  batch1.erase(batch1.size() - 1);
  batch2.erase(batch2.size() - 1);
  batch2.erase(batch2.size() - 1);
  broadcast_shapes(batch1, batch2, "cdist");
  const Tensor diff = sub(unsqueeze(up(x1), -2), unsqueeze(up(x2), -3));  // [*, P, R, M]
  finish(c, norm(diff, p, {-1}), dt);
}

// x [N, M] -> the norms of x[i] - x[j] for i < j, row-major: [N (N - 1) / 2].
void pdist_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& x = c.in[0];
  const double p = non_negative_p(c);
  check_floating(c, x, "input");
  MIXT_CHECK_OP(x.dim() == 2, c, "expected a 2-D input [N, M], got shape {}", x.sizes());
  const int64_t n = x.size(0);
  std::vector<int64_t> first, second;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = i + 1; j < n; ++j) {
      first.push_back(i);
      second.push_back(j);
    }
  const auto pairs = static_cast<int64_t>(first.size());
  const Tensor rows_i = from_vector(first, {pairs}).to(x.device()), rows_j = from_vector(second, {pairs}).to(x.device());
  const Tensor xf = up(x);
  finish(c, norm(sub(index_select(xf, 0, rows_i), index_select(xf, 0, rows_j)), p, {1}), x.dtype());
}

// Each slice along `dim` whose p-norm exceeds maxnorm, times maxnorm / (norm + 1e-7) (PyTorch's factor).
void renorm_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& x = c.in[0];
  const auto& a = c.attrs.get<attrs::Renorm>();
  check_floating(c, x, "input");
  MIXT_CHECK_OP(a.p > 0, c, "p must be positive, got {}", a.p);
  MIXT_CHECK_OP(a.maxnorm >= 0, c, "maxnorm must be non-negative, got {}", a.maxnorm);
  MIXT_CHECK_OP(x.dim() >= 2, c, "expected an input of at least 2 dims, got shape {}", x.sizes());
  const int64_t dim = wrap_dim(a.dim, x.dim(), "renorm");
  Shape others;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (d != dim) others.push_back(d);
  const Tensor xf = up(x);
  const Tensor n = norm(xf, a.p, others, /*keepdim=*/true);
  const Tensor factor = where(gt(n, a.maxnorm), Scalar(a.maxnorm) / add(n, 1e-7), Scalar(1.0));
  finish(c, mul(xf, factor), x.dtype());
}

// a x b along `dim` (size 3 in both), torch.linalg.cross's rules: one number of dims and one dtype, the
// other dims broadcast.
void cross_kernel(OpCall& c, DispatchKeySet) {
  const Tensor &a = c.in[0], &b = c.in[1];
  MIXT_CHECK_OP(a.dtype() == b.dtype(), c, "expected inputs of one dtype, got {} and {}", a.dtype(), b.dtype());
  MIXT_CHECK_OP(a.dtype() != kBool, c, "expected numeric inputs, got bool");
  MIXT_CHECK_OP(a.dim() == b.dim(), c, "expected inputs with the same number of dims, got shapes {} and {}",
                a.sizes(), b.sizes());
  const int64_t dim = wrap_dim(c.attrs.get<attrs::Dim>().dim, a.dim(), "cross");
  MIXT_CHECK_OP(a.size(dim) == 3 && b.size(dim) == 3, c,
                "expected dimension {} of size 3 in both inputs, got shapes {} and {}", dim, a.sizes(), b.sizes());
  broadcast_shapes(a.sizes(), b.sizes(), "cross");
  const Tensor x = up(a), y = up(b);
  auto component = [&](int64_t i, int64_t j) {  // x_i y_j - x_j y_i
    return sub(mul(select(x, dim, i), select(y, dim, j)), mul(select(x, dim, j), select(y, dim, i)));
  };
  finish(c, stack({component(1, 2), component(2, 0), component(0, 1)}, dim), a.dtype());
}

}  // namespace

void register_distance_composite_kernels() {
  register_composite(OpId::dist, dist_kernel);
  register_composite(OpId::cdist, cdist_kernel);
  register_composite(OpId::pdist, pdist_kernel);
  register_composite(OpId::renorm, renorm_kernel);
  register_composite(OpId::cross, cross_kernel);
}

}  // namespace mixt
