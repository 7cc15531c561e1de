#include <mixt/runtime/io/safetensors.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <system_error>
#include <vector>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <mixt/runtime/check.h>
#include <mixt/runtime/io/atomic_file.h>
#include <mixt/runtime/tensor.h>

namespace mixt::io {
namespace {

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

using Json = nlohmann::json;
constexpr const char* kSaveOp = "save_safetensors";
constexpr const char* kMetadataKey = "__metadata__";
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

std::string_view code_of(ScalarType t) {
  for (const auto& c : kDtypeCodes)
    if (c.type == t) return c.code;
  MIXT_FAIL(kSaveOp, "dtype {} has no safetensors code", t);
}

ScalarType dtype_of_code(std::string_view code) {
  for (const auto& c : kDtypeCodes)
    if (c.code == code) return c.type;
  return ScalarType::Undefined;
}

// ---- writing ----

// `s` as a JSON string literal; raises mixt::Error for invalid UTF-8.
std::string json_string(const std::string& s, std::string_view what) {
  try {
    return Json(s).dump();
  } catch (const Json::exception& e) {
    MIXT_FAIL(kSaveOp, "{} is not valid UTF-8: {}", what, e.what());
  }
}

void append_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

// ---- reading ----

// Where the bytes of a file come from, and how its errors are named.
class Source {
 public:
  Source(std::string op, std::string name) : op_(std::move(op)), name_(std::move(name)) {}
  virtual ~Source() = default;
  // Total length in bytes.
  virtual uint64_t size() const = 0;
  // Copies [offset, offset + n), which lies inside size(), to `dst`.
  virtual void read(uint64_t offset, uint64_t n, void* dst) const = 0;
  // Raises mixt::Error naming the op and the source.
  template <class... A>
  [[noreturn]] void fail(fmt::format_string<A...> f, A&&... a) const {
    throw Error(op_, fmt::format("{}: {}", name_, fmt::format(f, std::forward<A>(a)...)));
  }

 private:
  std::string op_, name_;
};

class MemorySource final : public Source {
 public:
  MemorySource(std::string_view bytes, std::string_view name)
      : Source("from_safetensors_bytes", std::string(name)), bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  void read(uint64_t offset, uint64_t n, void* dst) const override {
    if (n) std::memcpy(dst, bytes_.data() + offset, n);
  }

 private:
  std::string_view bytes_;
};

class FileSource final : public Source {
 public:
  explicit FileSource(const std::string& path) : Source("load_safetensors", "'" + path + "'") {
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd_ < 0) fail("cannot open: {}", std::generic_category().message(errno));
    struct stat st;
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      fail("not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  uint64_t size() const override { return size_; }
  void read(uint64_t offset, uint64_t n, void* dst) const override {
    auto* p = static_cast<char*>(dst);
    while (n > 0) {
      const ssize_t got = ::pread(fd_, p, std::min<uint64_t>(n, uint64_t{1} << 30), static_cast<off_t>(offset));
      if (got < 0 && errno == EINTR) continue;
      if (got <= 0)
        fail("read failed at byte {}: {}", offset, got < 0 ? std::generic_category().message(errno) : "file shrank");
      p += got;
      offset += static_cast<uint64_t>(got);
      n -= static_cast<uint64_t>(got);
    }
  }

 private:
  int fd_ = -1;
  uint64_t size_ = 0;
};

// A short rendering of a JSON value for error messages.
std::string brief(const Json& v) {
  std::string s = v.dump(-1, ' ', true);
  return s.size() > 40 ? s.substr(0, 37) + "..." : s;
}

// Deepest nesting of arrays and objects in `text` (a bound checked before parsing,
// so that a hostile header cannot make the parser build a huge tree).
int max_nesting(std::string_view text) {
  int depth = 0, deepest = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return deepest;
}

// The parsed header and its top-level keys in file order.
struct Header {
  Json json;
  std::vector<std::string> keys;
};

// Parses the JSON header, refusing duplicate keys at any level.
Header parse_header(const Source& src, const std::string& text) {
  if (max_nesting(text) > kMaxNesting) src.fail("header JSON nests deeper than {} levels", kMaxNesting);
  Header h;
  std::vector<std::set<std::string>> open_objects;
  std::string duplicate;
  auto on_event = [&](int, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) open_objects.emplace_back();
    if (event == Json::parse_event_t::object_end) open_objects.pop_back();
    if (event == Json::parse_event_t::key) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second && duplicate.empty()) duplicate = key;
      if (open_objects.size() == 1) h.keys.push_back(key);
    }
    return true;
  };
  try {
    h.json = Json::parse(text, on_event);
  } catch (const Json::exception& e) {
    src.fail("malformed JSON header: {}", e.what());
  }
  if (!h.json.is_object()) src.fail("the header is JSON {}, not an object", h.json.type_name());
  if (!duplicate.empty()) src.fail("duplicate key '{}' in the header", duplicate);
  return h;
}

// One tensor described by the header.
struct Entry {
  std::string name;
  ScalarType dtype;
  Shape shape;
  uint64_t begin, end;
};

// A non-negative integer field of entry `name`.
uint64_t as_index(const Source& src, const Json& v, const std::string& name, std::string_view field) {
  if (!v.is_number_unsigned()) src.fail("tensor '{}': {} holds {}, not a non-negative integer", name, field, brief(v));
  return v.get<uint64_t>();
}

// The member `field` of entry `name`, which must have JSON type `type`.
const Json& member(const Source& src, const Json& obj, const std::string& name, const char* field, Json::value_t type) {
  const auto it = obj.find(field);
  if (it == obj.end()) src.fail("tensor '{}' has no \"{}\"", name, field);
  if (it->type() != type)
    src.fail("tensor '{}': \"{}\" is {}, not {}", name, field, brief(*it), Json(type).type_name());
  return *it;
}

Entry parse_entry(const Source& src, const std::string& name, const Json& v) {
  if (!v.is_object()) src.fail("tensor '{}' is {}, not an object", name, brief(v));
  Entry e{name, ScalarType::Undefined, {}, 0, 0};
  const auto& code = member(src, v, name, "dtype", Json::value_t::string).get_ref<const std::string&>();
  e.dtype = dtype_of_code(code);
  if (e.dtype == ScalarType::Undefined) src.fail("tensor '{}': unknown or unsupported dtype \"{}\"", name, code);
  const Json& shape = member(src, v, name, "shape", Json::value_t::array);
  if (shape.size() > static_cast<size_t>(kMaxDims))
    src.fail("tensor '{}' has {} dimensions (at most {} supported)", name, shape.size(), kMaxDims);
  int64_t extent = 1;  // product of the non-zero sizes, kept within int64
  for (const Json& d : shape) {
    const uint64_t n = as_index(src, d, name, "shape");
    if (n > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) ||
        __builtin_mul_overflow(extent, std::max<int64_t>(static_cast<int64_t>(n), 1), &extent))
      src.fail("tensor '{}': shape {} is too large", name, brief(shape));
    e.shape.push_back(static_cast<int64_t>(n));
  }
  const Json& offsets = member(src, v, name, "data_offsets", Json::value_t::array);
  if (offsets.size() != 2) src.fail("tensor '{}': data_offsets {} is not [begin, end]", name, brief(offsets));
  e.begin = as_index(src, offsets[0], name, "data_offsets");
  e.end = as_index(src, offsets[1], name, "data_offsets");
  if (e.begin > e.end) src.fail("tensor '{}': data_offsets begin {} > end {}", name, e.begin, e.end);
  const uint64_t nbytes = static_cast<uint64_t>(e.shape.numel()) * static_cast<uint64_t>(element_size(e.dtype));
  if (e.end - e.begin != nbytes)
    src.fail("tensor '{}': data_offsets [{}, {}] hold {} bytes, but {} {} needs {}", name, e.begin, e.end,
             e.end - e.begin, e.dtype, e.shape, nbytes);
  return e;
}

std::map<std::string, std::string> parse_metadata(const Source& src, const Json& v) {
  if (!v.is_object()) src.fail("__metadata__ is {}, not an object", brief(v));
  std::map<std::string, std::string> out;
  for (const auto& [k, s] : v.items()) {
    if (!s.is_string()) src.fail("__metadata__ entry '{}' is {}, not a string", k, brief(s));
    out.emplace(k, s.get<std::string>());
  }
  return out;
}

// Checks that the data regions tile [0, data_size) with no gap or overlap.
void check_regions(const Source& src, std::vector<const Entry*> entries, uint64_t data_size) {
  std::sort(entries.begin(), entries.end(),
            [](const Entry* a, const Entry* b) { return std::tie(a->begin, a->end) < std::tie(b->begin, b->end); });
  uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry* e : entries) {
    if (e->end > data_size)
      src.fail("tensor '{}': data_offsets [{}, {}] run past the {}-byte data buffer", e->name, e->begin, e->end,
               data_size);
    if (e->begin < covered) src.fail("tensors '{}' and '{}' have overlapping data regions", previous->name, e->name);
    if (e->begin > covered) src.fail("gap in the data buffer: bytes [{}, {}) belong to no tensor", covered, e->begin);
    covered = e->end;
    previous = e;
  }
  if (covered != data_size) src.fail("bytes [{}, {}) of the data buffer belong to no tensor", covered, data_size);
}

// Reads the data of `e` into a new host tensor.
Tensor read_tensor(const Source& src, const Entry& e, uint64_t data_start) {
  Tensor t = make_empty(e.shape, e.dtype, Device::cpu());
  src.read(data_start + e.begin, e.end - e.begin, t.data_ptr());
  if (e.dtype == kBool) {
    const auto* b = static_cast<const uint8_t*>(t.data_ptr());
    const auto bad = std::find_if(b, b + t.numel(), [](uint8_t x) { return x > 1; });
    if (bad != b + t.numel()) src.fail("BOOL tensor '{}' holds the byte {} (not 0 or 1)", e.name, *bad);
  }
  return t;
}

StateDict load(const Source& src, Device device) {
  if (src.size() < 8) src.fail("{} bytes: too short for the 8-byte header length", src.size());
  uint8_t prefix[8];
  src.read(0, 8, prefix);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | prefix[i];
  if (n > kMaxSafetensorsHeader) src.fail("header length {} exceeds the limit of {} bytes", n, kMaxSafetensorsHeader);
  if (n > src.size() - 8) src.fail("header length {} runs past the end of the {}-byte file", n, src.size());
  std::string text(n, '\0');
  src.read(8, n, text.data());
  const Header header = parse_header(src, text);

  StateDict dict;
  std::vector<Entry> entries;
  for (const std::string& key : header.keys) {
    const Json& v = header.json.at(key);
    if (key == kMetadataKey)
      dict.metadata = parse_metadata(src, v);
    else
      entries.push_back(parse_entry(src, key, v));
  }
  std::vector<const Entry*> order;
  for (const Entry& e : entries) order.push_back(&e);
  check_regions(src, order, src.size() - 8 - n);
  for (const Entry& e : entries) {
    Tensor t = read_tensor(src, e, 8 + n);
    dict.tensors.emplace_back(e.name, device.is_cpu() ? t : t.to(device));
  }
  return dict;
}

}  // namespace

std::string to_safetensors_bytes(const StateDict& dict) {
  std::vector<Tensor> host;
  std::set<std::string_view> names;
  std::string header = "{";
  if (!dict.metadata.empty()) {
    header += fmt::format("\"{}\":{{", kMetadataKey);
    for (const auto& [k, v] : dict.metadata)
      header += fmt::format("{}:{},", json_string(k, "metadata key"), json_string(v, "metadata value of " + k));
    header.back() = '}';
    header += ',';
  }
  uint64_t offset = 0;
  for (const auto& [name, t] : dict.tensors) {
    MIXT_CHECK(name != kMetadataKey, kSaveOp, "a tensor may not be named {}", kMetadataKey);
    MIXT_CHECK(names.insert(name).second, kSaveOp, "duplicate tensor name '{}'", name);
    MIXT_CHECK(t.defined(), kSaveOp, "tensor '{}' is undefined", name);
    const Tensor& h = host.emplace_back(t.detach().cpu().contiguous());
    const uint64_t nbytes = static_cast<uint64_t>(h.nbytes());
    header += fmt::format("{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}},",
                          json_string(name, "tensor name"), code_of(h.dtype()), fmt::join(h.sizes(), ","), offset,
                          offset + nbytes);
    offset += nbytes;
  }
  if (header.size() > 1) header.pop_back();  // the last ','
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');  // keep the data 8-byte aligned
  MIXT_CHECK(header.size() <= kMaxSafetensorsHeader, kSaveOp, "the header ({} bytes) exceeds the {}-byte limit",
             header.size(), kMaxSafetensorsHeader);

  std::string out;
  out.reserve(8 + header.size() + offset);
  append_u64(out, header.size());
  out += header;
  for (const Tensor& h : host) out.append(static_cast<const char*>(h.data_ptr()), static_cast<size_t>(h.nbytes()));
  return out;
}

void save_safetensors(const std::string& path, const StateDict& dict) {
  write_file_atomic(path, to_safetensors_bytes(dict));
}

StateDict load_safetensors(const std::string& path, Device device) { return load(FileSource(path), device); }

StateDict from_safetensors_bytes(std::string_view bytes, Device device, std::string_view source) {
  return load(MemorySource(bytes, source), device);
}

}  // namespace mixt::io
