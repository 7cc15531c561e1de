// fmt formatters for mixt's value types: fmt::format("{}", x) gives what `os << x`
// prints, and a string spec (width, fill, alignment: "{:>10}") applies to the whole
// text; float16/bfloat16/float8 values take float specs ("{:.3f}"). Host code only
// (fmt stays out of .cu files); <mixt/mixt.h> includes this header, and
// dispatcher/formatters.h and autocast/formatters.h cover the types of those layers.
#pragma once

#include <sstream>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include <mixt/runtime/device.h>
#include <mixt/runtime/dtype.h>
#include <mixt/runtime/float_types.h>
#include <mixt/runtime/scalar.h>
#include <mixt/runtime/shape.h>
#include <mixt/runtime/tensor.h>

namespace mixt::detail {
// Formats T as the string that `text(value)` returns, with string specs.
template <class T, auto text>
struct TextFormatter : fmt::formatter<std::string_view> {
  auto format(const T& value, fmt::format_context& ctx) const {
    return fmt::formatter<std::string_view>::format(text(value), ctx);
  }
};
// The text of `os << value`.
template <class T>
std::string streamed(const T& value) {
  std::ostringstream os;
  os << value;
  return os.str();
}
// Formats T as its operator<< prints it, with string specs.
template <class T>
using StreamFormatter = TextFormatter<T, streamed<T>>;
// The text of a value with a str() member.
template <class T>
std::string str_of(const T& value) {
  return value.str();
}
// Formats T as its str() member prints it, with string specs.
template <class T>
using StrFormatter = TextFormatter<T, str_of<T>>;
// Formats a software float type as the float it holds, with float specs.
template <class T>
struct FloatFormatter : fmt::formatter<float> {
  auto format(T value, fmt::format_context& ctx) const {
    return fmt::formatter<float>::format(static_cast<float>(value), ctx);
  }
};
}  // namespace mixt::detail

template <>
struct fmt::formatter<mixt::ScalarType> : mixt::detail::TextFormatter<mixt::ScalarType, mixt::dtype_name> {};
template <>
struct fmt::formatter<mixt::DeviceType> : mixt::detail::TextFormatter<mixt::DeviceType, mixt::device_type_name> {};
template <>
struct fmt::formatter<mixt::Device> : mixt::detail::StrFormatter<mixt::Device> {};
template <>
struct fmt::formatter<mixt::Shape> : mixt::detail::StrFormatter<mixt::Shape> {};
template <>
struct fmt::formatter<mixt::Scalar> : mixt::detail::StrFormatter<mixt::Scalar> {};
template <>
struct fmt::formatter<mixt::Tensor> : mixt::detail::StrFormatter<mixt::Tensor> {};
template <>
struct fmt::formatter<mixt::TensorOptions> : mixt::detail::StreamFormatter<mixt::TensorOptions> {};
template <>
struct fmt::formatter<mixt::Half> : mixt::detail::FloatFormatter<mixt::Half> {};
template <>
struct fmt::formatter<mixt::BFloat16> : mixt::detail::FloatFormatter<mixt::BFloat16> {};
template <>
struct fmt::formatter<mixt::Float8_e4m3fn> : mixt::detail::FloatFormatter<mixt::Float8_e4m3fn> {};
template <>
struct fmt::formatter<mixt::Float8_e5m2> : mixt::detail::FloatFormatter<mixt::Float8_e5m2> {};
