// safetensors checkpoints: the exact byte layout, round trips of every dtype,
// files as other writers produce them, every validation error on crafted bytes,
// sizes that overflow, the header's padding, linear-time parsing, random-mutation
// fuzzing of the loader (bytes, and shapes and offsets at the integer
// boundaries), files that are not regular files, StateDict's name index, and
// atomic replacement of the file (more in test_atomic_file.cpp).
#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixt/mixt.h>
#include <mixt/runtime/io/atomic_file.h>
#include <mixt/runtime/io/safetensors.h>

#include "temp_dir.h"
#include "test_util.h"

using namespace mixt;
using namespace mixt::io;
using Catch::Contains;
using mixt::testing::error_of;
using mixt::testing::make;
using mixt::testing::read_file;
using mixt::testing::TempDir;
namespace fs = std::filesystem;

namespace {

// The 8-byte little-endian encoding of `n`, written out by hand.
std::string le64(uint64_t n) {
  std::string s;
  for (int i = 0; i < 8; ++i) s += static_cast<char>((n >> (8 * i)) & 0xff);
  return s;
}

// A file made of a header length, a header and a data buffer.
std::string file_of(const std::string& header, const std::string& data = "") {
  return le64(header.size()) + header + data;
}

template <class T>
std::string raw(const std::vector<T>& v) {
  return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
}

// The raw bytes of a contiguous host tensor.
std::string bytes_of(const Tensor& t) {
  Tensor c = t.contiguous();
  return std::string(static_cast<const char*>(c.data_ptr()), static_cast<size_t>(c.nbytes()));
}

// The mixt::Error message of loading `bytes` (must name the source).
std::string load_error(const std::string& bytes) {
  std::string msg = error_of([&] { from_safetensors_bytes(bytes); });
  CHECK_THAT(msg, Contains("from_safetensors_bytes") && Contains("<bytes>"));
  return msg;
}

// A state dict exercising several dtypes, a 0-dim and an empty tensor, and metadata.
StateDict sample_dict() {
  StateDict d;
  d.set("weight", make({0.5, -1.25, 2, 3.75, -4, 8}, kFloat32, {2, 3}));
  d.set("bias", make({1, -2, 3}, kBFloat16));
  d.set("step", scalar_tensor(int64_t{42}, mixt::testing::of(kInt64)));
  d.set("mask", mixt::testing::bools({1, 0, 1, 1}, {2, 2}));
  d.set("empty", zeros({0, 3}, mixt::testing::of(kFloat16)));
  d.metadata = {{"format", "pt"}, {"note", "mixt \"test\" é"}};
  return d;
}

void check_same(const StateDict& got, const StateDict& want) {
  REQUIRE(got.tensors.size() == want.tensors.size());
  for (size_t i = 0; i < want.tensors.size(); ++i) {
    const auto& [name, t] = want.tensors[i];
    INFO(name);
    CHECK(got.tensors[i].first == name);
    const Tensor& g = got.tensors[i].second;
    CHECK(g.dtype() == t.dtype());
    CHECK(g.sizes() == t.sizes());
    CHECK(g.is_cpu());
    CHECK(bytes_of(g) == bytes_of(t));
  }
  CHECK(got.metadata == want.metadata);
}

}  // namespace

TEST_CASE("safetensors bytes follow the format exactly", "[safetensors]") {
  StateDict d;
  d.set("a", from_vector<float>({1.0f, -2.0f}));
  d.set("b", from_vector<int32_t>({7}));
  d.metadata["format"] = "pt";
  const std::string json = R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                           R"("b":{"dtype":"I32","shape":[1],"data_offsets":[8,12]}})";
  const std::string padded = json + std::string((8 - json.size() % 8) % 8, ' ');
  const std::string data = std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0\x07\x00\x00\x00", 12);
  const std::string bytes = to_safetensors_bytes(d);
  CHECK(bytes == file_of(padded, data));
  CHECK((8 + padded.size()) % 8 == 0);

  // No metadata: no __metadata__ key; an empty dict is "{}" padded.
  d.metadata.clear();
  CHECK(to_safetensors_bytes(d).find("__metadata__") == std::string::npos);
  CHECK(to_safetensors_bytes(StateDict{}) == file_of("{}      "));
  CHECK(from_safetensors_bytes(file_of("{}")).tensors.empty());
}

TEST_CASE("safetensors round trip of every dtype", "[safetensors]") {
  StateDict d;
  for (ScalarType dt : mixt::testing::kAllDtypes) {
    Tensor t = dt == kBool ? mixt::testing::bools({1, 0, 0, 1, 1, 0}, {3, 2}) : make({0, 1, 2, 3, 4, 0.5}, dt, {3, 2});
    d.set(std::string(dtype_name(dt)), t);
  }
  const StateDict back = from_safetensors_bytes(to_safetensors_bytes(d));
  check_same(back, d);
  for (const auto& [name, t] : back.tensors) {
    INFO(name);
    CHECK(mixt::testing::values(t) == mixt::testing::values(d.find(name)->to(t.dtype())));
  }
  const StateDict sample = sample_dict();
  check_same(from_safetensors_bytes(to_safetensors_bytes(sample)), sample);
}

TEST_CASE("safetensors saves views and non-contiguous tensors as their values", "[safetensors]") {
  Tensor base = mixt::testing::iota({3, 4});
  StateDict d;
  d.set("t", base.t());                // [4, 3], strides [1, 4]
  d.set("col", base.select(1, 2));     // offset 2, stride 4
  d.set("row", base.narrow(0, 1, 1));  // offset 4
  const StateDict back = from_safetensors_bytes(to_safetensors_bytes(d));
  CHECK(back.find("t")->sizes() == Shape{4, 3});
  CHECK(mixt::testing::values(*back.find("t")) == std::vector<double>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
  CHECK(mixt::testing::values(*back.find("col")) == std::vector<double>{2, 6, 10});
  CHECK(mixt::testing::values(*back.find("row")) == std::vector<double>{4, 5, 6, 7});
  // Loaded tensors own fresh memory and carry no autograd state.
  Tensor p = make({1, 2}, kFloat32).requires_grad_();
  d.set("p", p);
  const Tensor loaded = *from_safetensors_bytes(to_safetensors_bytes(d)).find("p");
  CHECK_FALSE(loaded.requires_grad());
  CHECK_FALSE(loaded.shares_storage(p));
}

TEST_CASE("safetensors loads files laid out by other writers", "[safetensors]") {
  // Entries in an order unrelated to their data, spaces in the JSON, no padding,
  // F8 and BF16 codes, a zero-size tensor at the end of the buffer.
  const std::string header =
      R"({ "z" : {"dtype": "I64", "shape": [2], "data_offsets": [3, 19]},)"
      R"( "e": {"data_offsets": [19, 19], "shape": [0, 5], "dtype": "F64"},)"
      R"( "__metadata__": {"k": "v"},)"
      R"( "h": {"dtype": "BF16", "shape": [], "data_offsets": [1, 3]}, "f": {"dtype": "F8_E4M3", "shape": [1], )"
      R"("data_offsets": [0, 1], "extra": "ignored"}})";
  const std::string data = std::string("\x38", 1) + std::string("\xc0\x3f", 2) + raw<int64_t>({-5, 1LL << 40});
  const StateDict d = from_safetensors_bytes(file_of(header, data));
  REQUIRE(d.tensors.size() == 4);
  CHECK(d.tensors[0].first == "z");  // file order
  CHECK(d.tensors[3].first == "f");
  CHECK(d.find("z")->to_vector<int64_t>() == std::vector<int64_t>{-5, 1LL << 40});
  CHECK(d.find("e")->sizes() == Shape{0, 5});
  CHECK(d.find("e")->dtype() == kFloat64);
  CHECK(d.find("h")->dim() == 0);
  CHECK(d.find("h")->item<double>() == 1.5);  // bf16 0x3fc0
  CHECK(d.find("f")->dtype() == kFloat8_e4m3fn);
  CHECK(d.find("f")->item<double>() == 1.0);  // e4m3 0x38
  CHECK(d.metadata == std::map<std::string, std::string>{{"k", "v"}});
}

TEST_CASE("safetensors refuses what it cannot save", "[safetensors]") {
  StateDict d;
  d.tensors.emplace_back("x", Tensor());
  CHECK_THAT(error_of([&] { to_safetensors_bytes(d); }), Contains("save_safetensors") && Contains("'x' is undefined"));
  d.tensors = {{"a", zeros({1})}, {"a", zeros({2})}};
  CHECK_THAT(error_of([&] { to_safetensors_bytes(d); }), Contains("duplicate tensor name 'a'"));
  d.tensors = {{"__metadata__", zeros({1})}};
  CHECK_THAT(error_of([&] { to_safetensors_bytes(d); }), Contains("may not be named __metadata__"));
  d.tensors = {{"bad\xff", zeros({1})}};
  CHECK_THAT(error_of([&] { to_safetensors_bytes(d); }), Contains("tensor name is not valid UTF-8"));
  d.tensors.clear();
  d.metadata = {{"k", "\xc3"}};
  CHECK_THAT(error_of([&] { to_safetensors_bytes(d); }), Contains("metadata value of k is not valid UTF-8"));
}

TEST_CASE("safetensors rejects malformed bytes with a precise error", "[safetensors]") {
  const std::string f32x1 = raw<float>({1.0f});
  auto one = [&](const std::string& entry) { return file_of(R"({"a":)" + entry + "}", f32x1); };
  auto f32 = [&](const std::string& shape, const std::string& offsets) {
    return one(R"({"dtype":"F32","shape":)" + shape + R"(,"data_offsets":)" + offsets + "}");
  };
  const std::string two = R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32",)";
  const std::vector<std::pair<std::string, std::string>> cases = {
      // Length prefix and framing.
      {"", "0 bytes: too short"},
      {"1234567", "7 bytes: too short"},
      {le64(100) + "{}", "header length 100 runs past the end of the 10-byte file"},
      {le64(~uint64_t{0}) + "{}", "exceeds the limit of 100000000 bytes"},
      {le64(100'000'001) + "{}", "exceeds the limit"},
      // JSON structure.
      {file_of("[1, 2]"), "the header is JSON array, not an object"},
      {file_of(R"({"a":)"), "malformed JSON header"},
      {file_of("{\"\xff\":1}"), "malformed JSON header"},
      {file_of(R"({"a":3})"), "tensor 'a' is 3, not an object"},
      {file_of(R"({"a":{"shape":[[[1]]]}})"), "nests deeper than 3 levels"},
      {file_of(std::string(1 << 20, '[')), "the header is JSON array, not an object"},
      {file_of(R"({"a":)" + std::string(1 << 20, '[')), "nests deeper than 3 levels"},
      {file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{}})", f32x1), "duplicate key 'a'"},
      {one(R"({"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]})"), "duplicate key 'dtype'"},
      // Entry fields.
      {one(R"({"shape":[1],"data_offsets":[0,4]})"), "tensor 'a' has no \"dtype\""},
      {one(R"({"dtype":"F32","data_offsets":[0,4]})"), "tensor 'a' has no \"shape\""},
      {one(R"({"dtype":"F32","shape":[1]})"), "tensor 'a' has no \"data_offsets\""},
      {one(R"({"dtype":5,"shape":[1],"data_offsets":[0,4]})"), "\"dtype\" is 5, not string"},
      {f32("{}", "[0,4]"), "\"shape\" is {}, not array"},
      {f32("[1]", "\"0,4\""), "\"data_offsets\" is \"0,4\", not array"},
      {f32("[1]", "[0]"), "data_offsets [0] is not [begin, end]"},
      {one(R"({"dtype":"F33","shape":[1],"data_offsets":[0,4]})"), "unknown or unsupported dtype \"F33\""},
      {one(R"({"dtype":"I16","shape":[2],"data_offsets":[0,4]})"), "unknown or unsupported dtype \"I16\""},
      {f32("[-1]", "[0,4]"), "shape holds -1, not a non-negative integer"},
      {f32("[1.0]", "[0,4]"), "shape holds 1.0, not a non-negative integer"},
      {f32("[\"1\"]", "[0,4]"), "shape holds \"1\", not a non-negative integer"},
      {f32("[1,1,1,1,1,1,1,1,1]", "[0,4]"), "has 9 dimensions"},
      {f32("[4294967296,4294967296]", "[0,4]"), "is too large"},
      {f32("[0,18446744073709551615]", "[0,0]"), "is too large"},
      // Offsets and the regions they describe.
      {f32("[1]", "[0,-4]"), "data_offsets holds -4, not a non-negative integer"},
      {f32("[0]", "[4,0]"), "data_offsets begin 4 > end 0"},
      {f32("[1]", "[0,8]"), "hold 8 bytes, but float32 [1] needs 4"},
      {f32("[1]", "[4,8]"), "data_offsets [4, 8] run past the 4-byte data buffer"},
      {f32("[1]", "[18446744073709551612,18446744073709551615]"), "hold 3 bytes"},
      {file_of(two + R"("shape":[2],"data_offsets":[4,12]}})", raw<float>({1, 2, 3})),
       "tensors 'a' and 'b' have overlapping data regions"},
      {file_of(two + R"("shape":[0],"data_offsets":[4,4]}})", raw<float>({1, 2})), "overlapping"},
      {file_of(two + R"("shape":[1],"data_offsets":[12,16]}})", raw<float>({1, 2, 3, 4})),
       "gap in the data buffer: bytes [8, 12) belong to no tensor"},
      {file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", raw<float>({1, 2})),
       "gap in the data buffer: bytes [0, 4)"},
      {file_of(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", raw<float>({1, 2})),
       "bytes [4, 8) of the data buffer belong to no tensor"},
      {file_of("{}", "x"), "bytes [0, 1) of the data buffer belong to no tensor"},
      // Metadata and values.
      {file_of(R"({"__metadata__":{"k":1}})"), "__metadata__ entry 'k' is 1, not a string"},
      {file_of(R"({"__metadata__":"text"})"), "__metadata__ is \"text\", not an object"},
      {file_of(R"({"m":{"dtype":"BOOL","shape":[3],"data_offsets":[0,3]}})", std::string("\x01\x00\x02", 3)),
       "BOOL tensor 'm' holds the byte 2"},
  };
  for (const auto& [bytes, message] : cases) {
    INFO(message);
    CHECK_THAT(load_error(bytes), Contains(message));
  }
}

TEST_CASE("safetensors loader survives random mutations of a valid file", "[safetensors][fuzz]") {
  const std::string valid = to_safetensors_bytes(sample_dict());
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(valid[i]);
  const size_t data_start = 8 + header_len;
  REQUIRE(from_safetensors_bytes(valid).tensors.size() == 5);
  // MIXT_FUZZ_ITERATIONS and MIXT_FUZZ_SEED widen a one-off run (e.g. under the sanitizers).
  const char* env_iterations = std::getenv("MIXT_FUZZ_ITERATIONS");
  const char* env_seed = std::getenv("MIXT_FUZZ_SEED");
  const int iterations = env_iterations ? std::atoi(env_iterations) : 6000;
  std::mt19937_64 rng(env_seed ? std::strtoull(env_seed, nullptr, 10) : 20240611);
  auto pick = [&](uint64_t n) { return static_cast<size_t>(rng() % n); };
  const std::string json_chars = "{}[]\",:0123456789-.eE aF";
  int loaded = 0, refused = 0;
  for (int iter = 0; iter < iterations; ++iter) {
    std::string b = valid;
    switch (iter % 7) {
      case 0:  // flip a few bits anywhere
        for (int k = 0, n = 1 + static_cast<int>(pick(4)); k < n; ++k) b[pick(b.size())] ^= 1 << pick(8);
        break;
      case 1:  // truncate
        b.resize(pick(b.size()));
        break;
      case 2: {  // edit the header length
        const uint64_t len = iter % 14 == 2 ? rng() : header_len + pick(17) - 8;
        b.replace(0, 8, le64(len));
        break;
      }
      case 3:  // replace a header byte with a JSON-ish character
        b[8 + pick(header_len)] = json_chars[pick(json_chars.size())];
        break;
      case 4:  // delete or duplicate a header byte (the length no longer matches)
        if (rng() % 2)
          b.erase(8 + pick(header_len), 1);
        else
          b.insert(8 + pick(header_len), 1, b[8 + pick(header_len)]);
        break;
      case 5:  // rewrite some of the data buffer (loads unless a BOOL byte goes above 1)
        for (int k = 0, n = 1 + static_cast<int>(pick(8)); k < n; ++k)
          b[data_start + pick(b.size() - data_start)] = static_cast<char>(rng());
        break;
      default: {  // change a digit in the header, keeping the length prefix right
        const size_t at = 8 + pick(header_len);
        if (b[at] >= '0' && b[at] <= '9')
          b[at] = static_cast<char>('0' + pick(10));
        else
          b.append(pick(3), '\0');
      }
    }
    try {
      const StateDict d = from_safetensors_bytes(b);
      ++loaded;
      int64_t total = 0;
      for (const auto& [name, t] : d.tensors) total += t.nbytes();
      CHECK(static_cast<size_t>(total) <= b.size());
    } catch (const Error& e) {
      ++refused;
      CHECK_THAT(std::string(e.what()), Contains("<bytes>"));
    } catch (const std::exception& e) {
      FAIL("mutation " << iter << " raised a non-mixt exception: " << e.what());
    }
  }
  INFO("loaded " << loaded << ", refused " << refused);
  CHECK(loaded > iterations / 60);
  CHECK(refused > iterations / 6);
}

TEST_CASE("save_safetensors and load_safetensors use files", "[safetensors][file]") {
  TempDir dir;
  const std::string path = dir.file("model.safetensors");
  const StateDict d = sample_dict();
  save_safetensors(path, d);
  CHECK(read_file(path) == to_safetensors_bytes(d));
  check_same(load_safetensors(path), d);
  CHECK(dir.entries() == std::vector<std::string>{"model.safetensors"});

  const std::string missing = dir.file("missing.safetensors");
  CHECK_THAT(error_of([&] { load_safetensors(missing); }),
             Contains("load_safetensors") && Contains(missing) && Contains("cannot open"));
  CHECK_THAT(error_of([&] { load_safetensors(dir.path.string()); }), Contains("not a regular file"));
  std::ofstream(dir.file("short.bin")) << "abc";
  CHECK_THAT(error_of([&] { load_safetensors(dir.file("short.bin")); }),
             Contains("short.bin") && Contains("3 bytes: too short"));
  if (!cuda::is_available()) CHECK_THROWS_AS(load_safetensors(path, Device::cuda(0)), Error);
}

namespace {

// Test hooks: a write that stores half of what it is given and then fails as a full disk
// would, and an fsync and a rename that fail.
ssize_t half_then_enospc(int fd, const void* buf, size_t n) {
  static bool wrote_half = false;
  if (!wrote_half) {
    wrote_half = true;
    return ::write(fd, buf, n / 2);
  }
  wrote_half = false;
  errno = ENOSPC;
  return -1;
}
int failing_fsync(int) {
  errno = EIO;
  return -1;
}
int failing_rename(const char*, const char*) {
  errno = EXDEV;
  return -1;
}
ssize_t one_byte_writes(int fd, const void* buf, size_t n) { return ::write(fd, buf, n > 0 ? 1 : 0); }

// Restores the real system calls when a test section ends.
struct HookReset {
  ~HookReset() { reset_atomic_file_hooks(); }
};

}  // namespace

TEST_CASE("atomic writes leave the old file intact when a step fails", "[safetensors][atomic]") {
  TempDir dir;
  const std::string path = dir.file("ckpt.safetensors");
  StateDict v1 = sample_dict();
  save_safetensors(path, v1);
  const std::string before = read_file(path);
  StateDict v2 = v1;
  v2.set("weight", zeros({64, 64}));
  HookReset reset;

  SECTION("a write failing half-way") {
    atomic_file_hooks().write = half_then_enospc;
    CHECK_THAT(error_of([&] { save_safetensors(path, v2); }), Contains("write_file_atomic") && Contains(path) &&
                                                                  Contains("write failed") &&
                                                                  Contains(std::strerror(ENOSPC)));
  }
  SECTION("fsync failing") {
    atomic_file_hooks().fsync = failing_fsync;
    CHECK_THAT(error_of([&] { save_safetensors(path, v2); }), Contains("fsync failed"));
  }
  SECTION("rename failing") {
    atomic_file_hooks().rename = failing_rename;
    CHECK_THAT(error_of([&] { save_safetensors(path, v2); }), Contains("rename failed"));
  }
  CHECK(read_file(path) == before);
  check_same(load_safetensors(path), v1);
  CHECK(dir.entries() == std::vector<std::string>{"ckpt.safetensors"});

  reset_atomic_file_hooks();
  save_safetensors(path, v2);
  check_same(load_safetensors(path), v2);
}

TEST_CASE("write_file_atomic replaces files and reports unusable targets", "[safetensors][atomic]") {
  TempDir dir;
  const std::string path = dir.file("data.bin");
  write_file_atomic(path, "first");
  CHECK(read_file(path) == "first");
  ::chmod(path.c_str(), 0640);
  write_file_atomic(path, std::string_view("sec\0nd", 6));
  CHECK(read_file(path) == std::string("sec\0nd", 6));
  struct stat st;
  REQUIRE(::stat(path.c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0640);  // the replaced file's permissions are kept
  write_file_atomic(path, "");
  CHECK(read_file(path).empty());
  {
    HookReset reset;  // short writes are retried until everything is written
    atomic_file_hooks().write = one_byte_writes;
    write_file_atomic(path, "patient");
  }
  CHECK(read_file(path) == "patient");

  const std::string nowhere = dir.file("no/such/dir/x.bin");
  CHECK_THAT(error_of([&] { write_file_atomic(nowhere, "x"); }),
             Contains("write_file_atomic") && Contains(nowhere) && Contains("creating a temporary file"));
  CHECK_THAT(error_of([&] { write_file_atomic("/proc/mixt_cannot_write_here", "x"); }),
             Contains("creating a temporary file"));
  fs::create_directory(dir.file("subdir"));
  CHECK_THAT(error_of([&] { write_file_atomic(dir.file("subdir"), "x"); }), Contains("rename failed"));
  CHECK_THAT(error_of([&] { write_file_atomic("", "x"); }), Contains("empty path"));
  std::vector<std::string> names = dir.entries();
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"data.bin", "subdir"});  // no temporaries behind
  CHECK(fs::is_empty(dir.file("subdir")));
}

TEST_CASE("safetensors refuses shapes whose byte count overflows, naming the file, tensor and sizes",
          "[safetensors]") {
  // Each shape times its element size wraps in 64-bit arithmetic (to the data_offsets
  // length where one is given), or its element count does.
  struct Case {
    std::string dtype, shape, offsets, data, sizes;
  };
  const std::vector<Case> cases = {
      {"F32", "[4611686018427387905]", "[0,4]", raw<float>({1}), "float32 [4611686018427387905]"},  // 4 * (2^62 + 1)
      {"I64", "[2305843009213693952]", "[0,0]", "", "int64 [2305843009213693952]"},                  // 8 * 2^61
      {"F64", "[2305843009213693952,2]", "[0,0]", "", "float64 [2305843009213693952, 2]"},           // 8 * 2^62
      {"BF16", "[9223372036854775807]", "[0,18446744073709551614]", "", "bfloat16 [9223372036854775807]"},
      {"U8", "[4294967296,4294967296,0]", "[0,0]", "", "uint8 [4294967296, 4294967296, 0]"},
      {"F16", "[3,6148914691236517206]", "[0,4]", raw<float>({1}), "float16 [3, 6148914691236517206]"},
  };
  TempDir dir;
  for (const Case& c : cases) {
    INFO(c.sizes);
    const std::string bytes =
        file_of(R"({"big":{"dtype":")" + c.dtype + R"(","shape":)" + c.shape + R"(,"data_offsets":)" + c.offsets + "}}",
                c.data);
    CHECK_THAT(load_error(bytes), Contains("tensor 'big'") && Contains(c.sizes) && Contains("is too large"));
    const std::string path = dir.file("big.safetensors");
    std::ofstream(path, std::ios::binary) << bytes;
    CHECK_THAT(error_of([&] { load_safetensors(path); }),
               Contains("load_safetensors") && Contains(path) && Contains("tensor 'big'") && Contains(c.sizes));
  }
}

TEST_CASE("safetensors headers are JSON padded with spaces only", "[safetensors]") {
  const std::string entry = R"("a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]})";
  const std::string one = raw<float>({2.5f});
  const std::vector<std::pair<std::string, std::string>> refused = {
      {file_of(std::string("{}\0garbage", 10)), "NUL byte at offset 2"},
      {file_of(std::string("{}\0\0\0\0\0\0", 8)), "NUL byte at offset 2"},
      {file_of("{" + entry + std::string("}\0   ", 5), one), "NUL byte at offset"},
      {file_of("\xEF\xBB\xBF{}"), "UTF-8 byte order mark"},
      {file_of("\xEF\xBB\xBF{" + entry + "}", one), "UTF-8 byte order mark"},
      {file_of(" {}"), "starts with whitespace"},
      {file_of("\n{}"), "starts with whitespace"},
      {file_of("{}\n"), "padded with byte 0x0a at offset 2"},
      {file_of("{}   \t   "), "padded with byte 0x09 at offset 5"},
      {file_of("{}\r"), "padded with byte 0x0d"},
      {file_of("{}  x  "), "malformed JSON header"},
  };
  for (const auto& [bytes, message] : refused) {
    INFO(message);
    CHECK_THAT(load_error(bytes), Contains(message));
  }
  // Spaces after the object, and any JSON whitespace inside it, are fine.
  CHECK(from_safetensors_bytes(file_of("{}")).tensors.empty());
  CHECK(from_safetensors_bytes(file_of("{}       ")).tensors.empty());
  const StateDict d = from_safetensors_bytes(file_of("{\n\t\"a\" :\r\n {\"dtype\":\"F32\", \"shape\":[ 1 ],\n"
                                                     "\"data_offsets\":[0,4]}\n}   ",
                                                     one));
  CHECK(d.find("a")->item<float>() == 2.5f);
}

namespace {

// Seconds `f` takes.
template <class F>
double seconds_of(F&& f) {
  const auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// A header of `count` zero-size float32 tensors t0, t1, ...
std::string zero_size_tensors(int count) {
  std::string h = "{";
  for (int i = 0; i < count; ++i)
    h.append("\"t").append(std::to_string(i)).append(R"(":{"dtype":"F32","shape":[0],"data_offsets":[0,0]},)");
  h.back() = '}';
  return h;
}

}  // namespace

TEST_CASE("safetensors header parsing takes linear time", "[safetensors][slow]") {
  // 50,000 members: a parser that is quadratic in the member count took about 20 s
  // (empty objects) and 30 s (zero-size tensors) on the development machine; a
  // linear one takes well under a second, even under the sanitizers.
  std::string h = "{";
  for (int i = 0; i < 50'000; ++i) h.append("\"").append(std::to_string(i)).append("\":{},");
  h.back() = '}';
  const std::string empties = file_of(h), tensors = file_of(zero_size_tensors(50'000));
  CHECK(seconds_of([&] { CHECK_THAT(load_error(empties), Contains("tensor '0' has no \"dtype\"")); }) < 4.0);
  StateDict d;
  CHECK(seconds_of([&] { d = from_safetensors_bytes(tensors); }) < 4.0);
  REQUIRE(d.tensors.size() == 50'000);
  CHECK(d.tensors[49'999].first == "t49999");
  CHECK(d.find("t12345")->sizes() == Shape{0});
}

TEST_CASE("load_safetensors refuses FIFOs, devices and directories without blocking", "[safetensors][file]") {
  TempDir dir;
  const std::string fifo = dir.file("pipe.safetensors");
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // Opening a FIFO for reading waits for a writer. Should the loader open it, this
  // thread lets the open return after 5 s, so the test fails instead of hanging.
  std::atomic<bool> done{false};
  std::thread unblock([&] {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!done && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
    while (!done) {
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_NONBLOCK);  // fails (ENXIO) until a reader waits
      if (fd >= 0) {
        ::close(fd);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::string message;
  const double seconds = seconds_of([&] { message = error_of([&] { load_safetensors(fifo); }); });
  done = true;
  unblock.join();
  CHECK(seconds < 2.0);
  CHECK_THAT(message, Contains(fifo) && Contains("not a regular file (a FIFO)"));

  CHECK_THAT(error_of([] { load_safetensors("/dev/null"); }), Contains("not a regular file (a character device)"));
  CHECK_THAT(error_of([&] { load_safetensors(dir.path.string()); }), Contains("not a regular file (a directory)"));
  // A link to a regular file is followed.
  save_safetensors(dir.file("real.safetensors"), sample_dict());
  fs::create_symlink("real.safetensors", dir.file("link.safetensors"));
  check_same(load_safetensors(dir.file("link.safetensors")), sample_dict());
}

TEST_CASE("safetensors loader refuses shapes and offsets at the integer boundaries", "[safetensors][fuzz]") {
  using Json = nlohmann::json;
  const std::string valid = to_safetensors_bytes(sample_dict());
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | static_cast<uint8_t>(valid[i]);
  const Json header = Json::parse(valid.substr(8, header_len));
  const std::string data = valid.substr(8 + header_len);
  std::vector<std::string> names;
  for (const auto& [name, v] : header.items())
    if (name != "__metadata__") names.push_back(name);
  const uint64_t p31 = 1ULL << 31, p32 = 1ULL << 32, p62 = 1ULL << 62, p63 = 1ULL << 63;
  const std::vector<uint64_t> bounds = {0,       1,       2,       4,       8,       p31 - 1, p31,         p31 + 1,
                                        p32 - 1, p32,     p32 + 1, p62 - 1, p62,     p62 + 1, p63 - 1,     p63,
                                        p63 + 1, ~0ULL,   ~0ULL - 3, data.size(), data.size() + 1};
  const char* env_iterations = std::getenv("MIXT_FUZZ_ITERATIONS");
  const char* env_seed = std::getenv("MIXT_FUZZ_SEED");
  const int iterations = env_iterations ? std::atoi(env_iterations) : 4000;
  std::mt19937_64 rng(env_seed ? std::strtoull(env_seed, nullptr, 10) : 20261201);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  auto near_bound = [&] { return bounds[pick(bounds.size())] + pick(5) - 2; };  // wraps around 0 and 2^64 on purpose
  auto elsize = [](const Json& e) {
    const std::string code = e["dtype"];
    return code == "BOOL" || code == "U8" ? 1 : code == "BF16" || code == "F16" ? 2 : code == "I64" ? 8 : 4;
  };
  int loaded = 0, refused = 0;
  for (int iter = 0; iter < iterations; ++iter) {
    Json h = header;
    for (int k = 0, n = 1 + static_cast<int>(pick(2)); k < n && iter > 0; ++k) {
      Json& e = h[names[pick(names.size())]];
      Json& shape = e["shape"];
      Json& offsets = e["data_offsets"];
      const uint64_t begin = offsets[0], end = offsets[1], s = static_cast<uint64_t>(elsize(e));
      switch (pick(6)) {
        case 0:  // one size (or a new one) at a boundary
          if (shape.empty() || rng() % 4 == 0)
            shape.push_back(near_bound());
          else
            shape[pick(shape.size())] = near_bound();
          break;
        case 1:  // one offset at a boundary
          offsets[pick(2)] = near_bound();
          break;
        case 2:  // a shape whose element count times the element size wraps to the true byte count
          if (s == 1)
            shape = Json::array({p32, p32 + pick(2)});
          else if (rng() % 2)
            shape = Json::array({(end - begin) / s + (~0ULL / s + 1)});
          else
            shape = Json::array({2, ((end - begin) / s + (~0ULL / s + 1)) / 2});
          break;
        case 3: {  // both offsets moved: gaps, overlaps, or past the end
          const uint64_t d = rng() % 2 ? s * (1 + pick(3)) : near_bound();
          offsets = rng() % 2 ? Json::array({begin + d, end + d}) : Json::array({begin - d, end - d});
          break;
        }
        case 4:  // begin and end swapped (unsorted)
          offsets = Json::array({end, begin});
          break;
        default:  // the region of another tensor (overlapping)
          offsets = h[names[pick(names.size())]]["data_offsets"];
      }
    }
    std::string text = h.dump();
    text.append((8 - text.size() % 8) % 8, ' ');
    const std::string bytes = file_of(text, data);
    INFO("mutation " << iter << ": " << text);
    try {
      const StateDict d = from_safetensors_bytes(bytes);
      ++loaded;
      uint64_t total = 0;
      for (const auto& [name, t] : d.tensors) {
        REQUIRE(static_cast<uint64_t>(t.nbytes()) <= data.size());
        total += static_cast<uint64_t>(t.nbytes());
        CHECK(t.to(kFloat64).numel() == t.numel());  // the conversion stays within both tensors
      }
      CHECK(total <= data.size());
    } catch (const Error& e) {
      ++refused;
      CHECK_THAT(std::string(e.what()), Contains("from_safetensors_bytes") && Contains("<bytes>"));
    } catch (const std::exception& e) {
      FAIL("raised a non-mixt exception: " << e.what());
    }
  }
  INFO("loaded " << loaded << ", refused " << refused);
  CHECK(loaded >= 1);
  CHECK(refused > iterations / 2);
}

TEST_CASE("StateDict keeps insertion order and indexes names", "[safetensors][state_dict]") {
  static_assert(std::is_const_v<std::remove_reference_t<decltype(StateDict{}.tensors[0].first)>>,
                "names are const, so the index cannot go stale");
  StateDict d;
  d.set("b", zeros({1}));
  d.set("a", zeros({2}));
  d.set("b", zeros({3}));  // replaced in place
  REQUIRE(d.tensors.size() == 2);
  CHECK(d.tensors[0].first == "b");
  CHECK(d.tensors[0].second.sizes() == Shape{3});
  CHECK(d.find("a")->sizes() == Shape{2});
  CHECK(d.find("c") == nullptr);

  // Entries appended directly are indexed too; a repeated name finds its first entry.
  d.tensors.emplace_back("c", zeros({4}));
  d.tensors.emplace_back("a", zeros({5}));
  CHECK(d.find("c")->sizes() == Shape{4});
  CHECK(d.find("a")->sizes() == Shape{2});
  d.tensors.erase(d.tensors.begin() + 1);  // the first "a": the second is found now
  CHECK(d.find("a")->sizes() == Shape{5});
  CHECK(d.find("c")->sizes() == Shape{4});
  CHECK(d.tensors.index_of("a") == 2);

  StateDict copy = d;
  copy.set("z", zeros({6}));
  for (auto& [name, t] : copy.tensors) t = zeros({7});
  CHECK(d.find("z") == nullptr);
  CHECK(d.find("b")->sizes() == Shape{3});
  copy = d;
  CHECK(copy.find("z") == nullptr);
  copy.tensors = {{"x", zeros({1})}, {"y", zeros({2})}};
  CHECK(copy.find("b") == nullptr);
  CHECK(copy.find("y")->sizes() == Shape{2});
  copy.tensors.clear();
  CHECK(copy.find("x") == nullptr);

  StateDict merged;
  merged.merge(d, "m.");
  CHECK(merged.find("m.c")->sizes() == Shape{4});
  CHECK(merged.extract("m.").find("b")->sizes() == Shape{3});
}

TEST_CASE("StateDict builds and looks up many names in linear time", "[safetensors][state_dict][slow]") {
  // 100,000 names: a linear scan per set and find took over 10 s on the
  // development machine; the index takes milliseconds.
  std::vector<std::string> names;
  for (int i = 0; i < 100'000; ++i) names.push_back("layers." + std::to_string(i) + ".weight");
  const Tensor t = zeros({1});
  StateDict d;
  const double seconds = seconds_of([&] {
    for (const std::string& n : names) d.set(n, t);
    for (const std::string& n : names) REQUIRE(d.find(n) != nullptr);
  });
  CHECK(seconds < 2.0);
  CHECK(d.tensors.size() == names.size());
  CHECK(d.tensors[54'321].first == names[54'321]);
}

TEST_CASE("save_safetensors writes files of mixed tensor sizes exactly as to_safetensors_bytes", "[safetensors][file]") {
  TempDir dir;
  StateDict d;
  d.set("small", full({3}, 1.0));
  d.set("mid", full({100'000}, 2.0));  // 400 KB: written directly, after the buffered header
  d.set("tiny", full({1}, 3.0, {.dtype = kInt64}));
  d.set("big", full({600'000}, 4.0));
  const std::string path = dir.file("mixed.safetensors");
  save_safetensors(path, d);
  CHECK(read_file(path) == to_safetensors_bytes(d));
  check_same(load_safetensors(path), d);
}
