// The summary at the top of docs/op_support.md: the ops by family (with how many run on
// the CPU, on meta tensors and on CUDA) and how many of PyTorch's autocast-list ops mixt
// has (tests/support/pytorch_autocast_lists.h), with the reason for each it has not.
#pragma once

#include <string>
#include <vector>

#include <mixt/mixt.h>

namespace mixt::testing {

// A family of ops: dispatcher/op_table.def groups its rows by family, so a family runs
// from its first op to the next family's first op, in the table's order.
struct OpFamily {
  const char* name;
  const char* first_op;
};
const std::vector<OpFamily>& op_families();

// For every built-in op, the index of its family in `families`. Raises mixt::Error when
// a family's first op is not an op, or the first ops are out of the table's order.
std::vector<int> family_of_each_op(const std::vector<OpFamily>& families = op_families());

// Counts over PyTorch's autocast lists: distinct PyTorch op names, and those a mixt op implements.
struct ListCoverage {
  int listed = 0;
  int present = 0;
};
struct AutocastCoverage {
  ListCoverage all, cuda, cpu;
};
AutocastCoverage autocast_list_coverage();

// The "## Summary" section (markdown, ending with a blank line).
std::string op_support_summary_markdown();

}  // namespace mixt::testing
