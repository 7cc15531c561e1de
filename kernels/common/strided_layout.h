// StridedLayout: the iteration space of an elementwise op over an output and its
// (broadcast) inputs, with dims reordered to memory order and coalesced. Host
// code shared by the CPU loops and the CUDA launchers (the struct itself is also read by
// device code: kernels/common/layout_index.h). Dim 0 is the fastest.
#pragma once

#include <cstdint>
#include <span>

#include <mixt/runtime/shape.h>

namespace mixt {

constexpr int kMaxOperands = 5;  // one output + up to four inputs

// One operand's geometry: sizes and strides in elements, and its element size.
struct OperandGeometry {
  const Shape* sizes;
  const Shape* strides;
  int64_t element_size;
};

struct StridedLayout {
  int ndim = 0;
  int noperands = 0;
  int64_t numel = 0;
  int64_t sizes[kMaxDims] = {};
  int64_t strides[kMaxOperands][kMaxDims] = {};  // bytes
};

// Layout for `operands` (operand 0 is the output; the others broadcast to it).
StridedLayout make_strided_layout(const Shape& out_sizes, std::span<const OperandGeometry> operands);

// True when `L` is one dense run: element i of every operand of `operands` sits at
// i * its element size (operands with `ignore[k]` set, such as scalars, do not count).
bool is_dense(const StridedLayout& L, std::span<const OperandGeometry> operands, const bool* ignore = nullptr);

}  // namespace mixt
