#include <mixt/runtime/io/safetensors_header.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <limits>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <mixt/runtime/check.h>
#include <mixt/runtime/checked.h>

namespace mixt::io::safetensors_detail {
namespace {

using Json = nlohmann::json;
constexpr int kMaxNesting = 3;  // {name: {"shape": [...]}}

struct DtypeCode {
  ScalarType type;
  std::string_view code;
};
constexpr DtypeCode kDtypeCodes[] = {
    {kBool, "BOOL"},           {kUInt8, "U8"},      {kInt8, "I8"},     {kInt32, "I32"},   {kInt64, "I64"},
    {kFloat16, "F16"},         {kBFloat16, "BF16"}, {kFloat32, "F32"}, {kFloat64, "F64"}, {kFloat8_e4m3fn, "F8_E4M3"},
    {kFloat8_e5m2, "F8_E5M2"},
};

// `s` cut to 40 characters, for error messages.
std::string brief_text(std::string s) { return s.size() > 40 ? s.substr(0, 37) + "..." : s; }
// A short rendering of a JSON value.
std::string brief(const Json& v) { return brief_text(v.dump(-1, ' ', true)); }
// A short rendering of a JSON array of non-negative integers.
std::string brief(std::span<const uint64_t> v) { return brief_text(fmt::format("[{}]", fmt::join(v, ","))); }

// Note [Safetensors sizes]: every size, count and offset read from a file is
// combined with the checked helpers of runtime/checked.h. A shape's element count
// (zero sizes counted as ones, as for every tensor) and its byte count must fit in
// int64, and data_offsets must span exactly that many bytes. (The byte count used
// to be computed in wrapping 64-bit arithmetic: F32 [4611686018427387905] with
// data_offsets [0, 4] passed, as 4 * (2^62 + 1) wraps to 4.) The regions must then
// tile the data buffer without gap or overlap, so a file's tensors never hold more
// bytes than the file, and nothing is allocated before the whole header is checked.

// Entry `name` from its fields, with every check that is not about JSON types
// (Note [Safetensors sizes]). Its sizes are appended to `sizes`.
Entry make_entry(const Source& src, const std::string& name, std::string_view code, std::span<const uint64_t> shape,
                 std::span<const uint64_t> offsets, std::vector<int64_t>& sizes) {
  const ScalarType dtype = dtype_of_code(code);
  if (dtype == ScalarType::Undefined) src.fail("tensor '{}': unknown or unsupported dtype \"{}\"", name, code);
  if (shape.size() > static_cast<size_t>(kMaxDims))
    src.fail("tensor '{}' has {} dimensions (at most {} supported)", name, shape.size(), kMaxDims);
  Shape dims;
  for (const uint64_t n : shape) {
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
      src.fail("tensor '{}': shape {} is too large: size {} exceeds 2^63 - 1", name, brief(shape), n);
    dims.push_back(static_cast<int64_t>(n));
  }
  uint64_t nbytes = 0;
  try {
    nbytes = static_cast<uint64_t>(checked_nbytes(checked_numel(dims, src.op()), element_size(dtype), src.op()));
  } catch (const Error& err) {
    src.fail("tensor '{}': {} {} is too large: {}", name, dtype, dims, err.message());
  }
  if (offsets.size() != 2) src.fail("tensor '{}': data_offsets {} is not [begin, end]", name, brief(offsets));
  const uint64_t begin = offsets[0], end = offsets[1];
  if (begin > end) src.fail("tensor '{}': data_offsets begin {} > end {}", name, begin, end);
  if (end - begin != nbytes)
    src.fail("tensor '{}': data_offsets [{}, {}] hold {} bytes, but {} {} needs {}", name, begin, end, end - begin,
             dtype, dims, nbytes);
  const Entry e{name, begin, end, static_cast<uint32_t>(sizes.size()), static_cast<uint8_t>(dims.size()), dtype};
  sizes.insert(sizes.end(), dims.begin(), dims.end());
  return e;
}

// The member `field` of entry `name`, which must have JSON type `type`.
const Json& member(const Source& src, const Json& obj, const std::string& name, const char* field, Json::value_t type) {
  const auto it = obj.find(field);
  if (it == obj.end()) src.fail("tensor '{}' has no \"{}\"", name, field);
  if (it->type() != type)
    src.fail("tensor '{}': \"{}\" is {}, not {}", name, field, brief(*it), Json(type).type_name());
  return *it;
}

// The elements of a JSON array, which must be non-negative integers.
std::vector<uint64_t> indices(const Source& src, const Json& array, const std::string& name, std::string_view field) {
  std::vector<uint64_t> out;
  for (const Json& v : array) {
    if (!v.is_number_unsigned())
      src.fail("tensor '{}': {} holds {}, not a non-negative integer", name, field, brief(v));
    out.push_back(v.get<uint64_t>());
  }
  return out;
}

// Entry `name` from its JSON value, checking the JSON types first.
Entry parse_entry(const Source& src, const std::string& name, const Json& v, std::vector<int64_t>& sizes) {
  if (!v.is_object()) src.fail("tensor '{}' is {}, not an object", name, brief(v));
  const auto& code = member(src, v, name, "dtype", Json::value_t::string).get_ref<const std::string&>();
  const auto shape = indices(src, member(src, v, name, "shape", Json::value_t::array), name, "shape");
  const auto offsets = indices(src, member(src, v, name, "data_offsets", Json::value_t::array), name, "data_offsets");
  return make_entry(src, name, code, shape, offsets, sizes);
}

// Raises the error for a __metadata__ value that is not an object of strings.
[[noreturn]] void bad_metadata(const Source& src, const Json& v) {
  if (!v.is_object()) src.fail("__metadata__ is {}, not an object", brief(v));
  for (const auto& [k, s] : v.items())
    if (!s.is_string()) src.fail("__metadata__ entry '{}' is {}, not a string", k, brief(s));
  src.fail("__metadata__ is malformed");
}

bool is_json_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Note [Header padding]: the header is a JSON object that starts with '{' and may
// be padded at the end with spaces (0x20) only, as the format states. A UTF-8
// byte order mark, leading whitespace, a NUL byte (nlohmann's lexer takes it for
// the end of the input, so "{}\0garbage" read as "{}") and other trailing
// whitespace are refused. Returns the length of the JSON text.
size_t json_length(const Source& src, std::string_view text) {
  if (text.starts_with("\xEF\xBB\xBF"))
    src.fail("the header starts with a UTF-8 byte order mark (it must start with '{{')");
  if (const void* nul = std::memchr(text.data(), 0, text.size()))
    src.fail("the header holds a NUL byte at offset {} (it is JSON padded with spaces only)",
             static_cast<const char*>(nul) - text.data());
  if (!text.empty() && is_json_space(text.front())) src.fail("the header starts with whitespace (it must start with '{{')");
  const size_t last = text.find_last_not_of(' ');
  const size_t end = last == std::string_view::npos ? 0 : last + 1;
  if (end > 0 && is_json_space(text[end - 1]))
    src.fail("the header is padded with byte 0x{:02x} at offset {} (only spaces may pad it)",
             static_cast<unsigned char>(text[end - 1]), end - 1);
  return end;
}

// The names of the entries read so far: an open-addressing hash table of their
// positions in the entry list, where the names live. A slot holds 32 bits of the
// name's hash (which also pick its slot) beside the position, so probing and
// growing read an entry only on a likely match.
class NameIndex {
 public:
  explicit NameIndex(const std::deque<Entry>& entries) : entries_(entries) {}
  // Whether an entry is called `name`.
  bool contains(std::string_view name) const { return !slots_.empty() && slots_[slot_of(name, hash(name))] != 0; }
  // Records the last entry of the list.
  void add_last() {
    if (2 * (count_ + 1) > slots_.size()) grow();
    const size_t position = entries_.size() - 1;
    const uint32_t h = hash(entries_[position].name);
    slots_[slot_of(entries_[position].name, h)] = uint64_t{h} << 32 | (position + 1);
    ++count_;
  }

 private:
  static uint32_t hash(std::string_view name) { return static_cast<uint32_t>(std::hash<std::string_view>{}(name) >> 32); }
  // The slot that holds `name` (whose hash is `h`), or the empty one where it would go.
  size_t slot_of(std::string_view name, uint32_t h) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      const uint64_t s = slots_[i];
      if (s == 0 || (s >> 32 == h && entries_[(s & 0xffffffffu) - 1].name == name)) return i;
    }
  }
  void grow() {
    const std::vector<uint64_t> old = std::exchange(slots_, std::vector<uint64_t>(std::max<size_t>(64, 2 * slots_.size())));
    const size_t mask = slots_.size() - 1;
    for (const uint64_t s : old) {  // the names are distinct: each goes to the first free slot
      if (s == 0) continue;
      size_t i = (s >> 32) & mask;
      while (slots_[i] != 0) i = (i + 1) & mask;
      slots_[i] = s;
    }
  }

  const std::deque<Entry>& entries_;
  std::vector<uint64_t> slots_;  // the name's hash (high 32 bits) and 1 + its position; 0 when empty
  size_t count_ = 0;
};

// Note [Linear header parsing]: the header is read with nlohmann's SAX parser and
// never built as one JSON tree. Tensor entries of the expected form ("dtype" a
// string, "shape" and "data_offsets" arrays of non-negative integers) and string
// metadata are taken straight from the parser's events; any other value (a wrong
// type, an unknown member) is built as a small JSON value, so the errors can
// show it. Duplicate names are found with a hash table of entry positions,
// nesting past kMaxNesting stops the parse at once, and an entry keeps its sizes
// in one shared list. Time and memory grow linearly with the header. (The DOM
// parser with a callback, used before, rescans an object each time one of its
// members ends: 50,000 members took seconds, 200,000 minutes.)
// (Entry positions and Header::sizes offsets fit in 32 bits: each takes at least
// one byte of a header of at most kMaxSafetensorsHeader bytes.)
class HeaderReader {
 public:
  explicit HeaderReader(const Source& src) : src_(src), names_(header_.entries) {}

  bool null() { return scalar(nullptr); }
  bool boolean(bool v) { return scalar(v); }
  bool number_integer(Json::number_integer_t v) { return scalar(v); }
  bool number_float(Json::number_float_t v, const std::string&) { return scalar(v); }
  bool binary(Json::binary_t& v) { return scalar(std::move(v)); }
  bool number_unsigned(Json::number_unsigned_t v) {
    if (!stack_.empty() || depth_ != 3) return scalar(v);
    array_.push_back(v);  // an element of "shape" or "data_offsets"
    return true;
  }
  bool string(std::string& v) {
    if (!stack_.empty() || depth_ != 2 || (!in_metadata_ && field_ != Field::Dtype)) return scalar(std::move(v));
    if (in_metadata_)
      header_.metadata.emplace(key_, std::move(v));
    else
      dtype_ = std::move(v);
    return true;
  }
  bool start_object(size_t) { return open(Json::object()); }
  bool start_array(size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool key(std::string& k) {
    if (!stack_.empty()) {
      if (stack_.back()->contains(k)) duplicate(k);
      json_key_ = std::move(k);
    } else if (depth_ == 1) {
      if (k == kMetadataKey ? std::exchange(seen_metadata_, true) : names_.contains(k)) duplicate(k);
      name_ = std::move(k);
    } else if (in_metadata_) {
      if (header_.metadata.contains(k)) duplicate(k);
      key_ = std::move(k);
    } else {
      field_ = k == "dtype" ? Field::Dtype : k == "shape" ? Field::Shape : k == "data_offsets" ? Field::Offsets : Field::Other;
      if (field_ == Field::Other) {
        if (std::find(others_.begin(), others_.end(), k) != others_.end()) duplicate(k);
        others_.push_back(std::move(k));
      } else {
        FieldValue& f = fields_[static_cast<size_t>(field_)];
        if (f.has_value()) duplicate(k);
        f.emplace();  // seen; a value of another form replaces the empty JSON
      }
    }
    return true;
  }
  bool parse_error(size_t, const std::string&, const Json::exception& e) {
    src_.fail("malformed JSON header: {}", e.what());
  }

  Header take() { return std::move(header_); }

 private:
  enum class Field { Dtype, Shape, Offsets, Other };
  // An entry's field: not seen (nullopt), seen in the expected form (empty JSON),
  // or seen holding JSON of another form.
  using FieldValue = std::optional<std::optional<Json>>;

  [[noreturn]] void duplicate(const std::string& k) { src_.fail("duplicate key '{}' in the header", k); }

  bool scalar(Json v) {
    if (depth_ == 0) src_.fail("the header is JSON {}, not an object", v.type_name());
    place(std::move(v));
    return true;
  }
  bool open(Json v) {
    if (depth_ + static_cast<int>(stack_.size()) == kMaxNesting)
      src_.fail("header JSON nests deeper than {} levels", kMaxNesting);
    if (depth_ == 0) {  // the top level
      if (!v.is_object()) src_.fail("the header is JSON {}, not an object", v.type_name());
      depth_ = 1;
    } else if (stack_.empty() && depth_ == 1 && v.is_object()) {  // an entry, or the metadata
      depth_ = 2;
      in_metadata_ = name_ == kMetadataKey;
      fields_ = {};
      others_.clear();
    } else if (stack_.empty() && depth_ == 2 && !in_metadata_ && v.is_array() &&
               (field_ == Field::Shape || field_ == Field::Offsets)) {
      depth_ = 3;
      array_.clear();
    } else {
      stack_.push_back(place(std::move(v)));
    }
    return true;
  }
  bool close() {
    if (!stack_.empty()) {
      stack_.pop_back();
      if (stack_.empty()) deliver();
    } else if (--depth_ == 2) {  // a "shape" or "data_offsets" array of indices
      std::swap(field_ == Field::Shape ? shape_ : offsets_, array_);  // no allocation per entry
    } else if (depth_ == 1) {
      if (!std::exchange(in_metadata_, false)) finish_entry();
    }
    return true;
  }
  // Stores `v`, a value outside the expected form, as JSON where the parser
  // stands; hands it on when it is complete. Returns it.
  Json* place(Json v) {
    if (!stack_.empty()) {
      Json& parent = *stack_.back();
      if (parent.is_object()) return &(parent[json_key_] = std::move(v));
      parent.push_back(std::move(v));
      return &parent.back();
    }
    if (depth_ == 3) {  // a "shape" or "data_offsets" array holding more than indices
      built_ = Json(array_);
      built_.push_back(std::move(v));
      depth_ = 2;
      stack_.push_back(&built_);
      return &built_.back();
    }
    built_ = std::move(v);
    if (!built_.is_structured()) deliver();
    return &built_;
  }
  // Hands a value built as JSON to the place it belongs to.
  void deliver() {
    if (depth_ == 1) {  // a member that is not an object
      if (name_ == kMetadataKey) bad_metadata(src_, built_);
      parse_entry(src_, name_, built_, header_.sizes);  // raises
      return;
    }
    if (in_metadata_) src_.fail("__metadata__ entry '{}' is {}, not a string", key_, brief(built_));
    if (field_ != Field::Other) fields_[static_cast<size_t>(field_)] = std::optional<Json>(std::move(built_));
  }
  // Checks the entry just read and records it.
  void finish_entry() {
    const bool plain = std::all_of(fields_.begin(), fields_.end(),
                                   [](const FieldValue& f) { return f.has_value() && !f->has_value(); });
    if (plain) {
      header_.entries.push_back(make_entry(src_, name_, dtype_, shape_, offsets_, header_.sizes));
    } else {  // a field missing or of another form: checked as JSON, for the precise error
      Json entry = Json::object();
      const Json plain_values[] = {Json(dtype_), Json(shape_), Json(offsets_)};
      const char* field_names[] = {"dtype", "shape", "data_offsets"};
      for (size_t i = 0; i < 3; ++i)
        if (fields_[i]) entry[field_names[i]] = fields_[i]->has_value() ? **fields_[i] : plain_values[i];
      header_.entries.push_back(parse_entry(src_, name_, entry, header_.sizes));
    }
    names_.add_last();
  }

  const Source& src_;
  Header header_;
  // Where the parser stands, outside values built as JSON: 0 before the header,
  // 1 in the top object, 2 in an entry or the metadata, 3 in an array of indices.
  int depth_ = 0;
  bool in_metadata_ = false, seen_metadata_ = false;
  NameIndex names_;
  std::string name_, key_;  // the member being read; the metadata key
  // The entry being read.
  Field field_ = Field::Other;
  std::array<FieldValue, 3> fields_;  // dtype, shape, data_offsets
  std::vector<std::string> others_;   // names of its other members
  std::string dtype_;
  std::vector<uint64_t> array_, shape_, offsets_;
  // A value built as JSON: its root, the open arrays and objects in it, the last key.
  Json built_;
  std::vector<Json*> stack_;
  std::string json_key_;
};

}  // namespace

std::string_view code_of(ScalarType t) {
  for (const auto& c : kDtypeCodes)
    if (c.type == t) return c.code;
  return {};
}

ScalarType dtype_of_code(std::string_view code) {
  for (const auto& c : kDtypeCodes)
    if (c.code == code) return c.type;
  return ScalarType::Undefined;
}

Header read_header(const Source& src, std::string_view text) {
  const size_t end = json_length(src, text);
  HeaderReader reader(src);
  try {
    Json::sax_parse(text.data(), text.data() + end, &reader);
  } catch (const Json::exception& e) {
    src.fail("malformed JSON header: {}", e.what());
  }
  return reader.take();
}

}  // namespace mixt::io::safetensors_detail
