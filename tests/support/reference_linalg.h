// Independent references of the linear-algebra ops (addmv, addr, addbmm, vdot, vecdot,
// multi_dot, tensordot, bilinear, einsum): one labelled sum of products in double, written
// from the definition (plain loops over every assignment of the labels; never calls mixt).
#pragma once

#include <string>
#include <vector>

#include "reference.h"

namespace mixt::testing::ref {

// The sum, over every assignment of the labels that `out` lacks, of the product of the
// operands' values. terms[i] labels operand i's dims with letters (one letter a dim); a
// letter repeated in one term reads a diagonal; a dim of size 1 broadcasts against the
// label's size elsewhere. The result has `out`'s labels as dims, in order.
Ref contract(const std::vector<Ref>& operands, const std::vector<std::string>& terms, const std::string& out);

// beta * bias (broadcast to `product`'s shape) + alpha * product; beta = 0 ignores bias's values.
Ref scale_add(const Ref& bias, const Ref& product, double beta, double alpha);

}  // namespace mixt::testing::ref
