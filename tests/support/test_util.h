// Helpers shared by the CPU test suites: dtype lists, tolerances, tensors from
// literals, and the message of an expected mixt::Error.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include <mixt/mixt.h>

namespace mixt::testing {

inline const double kNan = std::numeric_limits<double>::quiet_NaN();
inline const double kInf = std::numeric_limits<double>::infinity();

inline const std::vector<ScalarType> kFloatTypes = {kFloat32,  kFloat64,       kFloat16,
                                                    kBFloat16, kFloat8_e4m3fn, kFloat8_e5m2};
inline const ScalarType kAllDtypes[] = {kBool,     kUInt8,   kInt8,    kInt32,         kInt64,      kFloat16,
                                        kBFloat16, kFloat32, kFloat64, kFloat8_e4m3fn, kFloat8_e5m2};

// Relative and absolute tolerance of one result rounded to `dt` (computed in
// float for the narrow types).
struct Tol {
  double rtol, atol;
};
inline Tol tol_for(ScalarType dt) {
  switch (dt) {
    case kFloat64: return {1e-12, 1e-14};
    case kFloat32: return {2e-6, 1e-7};
    case kFloat16: return {1.2e-3, 1e-5};
    case kBFloat16: return {8e-3, 1e-5};
    case kFloat8_e4m3fn: return {0.07, 2e-3};
    case kFloat8_e5m2: return {0.13, 2e-5};
    default: return {0, 0};
  }
}

// True when got matches want within tol (NaN matches NaN, infinities must be equal).
inline bool close(double got, double want, Tol tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= tol.atol + tol.rtol * std::abs(want);
}

// Options with just a dtype.
inline TensorOptions of(ScalarType dtype) { return {.dtype = dtype}; }

// True when a and b hold the same values with the same signs of zero (NaN matches NaN): use it
// instead of == wherever a -0.0 is expected, since -0.0 == 0.0.
inline bool same_values(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const bool same = std::isnan(a[i]) ? std::isnan(b[i]) : a[i] == b[i] && std::signbit(a[i]) == std::signbit(b[i]);
    if (!same) return false;
  }
  return true;
}

// A tensor of `dt` holding `v` (1-D unless a shape is given).
inline Tensor make(const std::vector<double>& v, ScalarType dt, const Shape& shape = {}) {
  return from_vector(v, shape.empty() ? Shape{static_cast<int64_t>(v.size())} : shape).to(dt);
}

// A bool tensor from 0/1 values.
inline Tensor bools(const std::vector<uint8_t>& v, const Shape& shape = {}) {
  return from_vector(v, shape.empty() ? Shape{static_cast<int64_t>(v.size())} : shape).to(kBool);
}

// The values of `t` as doubles (row-major).
inline std::vector<double> values(const Tensor& t) { return t.to_vector<double>(); }

// A 0-dim tensor (not a wrapped scalar) holding v.
inline Tensor scalar0(double v, ScalarType dt = kFloat32) { return scalar_tensor(v, of(dt)); }

// A float32 tensor of `shape` holding 0, 1, 2, ... in row-major order.
inline Tensor iota(const Shape& shape) {
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i);
  return from_vector(v, shape);
}

// The message of the mixt::Error `f` throws ("" when it throws none).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace mixt::testing
