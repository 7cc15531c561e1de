// Per-element index math of the indexing kernels, shared by host tests and the CUDA
// kernels (kernels/cuda/index.cu): the bounds rule of an index value (negative values in
// [-size, -1] count from the end, as on the CPU) and the device error code each op reports
// for a value outside [-size, size) (Note [Device-side errors]), and scatter_add's sum.
#pragma once

#include <cstdint>
#include <type_traits>

#include <mixt/kernels/common/convert.h>
#include <mixt/runtime/dtype.h>

namespace mixt::index_math {

// Wraps `v` into [0, size): true and *out set when -size <= v < size; else false and *out = 0
// (a harmless position when size > 0; the kernels write nothing when the index is bad).
MIXT_HD inline bool wrap_index(int64_t v, int64_t size, int64_t* out) {
  if (v < -size || v >= size) {
    *out = 0;
    return false;
  }
  *out = v < 0 ? v + size : v;
  return true;
}

// scatter_add's accumulation of one element: dst + v in opmath, rounded once to T (a
// logical or for bool). The CPU adds along each line in index order; so does CUDA's
// deterministic path.
template <class T>
MIXT_HD inline T scatter_add_value(T dst, T v) {
  if constexpr (std::is_same_v<T, bool>) return dst || v;
  else return convert<T>(static_cast<opmath_t<T>>(dst) + static_cast<opmath_t<T>>(v));
}

}  // namespace mixt::index_math
