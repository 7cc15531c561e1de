// The linear-algebra ops of docs/ops.md: einsum, tensordot, multi_dot and the fused
// add-and-multiply forms, each checked against a plain product. See docs/ops.md.
#include <cstdio>

#include <mixt/mixt.h>

#include "example_support.h"

using namespace mixt;
using example::require;

namespace {
bool close(const Tensor& a, const Tensor& b) {
  return a.sizes() == b.sizes() && amax(abs(a - b)).item<double>() < 1e-4;
}
}  // namespace

int main() {
  const Tensor q = randn({2, 5, 8}), k = randn({2, 7, 8}), w = randn({8, 3});

  // Attention scores: a batched product with k transposed, written as an equation.
  const Tensor scores = einsum("bqd,bkd->bqk", {q, k});
  require(close(scores, bmm(q, k.transpose(1, 2))), "einsum matches bmm");
  // Repeated labels read a diagonal, "..." stands for any leading dims, no "->" sums what is repeated.
  const Tensor sq = randn({4, 4});
  require(close(einsum("ii->i", {sq}), sum(sq * eye(4), {1})), "ii->i is the diagonal");
  require(einsum("...d,de->...e", {q, w}).sizes() == Shape{2, 5, 3}, "ellipsis keeps the leading dims");
  require(einsum("ii", {sq}).dim() == 0, "ii is the trace");

  // tensordot: contract q's last dim with w's first, as matmul would.
  require(close(tensordot(q, w, 1), matmul(q, w)), "tensordot over one dim");

  // multi_dot picks the cheapest order: here (v^T A) B, never A B.
  const Tensor v = randn({300}), a = randn({300, 300}), b = randn({300, 2});
  require(close(linalg_multi_dot({v, a, b}), matmul(matmul(v, a), b)), "multi_dot with a vector end");

  // addmv / addr: beta * self + alpha * product; beta = 0 ignores self (even NaN).
  const Tensor nan_bias = full({300}, NAN);
  require(close(addmv(nan_bias, a, v, 0, 2), mv(a, v) * 2), "addmv with beta = 0");
  std::printf("scores %s, multi_dot %s\n", scores.describe().c_str(), linalg_multi_dot({v, a, b}).describe().c_str());
  return 0;
}
