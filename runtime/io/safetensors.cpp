#include <mixt/runtime/io/safetensors.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <deque>
#include <system_error>
#include <vector>

#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include <mixt/runtime/check.h>
#include <mixt/runtime/checked.h>
#include <mixt/runtime/io/atomic_file.h>
#include <mixt/runtime/io/safetensors_header.h>
#include <mixt/runtime/tensor.h>

namespace mixt::io {
namespace {

using safetensors_detail::Entry;
using safetensors_detail::kMetadataKey;
using safetensors_detail::Source;

static_assert(std::endian::native == std::endian::little, "safetensors data is little-endian");

using Json = nlohmann::json;
constexpr const char* kSaveOp = "save_safetensors";

// ---- writing ----

// The safetensors code of `t`; raises for dtypes the format has no code for.
std::string_view code(ScalarType t) {
  const std::string_view c = safetensors_detail::code_of(t);
  MIXT_CHECK(!c.empty(), kSaveOp, "dtype {} has no safetensors code", t);
  return c;
}

// `s` as a JSON string literal; raises mixt::Error for invalid UTF-8.
std::string json_string(const std::string& s, std::string_view what) {
  if (std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; }))
    return '"' + s + '"';  // printable ASCII needs no escapes
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

class MemorySource final : public Source {
 public:
  MemorySource(std::string_view bytes, std::string_view name)
      : Source("from_safetensors_bytes", std::string(name)), bytes_(bytes) {}
  uint64_t size() const override { return bytes_.size(); }
  void read(uint64_t offset, uint64_t n, void* dst) const override {
    if (n) std::memcpy(dst, bytes_.data() + offset, n);
  }
  std::string_view view(uint64_t offset, uint64_t n, std::string&) const override { return bytes_.substr(offset, n); }

 private:
  std::string_view bytes_;
};

// What kind of file `mode` describes, for errors.
std::string_view file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a plain file";
}

class FileSource final : public Source {
 public:
  // Note [Loading regular files only]: the path is looked at (stat) before it is
  // opened, and anything but a regular file is refused: opening a FIFO for reading
  // waits for a writer, forever if none comes, and opening a device can act on it.
  // The open itself is non-blocking, and what was opened is checked again with
  // fstat, since the path may name something else by then.
  explicit FileSource(const std::string& path) : Source("load_safetensors", "'" + path + "'") {
    struct stat st;
    if (::stat(path.c_str(), &st) != 0) fail("cannot open: {}", std::generic_category().message(errno));
    if (!S_ISREG(st.st_mode)) fail("not a regular file ({})", file_kind(st.st_mode));
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd_ < 0) fail("cannot open: {}", std::generic_category().message(errno));
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      fail("not a regular file ({})", file_kind(st.st_mode));
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~FileSource() override { ::close(fd_); }
  FileSource(const FileSource&) = delete;
  FileSource& operator=(const FileSource&) = delete;
  uint64_t size() const override { return size_; }
  // Small reads are served from a window of the file read ahead in one call (a
  // file of many small tensors takes one read per window, not one per tensor).
  void read(uint64_t offset, uint64_t n, void* dst) const override {
    if (n >= kDirectRead) return read_direct(offset, n, dst);
    if (offset < window_at_ || offset + n > window_at_ + window_.size()) {
      window_.resize(std::min(kWindow, size_ - offset));
      read_direct(offset, window_.size(), window_.data());
      window_at_ = offset;
    }
    if (n) std::memcpy(dst, window_.data() + (offset - window_at_), n);
  }

 private:
  static constexpr uint64_t kDirectRead = uint64_t{1} << 16, kWindow = uint64_t{1} << 22;

  void read_direct(uint64_t offset, uint64_t n, void* dst) const {
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

  int fd_ = -1;
  uint64_t size_ = 0;
  mutable std::string window_;
  mutable uint64_t window_at_ = 0;
};

// Checks that the data regions tile [0, data_size) with no gap or overlap.
void check_regions(const Source& src, const std::deque<Entry>& all, uint64_t data_size) {
  std::vector<const Entry*> entries;
  entries.reserve(all.size());
  for (const Entry& e : all) entries.push_back(&e);
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
Tensor read_tensor(const Source& src, const Entry& e, const Shape& shape, uint64_t data_start) {
  Tensor t = make_empty(shape, e.dtype, Device::cpu());
  src.read(checked_add(data_start, e.begin, src.op()), e.end - e.begin, t.data_ptr());
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
  std::string buffer;
  safetensors_detail::Header header = safetensors_detail::read_header(src, src.view(8, n, buffer));
  check_regions(src, header.entries, src.size() - 8 - n);
  StateDict dict;
  dict.metadata = std::move(header.metadata);
  dict.tensors.reserve(header.entries.size());
  for (Entry& e : header.entries) {
    Tensor t = read_tensor(src, e, header.shape_of(e), 8 + n);
    dict.tensors.emplace_back(std::move(e.name), device.is_cpu() ? t : t.to(device));
  }
  return dict;
}

// The header, and the host copies whose bytes follow it: what a file holds.
struct Layout {
  std::string prefix_and_header;  // the 8-byte length and the padded JSON
  std::vector<Tensor> host;
  uint64_t data_bytes = 0;
};

Layout layout_of(const StateDict& dict) {
  Layout out;
  std::string header = "{";
  if (!dict.metadata.empty()) {
    header += fmt::format("\"{}\":{{", kMetadataKey);
    for (const auto& [k, v] : dict.metadata)
      header += fmt::format("{}:{},", json_string(k, "metadata key"), json_string(v, "metadata value of " + k));
    header.back() = '}';
    header += ',';
  }
  for (size_t i = 0; i < dict.tensors.size(); ++i) {
    const auto& [name, t] = dict.tensors[i];
    MIXT_CHECK(name != kMetadataKey, kSaveOp, "a tensor may not be named {}", kMetadataKey);
    MIXT_CHECK(dict.tensors.index_of(name) == i, kSaveOp, "duplicate tensor name '{}'", name);
    MIXT_CHECK(t.defined(), kSaveOp, "tensor '{}' is undefined", name);
    const Tensor& h = out.host.emplace_back(t.detach().cpu().contiguous());
    const uint64_t begin = out.data_bytes;
    out.data_bytes = checked_add(begin, static_cast<uint64_t>(h.nbytes()), kSaveOp);
    header += fmt::format("{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{},{}]}},",
                          json_string(name, "tensor name"), code(h.dtype()), fmt::join(h.sizes(), ","), begin,
                          out.data_bytes);
  }
  if (header.size() > 1) header.pop_back();  // the last ','
  header += '}';
  header.append((8 - header.size() % 8) % 8, ' ');  // keep the data 8-byte aligned
  MIXT_CHECK(header.size() <= kMaxSafetensorsHeader, kSaveOp, "the header ({} bytes) exceeds the {}-byte limit",
             header.size(), kMaxSafetensorsHeader);
  append_u64(out.prefix_and_header, header.size());
  out.prefix_and_header += header;
  return out;
}

// The bytes of a contiguous host tensor.
std::string_view bytes_of(const Tensor& h) {
  return {static_cast<const char*>(h.data_ptr()), static_cast<size_t>(h.nbytes())};
}

}  // namespace

std::string to_safetensors_bytes(const StateDict& dict) {
  const Layout layout = layout_of(dict);
  std::string out;
  out.reserve(checked_add<uint64_t>(layout.prefix_and_header.size(), layout.data_bytes, kSaveOp));
  out += layout.prefix_and_header;
  for (const Tensor& h : layout.host) out += bytes_of(h);
  return out;
}

void save_safetensors(const std::string& path, const StateDict& dict) {
  const Layout layout = layout_of(dict);
  std::vector<std::string_view> pieces{layout.prefix_and_header};
  for (const Tensor& h : layout.host) pieces.push_back(bytes_of(h));
  write_file_atomic(path, pieces);  // the tensors' own memory: no joined copy
}

StateDict load_safetensors(const std::string& path, Device device) { return load(FileSource(path), device); }

StateDict from_safetensors_bytes(std::string_view bytes, Device device, std::string_view source) {
  return load(MemorySource(bytes, source), device);
}

}  // namespace mixt::io
