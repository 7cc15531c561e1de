// Independent references of the margin, embedding and Poisson losses and of the
// distances and vector products (dist, cdist, pdist, renorm, cross): double loops
// written from PyTorch's documented formulas. They never call mixt.
#pragma once

#include "reference_nn.h"

namespace mixt::testing::ref {

// ---- losses (reduced by reduce_loss: the mean divides by the number of per-sample losses) ----
// exp(x) - t x (log_input) or x - t log(x + eps); `full` adds t log t - t + log(2 pi t) / 2 where t > 1.
Ref poisson_nll_loss(const Ref& x, const Ref& t, bool log_input, bool full, double eps, Reduce r);
// Per row of x1, x2 ([N, D] or [D]): 1 - cos where t = 1, max(0, cos - margin) where t = -1.
Ref cosine_embedding_loss(const Ref& x1, const Ref& x2, const Ref& t, double margin, Reduce r);
// x where t != -1, plus max(0, margin - x) where t != 1.
Ref hinge_embedding_loss(const Ref& x, const Ref& t, double margin, Reduce r);
// max(0, -t (x1 - x2) + margin), broadcast.
Ref margin_ranking_loss(const Ref& x1, const Ref& x2, const Ref& t, double margin, Reduce r);
// max(0, d(a, pos) - d(a, neg) + margin), d the p-norm of the row difference + eps; `swap`: d(a, neg)
// replaced by d(pos, neg) when smaller.
Ref triplet_margin_loss(const Ref& a, const Ref& pos, const Ref& neg, double margin, double p, double eps, bool swap,
                        Reduce r);
// Per sample of x ([C] or [N, C]): the sum over listed targets y (before the first -1) and classes i not
// listed of max(0, 1 - x[y] + x[i]), / C.
Ref multilabel_margin_loss(const Ref& x, const Ref& t, Reduce r);
// log(1 + exp(-t x)).
Ref soft_margin_loss(const Ref& x, const Ref& t, Reduce r);
// Per sample with class y: the sum over i != y of w[y] max(0, margin - x[y] + x[i])^p, / C (w empty: 1).
Ref multi_margin_loss(const Ref& x, const Ref& t, int64_t p, double margin, const Vec& w, Reduce r);

// ---- distances and vector products ----
// The p-norm of `d` (p = Inf: max |d|, p = 0: the count of non-zeros).
double p_norm(const Vec& d, double p);
// The p-norm of a - b over the broadcast elements (0-dim).
Ref dist(const Ref& a, const Ref& b, double p);
// x1 [*, P, M], x2 [*, R, M] (batch dims broadcast) -> [*, P, R].
Ref cdist(const Ref& x1, const Ref& x2, double p);
// x [N, M] -> the distances of rows i < j in row-major order.
Ref pdist(const Ref& x, double p);
// Slices along `dim` with a p-norm above maxnorm, times maxnorm / (norm + 1e-7).
Ref renorm(const Ref& x, double p, int64_t dim, double maxnorm);
// The cross product along `dim` (size 3) of broadcast a and b.
Ref cross(const Ref& a, const Ref& b, int64_t dim);

}  // namespace mixt::testing::ref
