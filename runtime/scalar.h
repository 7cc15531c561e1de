// Scalar: a bool, integer or floating value (or none), as passed to ops.
#pragma once

#include <cmath>
#include <cstdint>
#include <iosfwd>
#include <limits>
#include <string>
#include <type_traits>
#include <utility>

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
  // The value as int64 (floats truncated); raises mixt::Error for NaN, Inf and values
  // outside int64's range. See Note [Scalar conversions].
  int64_t to_int() const { return to<int64_t>(); }
  constexpr bool to_bool() const { return kind_ == Kind::Float ? d_ != 0.0 : i_ != 0; }
  // The value converted to C++ type T (a dtype's storage type or a builtin). Integer
  // targets are checked: floats truncate toward zero, and NaN, Inf or a value outside
  // T's range raises mixt::Error ("value cannot be converted to type int32 without
  // overflow"). Floating targets round as IEEE casts do (out of range: +-Inf). See
  // Note [Scalar conversions].
  template <class T>
  T to() const {
    if constexpr (std::is_same_v<T, bool>) {
      return to_bool();
    } else if constexpr (std::is_integral_v<T>) {
      if (kind_ == Kind::Float) {
        const double t = std::trunc(d_);  // NaN stays NaN and fails both comparisons
        if (!(t >= min_of<T>() && t < max_of<T>())) throw_overflow(integral_name<T>());
        return static_cast<T>(t);
      }
      if (!std::in_range<T>(i_)) throw_overflow(integral_name<T>());
      return static_cast<T>(i_);
    } else if constexpr (std::is_floating_point_v<T>) {
      return kind_ == Kind::Float ? static_cast<T>(d_) : static_cast<T>(i_);
    } else {
      return T(kind_ == Kind::Float ? static_cast<float>(d_) : static_cast<float>(i_));
    }
  }
  // The dtype a tensor made from this scalar gets: bool, int64 or float32
  // (`default_float`), as PyTorch does.
  ScalarType default_dtype(ScalarType default_float = kFloat32) const;
  // "3", "2.5", "true", "none".
  std::string str() const;

 private:
  // Raises mixt::Error: this value does not fit integer type `type`.
  [[noreturn]] void throw_overflow(const char* type) const;
  // T's lowest value and one past its highest, as doubles (exact: powers of two).
  template <class T>
  static constexpr double min_of() {
    return std::numeric_limits<T>::is_signed ? -max_of<T>() : 0.0;
  }
  template <class T>
  static constexpr double max_of() {
    double v = 1.0;
    for (int i = 0; i < std::numeric_limits<T>::digits; ++i) v *= 2.0;
    return v;
  }
  // "int32", "uint8", ... (the dtype names of mixt's integer types).
  template <class T>
  static constexpr const char* integral_name() {
    constexpr bool s = std::is_signed_v<T>;
    switch (sizeof(T)) {
      case 1: return s ? "int8" : "uint8";
      case 2: return s ? "int16" : "uint16";
      case 4: return s ? "int32" : "uint32";
      default: return s ? "int64" : "uint64";
    }
  }

  union {
    int64_t i_ = 0;
    double d_;
  };
  Kind kind_ = Kind::None;
};

// Prints Scalar::str() (fmt: <mixt/runtime/formatters.h>).
std::ostream& operator<<(std::ostream& os, const Scalar& s);

}  // namespace mixt
