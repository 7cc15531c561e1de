// Scalar: a bool, integer or floating value (or none), as passed to ops.
#pragma once

#include <cstdint>
#include <string>
#include <type_traits>

#include "dtype.h"

namespace mixt {

class Scalar {
 public:
  enum class Kind : uint8_t { None, Bool, Int, Float };

  constexpr Scalar() = default;
  constexpr Scalar(bool v) : i_(v), kind_(Kind::Bool) {}
  template <class T, std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, int> = 0>
  constexpr Scalar(T v) : i_(static_cast<int64_t>(v)), kind_(Kind::Int) {}
  constexpr Scalar(double v) : d_(v), kind_(Kind::Float) {}
  constexpr Scalar(float v) : d_(v), kind_(Kind::Float) {}
  Scalar(Half v) : d_(static_cast<float>(v)), kind_(Kind::Float) {}
  Scalar(BFloat16 v) : d_(static_cast<float>(v)), kind_(Kind::Float) {}
  Scalar(Float8_e4m3fn v) : d_(static_cast<float>(v)), kind_(Kind::Float) {}
  Scalar(Float8_e5m2 v) : d_(static_cast<float>(v)), kind_(Kind::Float) {}

  constexpr Kind kind() const { return kind_; }
  constexpr bool has_value() const { return kind_ != Kind::None; }
  constexpr bool is_bool() const { return kind_ == Kind::Bool; }
  constexpr bool is_integral() const { return kind_ == Kind::Int; }
  constexpr bool is_floating() const { return kind_ == Kind::Float; }

  // The value as a double (bools as 0/1).
  constexpr double to_double() const { return kind_ == Kind::Float ? d_ : static_cast<double>(i_); }
  // The value as int64 (floats truncated).
  constexpr int64_t to_int() const { return kind_ == Kind::Float ? static_cast<int64_t>(d_) : i_; }
  constexpr bool to_bool() const { return kind_ == Kind::Float ? d_ != 0.0 : i_ != 0; }
  // The value converted to C++ type T (a dtype's storage type or a builtin).
  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) return to_bool();
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(kind_ == Kind::Float ? static_cast<T>(d_) : static_cast<T>(i_));
    else if constexpr (std::is_floating_point_v<T>) return static_cast<T>(to_double());
    else return T(static_cast<float>(to_double()));
  }
  // The dtype a tensor made from this scalar gets: bool, int64 or float32
  // (`default_float`), as PyTorch does.
  ScalarType default_dtype(ScalarType default_float = kFloat32) const;
  // "3", "2.5", "true", "none".
  std::string str() const;

 private:
  union {
    int64_t i_ = 0;
    double d_;
  };
  Kind kind_ = Kind::None;
};

}  // namespace mixt
