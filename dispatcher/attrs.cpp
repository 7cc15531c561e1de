// Printing attribute values (explain, errors, the op list) and the error of a
// kernel that reads another op's attribute struct.
#include <mixt/dispatcher/attrs.h>

#include <ostream>

#include <mixt/runtime/check.h>

namespace mixt {
namespace detail {
namespace {
template <class T>
const T& field(const void* p) {
  return *static_cast<const T*>(p);
}

std::string_view enum_name(Reduction r) {
  switch (r) {
    case Reduction::None: return "none";
    case Reduction::Mean: return "mean";
    case Reduction::Sum: return "sum";
  }
  return "?";
}
std::string_view enum_name(Rounding r) {
  switch (r) {
    case Rounding::True: return "true";
    case Rounding::Trunc: return "trunc";
    case Rounding::Floor: return "floor";
  }
  return "?";
}
std::string_view enum_name(GeluApprox g) { return g == GeluApprox::Tanh ? "tanh" : "none"; }
}  // namespace

template <>
std::string print_attr<int64_t>(const void* p) {
  return fmt::format("{}", field<int64_t>(p));
}
template <>
std::string print_attr<double>(const void* p) {
  return fmt::format("{}", field<double>(p));
}
template <>
std::string print_attr<bool>(const void* p) {
  return field<bool>(p) ? "true" : "false";
}
template <>
std::string print_attr<Scalar>(const void* p) {
  return field<Scalar>(p).str();
}
template <>
std::string print_attr<Shape>(const void* p) {
  return field<Shape>(p).str();
}
template <>
std::string print_attr<std::optional<int64_t>>(const void* p) {
  const auto& v = field<std::optional<int64_t>>(p);
  return v ? fmt::format("{}", *v) : "none";
}
template <>
std::string print_attr<std::optional<double>>(const void* p) {
  const auto& v = field<std::optional<double>>(p);
  return v ? fmt::format("{}", *v) : "none";
}
template <>
std::string print_attr<Reduction>(const void* p) {
  return std::string(enum_name(field<Reduction>(p)));
}
template <>
std::string print_attr<Rounding>(const void* p) {
  return std::string(enum_name(field<Rounding>(p)));
}
template <>
std::string print_attr<GeluApprox>(const void* p) {
  return std::string(enum_name(field<GeluApprox>(p)));
}
template <>
std::string print_attr<EinsumEquation>(const void* p) {
  return fmt::format("\"{}\"", field<EinsumEquation>(p).text);
}
}  // namespace detail

std::ostream& operator<<(std::ostream& os, Reduction r) { return os << detail::enum_name(r); }
std::ostream& operator<<(std::ostream& os, Rounding r) { return os << detail::enum_name(r); }
std::ostream& operator<<(std::ostream& os, GeluApprox g) { return os << detail::enum_name(g); }

std::string Attrs::describe() const {
  std::string s;
  for (int i = 0; i < schema_->num_fields; ++i) {
    const AttrField& f = schema_->fields[i];
    if (!s.empty()) s += ", ";
    s += f.name;
    s += '=';
    s += f.print ? f.print(payload_ + f.offset) : std::string("?");
  }
  return s;
}

void Attrs::throw_wrong_struct(const AttrSchema& wanted) const {
  MIXT_FAIL("attrs", "a kernel read attributes {} from a call whose op declares {} (a bug in the kernel)",
            wanted.name, schema_->name);
}

}  // namespace mixt
