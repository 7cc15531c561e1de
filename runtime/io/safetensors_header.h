// The safetensors loader's header reader (internal to runtime/io): the JSON
// header checked and turned into tensor entries in one linear pass.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <span>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <mixt/runtime/dtype.h>
#include <mixt/runtime/error.h>
#include <mixt/runtime/shape.h>

namespace mixt::io::safetensors_detail {

constexpr std::string_view kMetadataKey = "__metadata__";

// The safetensors code of `t` ("" when it has none).
std::string_view code_of(ScalarType t);
// The dtype a safetensors code names (Undefined when none).
ScalarType dtype_of_code(std::string_view code);

// Where the bytes of a file come from, and how its errors are named.
class Source {
 public:
  Source(std::string op, std::string name) : op_(std::move(op)), name_(std::move(name)) {}
  virtual ~Source() = default;
  // Total length in bytes.
  virtual uint64_t size() const = 0;
  // Copies [offset, offset + n), which lies inside size(), to `dst`.
  virtual void read(uint64_t offset, uint64_t n, void* dst) const = 0;
  // The bytes [offset, offset + n), which lie inside size(): read into `buffer`,
  // or a view of the source's own memory.
  virtual std::string_view view(uint64_t offset, uint64_t n, std::string& buffer) const {
    buffer.resize(n);
    read(offset, n, buffer.data());
    return buffer;
  }
  // Raises mixt::Error naming the op and the source.
  template <class... A>
  [[noreturn]] void fail(fmt::format_string<A...> f, A&&... a) const {
    throw Error(op_, fmt::format("{}: {}", name_, fmt::format(f, std::forward<A>(a)...)));
  }
  // The op the source's errors name.
  const char* op() const { return op_.c_str(); }

 private:
  std::string op_, name_;
};

// One tensor described by the header: its dtype and shape are valid, and
// data_offsets [begin, end) span exactly its bytes. (Its sizes are kept in
// Header::sizes, which keeps entries small: a header may hold millions.)
struct Entry {
  std::string name;
  uint64_t begin, end;
  uint32_t sizes_at;
  uint8_t dim;
  ScalarType dtype;
};

// The entries in file order (a deque: no moves as it grows), their sizes, and
// the metadata.
struct Header {
  std::deque<Entry> entries;
  std::vector<int64_t> sizes;
  std::map<std::string, std::string> metadata;

  // The shape of entry `e`.
  Shape shape_of(const Entry& e) const { return Shape(std::span<const int64_t>(sizes.data() + e.sizes_at, e.dim)); }
};

// Parses and checks the header text; raises mixt::Error through `src` for any
// defect. See Note [Header padding], Note [Linear header parsing] and Note
// [Safetensors sizes].
Header read_header(const Source& src, std::string_view text);

}  // namespace mixt::io::safetensors_detail
