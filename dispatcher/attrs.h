// Attrs: the attribute block of one op call. Three fields every layer may read
// (the requested dtype, the device of a factory, the generator of a random op)
// and the op's own named attributes: a struct declared with the op in
// op_table.def (MIXT_ATTRS), stored inline (no heap), read by name
// (`c.attrs.get<attrs::Slice>().start`). See Note [Named attributes].
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <iosfwd>
#include <new>
#include <optional>
#include <string>
#include <type_traits>

#include <mixt/runtime/device.h>
#include <mixt/runtime/dtype.h>
#include <mixt/runtime/macros.h>
#include <mixt/runtime/scalar.h>
#include <mixt/runtime/shape.h>

namespace mixt {

class Generator;

// The enumerated attribute types of the built-in ops.
enum class Reduction : uint8_t { None, Mean, Sum };    // of a loss
enum class Rounding : uint8_t { True, Trunc, Floor };  // of div
enum class GeluApprox : uint8_t { None, Tanh };        // of gelu
// einsum's equation, held inline (attributes are trivially copyable): at most
// kMaxChars characters, NUL-terminated.
struct EinsumEquation {
  static constexpr size_t kMaxChars = 127;
  char text[kMaxChars + 1] = {};
};
// Print as the attribute dumps do: "mean", "floor", "tanh" (fmt: <mixt/dispatcher/formatters.h>).
std::ostream& operator<<(std::ostream& os, Reduction r);
std::ostream& operator<<(std::ostream& os, Rounding r);
std::ostream& operator<<(std::ostream& os, GeluApprox g);

// One named attribute, for documentation, explain and error messages.
struct AttrField {
  const char* name;
  const char* type;
  const char* default_value;  // as written in the declaration
  size_t offset;
  std::string (*print)(const void* field);  // the value as text (nullptr: a type mixt cannot print)
};

// What an attribute struct is: its name, size, default values and fields. Every
// struct declared with MIXT_ATTRS_STRUCT has one (T::kSchema).
struct AttrSchema {
  const char* name;
  const void* defaults;  // a default-constructed instance
  uint16_t size;
  const AttrField* fields;
  uint8_t num_fields;
};

// Largest attribute struct an op may declare (col2im's five shapes fit).
constexpr size_t kMaxAttrBytes = 384;

namespace attrs {
// The attributes of an op that has none.
struct NoAttrs {
  static const AttrSchema kSchema;
};
inline const AttrSchema NoAttrs::kSchema = {"NoAttrs", nullptr, 0, nullptr, 0};
}  // namespace attrs

class Attrs {
 public:
  Attrs() : schema_(&attrs::NoAttrs::kSchema) {}

  // The requested dtype: the result dtype of a cast or a factory, or an optional
  // output/accumulate dtype (sum, softmax, mm's out_dtype); Undefined when unset.
  ScalarType dtype = ScalarType::Undefined;
  // Where a factory creates its result (and the target of `to`).
  Device device;
  // The stream a random op draws from (nullptr: the default generator).
  Generator* generator = nullptr;

  // The op's named attributes. Raises mixt::Error when the call's op declares
  // another struct (a bug in the caller).
  template <class T>
  MIXT_ALWAYS_INLINE T& get() {
    if (MIXT_UNLIKELY(schema_ != &T::kSchema)) throw_wrong_struct(T::kSchema);
    return *std::launder(reinterpret_cast<T*>(payload_));
  }
  template <class T>
  MIXT_ALWAYS_INLINE const T& get() const {
    if (MIXT_UNLIKELY(schema_ != &T::kSchema)) throw_wrong_struct(T::kSchema);
    return *std::launder(reinterpret_cast<const T*>(payload_));
  }
  // The schema of the struct these attributes hold.
  const AttrSchema& schema() const { return *schema_; }
  // Holds `s`'s defaults from now on (OpCall does this for its op).
  MIXT_ALWAYS_INLINE void reset(const AttrSchema& s) {
    schema_ = &s;
    if (s.size) std::memcpy(payload_, s.defaults, s.size);
  }
  // "start=0, end=9223372036854775807, step=2": the named values, for explain and errors.
  std::string describe() const;

 private:
  [[noreturn]] void throw_wrong_struct(const AttrSchema& wanted) const;
  const AttrSchema* schema_;
  alignas(8) std::byte payload_[kMaxAttrBytes];
};

namespace detail {
// The value of an attribute of type T as text (defined for the types below).
template <class T>
std::string print_attr(const void* field);
template <> std::string print_attr<int64_t>(const void*);
template <> std::string print_attr<double>(const void*);
template <> std::string print_attr<bool>(const void*);
template <> std::string print_attr<Scalar>(const void*);
template <> std::string print_attr<Shape>(const void*);
template <> std::string print_attr<std::optional<int64_t>>(const void*);
template <> std::string print_attr<std::optional<double>>(const void*);
template <> std::string print_attr<Reduction>(const void*);
template <> std::string print_attr<Rounding>(const void*);
template <> std::string print_attr<GeluApprox>(const void*);
template <> std::string print_attr<EinsumEquation>(const void*);
// The printer of attribute type T, or nullptr (types outside that list).
template <class T>
constexpr auto attr_printer() -> std::string (*)(const void*) {
  if constexpr (std::is_same_v<T, int64_t> || std::is_same_v<T, double> || std::is_same_v<T, bool> ||
                std::is_same_v<T, Scalar> || std::is_same_v<T, Shape> || std::is_same_v<T, std::optional<int64_t>> ||
                std::is_same_v<T, std::optional<double>> || std::is_same_v<T, Reduction> ||
                std::is_same_v<T, Rounding> || std::is_same_v<T, GeluApprox> ||
                std::is_same_v<T, EinsumEquation>)
    return &print_attr<T>;
  else
    return nullptr;
}
}  // namespace detail

}  // namespace mixt

// ---- declaring an attribute struct ------------------------------------------
// MIXT_ATTRS_STRUCT(Slice, (int64_t, dim, 0)(int64_t, start, 0)(int64_t, step, 1))
// declares `struct Slice { int64_t dim = 0; int64_t start = 0; int64_t step = 1; }`
// with its AttrSchema (Slice::kSchema). A default may contain commas
// ((Shape, stride, {1, 1})). Members must be trivially copyable.

// Iteration over a sequence (a)(b)(c): A and B alternate (a macro cannot expand
// itself); the sequence is closed by an empty element, on which __VA_OPT__ stops.
#define MIXT_DETAIL_ATTR_MEMBER(type, name, ...) type name = __VA_ARGS__;
#define MIXT_DETAIL_ATTR_MEMBER_A(...) __VA_OPT__(MIXT_DETAIL_ATTR_MEMBER(__VA_ARGS__) MIXT_DETAIL_ATTR_MEMBER_B)
#define MIXT_DETAIL_ATTR_MEMBER_B(...) __VA_OPT__(MIXT_DETAIL_ATTR_MEMBER(__VA_ARGS__) MIXT_DETAIL_ATTR_MEMBER_A)
#define MIXT_DETAIL_ATTR_MEMBERS(seq) MIXT_DETAIL_ATTR_MEMBER_A seq()

#define MIXT_DETAIL_ATTR_FIELD(type, name, ...) \
  ::mixt::AttrField{#name, #type, #__VA_ARGS__, offsetof(Self, name), ::mixt::detail::attr_printer<type>()},
#define MIXT_DETAIL_ATTR_FIELD_A(...) __VA_OPT__(MIXT_DETAIL_ATTR_FIELD(__VA_ARGS__) MIXT_DETAIL_ATTR_FIELD_B)
#define MIXT_DETAIL_ATTR_FIELD_B(...) __VA_OPT__(MIXT_DETAIL_ATTR_FIELD(__VA_ARGS__) MIXT_DETAIL_ATTR_FIELD_A)
#define MIXT_DETAIL_ATTR_FIELDS(seq) MIXT_DETAIL_ATTR_FIELD_A seq()

#define MIXT_ATTRS_STRUCT(Name, seq)                                                                          \
  struct Name {                                                                                               \
    MIXT_DETAIL_ATTR_MEMBERS(seq)                                                                             \
    using Self = Name;                                                                                        \
    static const Name kDefaults;                                                                              \
    static const ::mixt::AttrField kFields[];                                                                 \
    static const ::mixt::AttrSchema kSchema;                                                                  \
  };                                                                                                          \
  static_assert(std::is_trivially_copyable_v<Name> && sizeof(Name) <= ::mixt::kMaxAttrBytes &&                \
                    alignof(Name) <= 8,                                                                       \
                "attribute structs are trivially copyable and fit Attrs");                                    \
  inline const Name Name::kDefaults{};                                                                        \
  inline const ::mixt::AttrField Name::kFields[] = {MIXT_DETAIL_ATTR_FIELDS(seq){nullptr, nullptr, nullptr, 0, \
                                                                                    nullptr}};                \
  inline const ::mixt::AttrSchema Name::kSchema = {#Name, &Name::kDefaults, sizeof(Name), Name::kFields,      \
                                                   static_cast<uint8_t>(sizeof(Name::kFields) /               \
                                                                            sizeof(::mixt::AttrField) -       \
                                                                        1)};
