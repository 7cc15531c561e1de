#include <mixt/kernels/common/strided_layout.h>

#include <utility>

namespace mixt {

StridedLayout make_strided_layout(const Shape& out_sizes, std::span<const OperandGeometry> operands) {
  StridedLayout L;
  L.noperands = static_cast<int>(operands.size());
  L.numel = out_sizes.numel();
  const int nd = out_sizes.size();
  // Fill innermost-first: layout dim k is tensor dim nd-1-k.
  int64_t sizes[kMaxDims];
  int64_t strides[kMaxOperands][kMaxDims];
  for (int k = 0; k < nd; ++k) {
    const int d = nd - 1 - k;
    sizes[k] = out_sizes[d];
    for (int op = 0; op < L.noperands; ++op) {
      const OperandGeometry& g = operands[op];
      const int od = d - (nd - g.sizes->size());
      const bool broadcast = od < 0 || (*g.sizes)[od] == 1;
      strides[op][k] = broadcast ? 0 : (*g.strides)[od] * g.element_size;
    }
  }
  // Order dims by the output's strides (then the inputs'), so the innermost loop
  // walks memory contiguously even for transposed outputs.
  int perm[kMaxDims];
  for (int k = 0; k < nd; ++k) perm[k] = k;
  auto less = [&](int a, int b) {
    for (int op = 0; op < L.noperands; ++op) {
      const int64_t sa = strides[op][a], sb = strides[op][b];
      if (sa == 0 || sb == 0) continue;
      if (sa != sb) return sa < sb;
    }
    return false;
  };
  for (int i = 1; i < nd; ++i)  // insertion sort: safe with this partial order
    for (int j = i; j > 0 && less(perm[j], perm[j - 1]); --j) std::swap(perm[j], perm[j - 1]);
  // Drop size-1 dims and coalesce neighbours that are contiguous for every operand.
  int n = 0;
  for (int k = 0; k < nd; ++k) {
    const int src = perm[k];
    if (sizes[src] == 1) continue;
    if (n > 0) {
      bool merge = true;
      for (int op = 0; op < L.noperands && merge; ++op)
        merge = strides[op][src] == L.strides[op][n - 1] * L.sizes[n - 1];
      if (merge) {
        L.sizes[n - 1] *= sizes[src];
        continue;
      }
    }
    L.sizes[n] = sizes[src];
    for (int op = 0; op < L.noperands; ++op) L.strides[op][n] = strides[op][src];
    ++n;
  }
  L.ndim = n;
  if (n == 0) {  // a single element (or a 0-dim tensor)
    L.ndim = 1;
    L.sizes[0] = L.numel == 0 ? 0 : 1;
    for (int op = 0; op < L.noperands; ++op) L.strides[op][0] = 0;
  }
  return L;
}

bool is_dense(const StridedLayout& L, std::span<const OperandGeometry> operands, const bool* ignore) {
  if (L.numel <= 1) return true;
  if (L.ndim != 1) return false;
  for (size_t k = 0; k < operands.size(); ++k)
    if (!(ignore && ignore[k]) && L.strides[k][0] != operands[k].element_size) return false;
  return true;
}

}  // namespace mixt
