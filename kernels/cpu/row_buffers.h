// Work rows for the vectorised row kernels (kernels/cpu/vec/rows.h): a line of any
// floating storage type read into float (double for float64) and written back, rounded
// once. bfloat16 and float16 lines with unit stride convert in vectors (vec/convert.h);
// strided lines and the float8 types convert one element at a time, as convert<> does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <vector>

#include <mixt/kernels/common/convert.h>
#include <mixt/kernels/cpu/vec/convert.h>
#include <mixt/runtime/dtype.h>

namespace mixt::cpu {

// The work type of the row kernels for storage type T: double for double, else float.
template <class T>
using work_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// True when T's rows are handed to the row kernels in place (no conversion).
template <class T>
inline constexpr bool is_work_type_v = std::is_same_v<T, work_t<T>>;

// w[j] = x[j * stride] for j < n, exactly.
template <class T>
void load_line(const T* x, int64_t stride, work_t<T>* w, int64_t n) {
  if constexpr (std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>) {
    if (stride == 1) return vec::to_float(x, w, static_cast<size_t>(n));
  }
  for (int64_t j = 0; j < n; ++j) w[j] = static_cast<work_t<T>>(x[j * stride]);
}

// y[j * stride] = w[j] rounded to T, for j < n.
template <class T>
void store_line(const work_t<T>* w, T* y, int64_t stride, int64_t n) {
  if constexpr (std::is_same_v<T, BFloat16> || std::is_same_v<T, Half>) {
    if (stride == 1) return vec::from_float(w, y, static_cast<size_t>(n));
  }
  for (int64_t j = 0; j < n; ++j) y[j * stride] = convert<T>(w[j]);
}

// A contiguous row as the row kernels take it: the row itself when T is a work type,
// else a converted copy in `buf` (resized as needed).
template <class T>
const work_t<T>* work_row(const T* x, int64_t n, std::vector<work_t<T>>& buf) {
  if constexpr (is_work_type_v<T>) {
    return x;
  } else {
    if (static_cast<int64_t>(buf.size()) < n) buf.resize(static_cast<size_t>(n));
    load_line(x, 1, buf.data(), n);
    return buf.data();
  }
}

}  // namespace mixt::cpu
