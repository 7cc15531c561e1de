// The GEMM plan key: hashing, validation, and the tuning file's text (Note [Tuning file format]).
#include <mixt/kernels/common/gemm_key.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <unordered_set>

#include <fmt/format.h>

#include <mixt/runtime/check.h>
#include <mixt/runtime/checked.h>

namespace mixt::gemm {
namespace {

constexpr const char* kLoad = "gemm::load_tuning";
constexpr std::string_view kMagic = "mixt-gemm-tuning";
constexpr int64_t kVersion = 1;
constexpr int64_t kMaxExtent = int64_t{1} << 62;  // elements an operand may span

constexpr std::string_view kComputeNames[kNumComputeTypes] = {"f32", "f32_fast_tf32", "f64", "f16"};
constexpr std::string_view kEpilogueNames[kNumEpilogues] = {"none", "bias", "relu", "relu_bias", "gelu", "gelu_bias",
                                                            "gelu_aux", "gelu_aux_bias", "dgelu", "dgelu_bgrad",
                                                            "bgrada", "bgradb"};
constexpr std::string_view kScaleNames[kNumScaleModes] = {"none", "tensorwise", "rowwise"};

bool is_gemm_dtype(ScalarType t) {
  return t == kFloat32 || t == kFloat64 || t == kFloat16 || t == kBFloat16 || t == kFloat8_e4m3fn ||
         t == kFloat8_e5m2;
}
bool is_16bit(ScalarType t) { return t == kFloat16 || t == kBFloat16; }
bool is_fp8(ScalarType t) { return t == kFloat8_e4m3fn || t == kFloat8_e5m2; }
bool is_pow2_alignment(uint16_t a) { return a >= 1 && a <= kMaxAlignment && (a & (a - 1)) == 0; }

// "" when a matrix of `rows` x `cols` (column-major, `ld` apart, `batch` of them `stride` apart) is
// consistent and spans at most kMaxExtent elements.
std::string check_matrix(char name, int64_t rows, int64_t cols, int64_t ld, int64_t batch, int64_t stride,
                         bool output) {
  if (ld < std::max<int64_t>(1, rows) || ld > kMaxLd)
    return fmt::format("ld{} = {} must be in [max(1, rows = {}), 2^40]", name, ld, rows);
  if (stride < 0) return fmt::format("stride_{} = {} is negative", name, stride);
  if (batch == 1 && stride != 0) return fmt::format("stride_{} = {} must be 0 when batch = 1", name, stride);
  // One matrix spans ld * (cols - 1) + rows elements; the batch adds (batch - 1) * stride.
  __int128 span = static_cast<__int128>(ld) * (cols - 1) + rows;
  if (output && batch > 1 && stride < span)
    return fmt::format("stride_{} = {} makes the batch's outputs overlap (one matrix spans {})", name, stride,
                       static_cast<int64_t>(span));
  span += static_cast<__int128>(batch - 1) * stride;
  if (span > kMaxExtent) return fmt::format("matrix {} spans more than 2^62 elements", name);
  return {};
}

std::string check_dtypes(const GemmKey& k) {
  for (ScalarType t : {k.a, k.b, k.c, k.d})
    if (!is_gemm_dtype(t)) return fmt::format("dtype {} is not a GEMM dtype", dtype_name(t));
  const bool reads_bias = epilogue_reads_bias(k.epilogue), writes_bias = epilogue_writes_bias(k.epilogue);
  if (!reads_bias && !writes_bias && k.bias != ScalarType::Undefined)
    return fmt::format("a bias dtype ({}) without a bias epilogue", dtype_name(k.bias));
  if ((reads_bias || writes_bias) && k.bias == ScalarType::Undefined) return "a bias epilogue without a bias dtype";
  if (is_fp8(k.a) || is_fp8(k.b)) {
    if (!is_fp8(k.a) || !is_fp8(k.b)) return "float8 operands must both be float8";
    if (k.a == kFloat8_e5m2 && k.b == kFloat8_e5m2) return "float8_e5m2 x float8_e5m2 is not supported";
    if (k.scale_mode == ScaleMode::None) return "float8 operands need a scale mode";
    if (k.compute != ComputeType::F32) return "float8 operands need compute f32";
    if (!k.trans_a || k.trans_b) return "float8 operands must be TN (ta=1 tb=0)";
    if (k.epilogue != Epilogue::None && k.epilogue != Epilogue::Bias) return "float8 GEMMs support only a bias epilogue";
    if (k.d == kFloat8_e5m2 && k.a != kFloat8_e5m2 && k.b != kFloat8_e5m2)
      return "a float8_e5m2 result needs a float8_e5m2 operand";
    if (is_fp8(k.d)) {
      if (!is_16bit(k.c)) return "C must be bfloat16 or float16 with a float8 D";
      if (k.scale_mode == ScaleMode::Rowwise)
        return "row-wise scaling needs a bfloat16, float16 or float32 D (OUTER_VEC_32F has no D scale)";
    } else if (k.c != k.d) {
      return "C and D must have one dtype";
    }
    if (k.d == kFloat64) return "a float64 D with float8 operands";
    if (reads_bias && (k.d == kFloat32 || !is_16bit(k.bias) || (is_16bit(k.d) && k.bias != k.d)))
      return "float8 GEMMs take a bias of the result's dtype (bfloat16 or float16; none with float32 results)";
    return {};
  }
  if (k.scale_mode != ScaleMode::None) return "a scale mode needs float8 operands";
  if (k.fast_accum) return "fast_accum needs float8 operands";
  if (k.a != k.b) return "A and B must have one dtype";
  if (k.c != k.d) return "C and D must have one dtype";
  if (k.a == kFloat64) {
    if (k.d != kFloat64 || k.compute != ComputeType::F64) return "float64 GEMMs need a float64 D and compute f64";
  } else if (k.a == kFloat32) {
    if (k.d != kFloat32 || (k.compute != ComputeType::F32 && k.compute != ComputeType::F32FastTF32))
      return "float32 GEMMs need a float32 D and compute f32 or f32_fast_tf32";
  } else {
    if (k.d != k.a && k.d != kFloat32) return "float16/bfloat16 GEMMs write D in the operands' dtype or float32";
    if (k.compute != ComputeType::F32 && !(k.compute == ComputeType::F16 && k.a == kFloat16 && k.d == kFloat16))
      return "float16/bfloat16 GEMMs need compute f32 (f16 only for float16 results)";
  }
  if ((reads_bias || writes_bias) && k.bias != k.d && !(is_16bit(k.d) && k.bias == kFloat32))
    return "the bias must have D's dtype (or float32 with a 16-bit D)";
  return {};
}

// Parsing ---------------------------------------------------------------------------------

struct Cursor {
  const std::string& file;
  int64_t line = 0;
  [[noreturn]] void fail(std::string_view what) const { MIXT_FAIL(kLoad, "{}:{}: {}", file, line, what); }
};

std::string_view printable(std::string_view s) { return s.size() > 40 ? s.substr(0, 40) : s; }

int64_t parse_int(const Cursor& at, std::string_view name, std::string_view v, int64_t lo, int64_t hi) {
  int64_t x = 0;
  if (v.empty() || v.size() > 20 || v[0] == '+' || v[0] == '-')
    at.fail(fmt::format("{} = '{}' is not a non-negative decimal integer", name, printable(v)));
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || end != v.data() + v.size())
    at.fail(fmt::format("{} = '{}' is not an integer in range", name, printable(v)));
  if (x < lo || x > hi) at.fail(fmt::format("{} = {} is out of range [{}, {}]", name, x, lo, hi));
  return x;
}

template <size_t N>
int name_index(const Cursor& at, std::string_view field, std::string_view v, const std::string_view (&names)[N]) {
  for (size_t i = 0; i < N; ++i)
    if (names[i] == v) return static_cast<int>(i);
  at.fail(fmt::format("{} = '{}' is not one of the known names", field, printable(v)));
}

ScalarType parse_dtype(const Cursor& at, std::string_view field, std::string_view v, bool allow_none) {
  if (allow_none && v == "none") return ScalarType::Undefined;
  for (int i = 0; i < kNumDtypes; ++i) {
    const auto t = static_cast<ScalarType>(i);
    if (dtype_name(t) == v && is_gemm_dtype(t)) return t;
  }
  at.fail(fmt::format("{} = '{}' is not a GEMM dtype", field, printable(v)));
}

uint64_t parse_hex64(const Cursor& at, std::string_view v) {
  uint64_t x = 0;
  for (char ch : v) {
    int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : -1;
    if (d < 0) at.fail("algo must be 128 lowercase hexadecimal digits");
    x = (x << 4) | static_cast<uint64_t>(d);
  }
  return x;
}

// Splits `line` at single spaces into "name=value" tokens and checks the names, in order.
std::vector<std::string_view> fields(const Cursor& at, std::string_view line,
                                     const std::vector<std::string_view>& names) {
  std::vector<std::string_view> values;
  size_t pos = 0;
  for (size_t i = 0; i < names.size(); ++i) {
    if (pos > line.size()) at.fail(fmt::format("missing field '{}'", names[i]));
    const size_t end = std::min(line.find(' ', pos), line.size());
    const std::string_view tok = line.substr(pos, end - pos);
    const size_t eq = tok.find('=');
    if (eq == std::string_view::npos || tok.substr(0, eq) != names[i])
      at.fail(fmt::format("expected field '{}=', found '{}'", names[i], printable(tok)));
    values.push_back(tok.substr(eq + 1));
    pos = end + 1;
  }
  if (pos <= line.size()) at.fail(fmt::format("unexpected text after the last field: '{}'", printable(line.substr(pos))));
  return values;
}

const std::vector<std::string_view>& entry_field_names() {
  static const std::vector<std::string_view> names = {
      "m", "n", "k", "batch", "a", "b", "c", "d", "bias", "compute", "ta", "tb", "lda", "ldb", "ldc", "ldd", "sa",
      "sb", "sc", "sd", "aa", "ab", "ac", "ad", "epilogue", "scale", "fast_accum", "algo", "workspace", "time_us"};
  return names;
}

TuningEntry parse_entry(const Cursor& at, std::string_view line) {
  const std::vector<std::string_view> v = fields(at, line, entry_field_names());
  const auto& names = entry_field_names();
  size_t i = 0;
  auto num = [&](int64_t lo, int64_t hi) {
    const size_t j = i++;
    return parse_int(at, names[j], v[j], lo, hi);
  };
  auto dtype = [&](bool allow_none) {
    const size_t j = i++;
    return parse_dtype(at, names[j], v[j], allow_none);
  };
  TuningEntry e;
  GemmKey& k = e.key;
  k.m = num(1, kMaxDim);
  k.n = num(1, kMaxDim);
  k.k = num(1, kMaxDim);
  k.batch = num(1, kMaxDim);
  k.a = dtype(false);
  k.b = dtype(false);
  k.c = dtype(false);
  k.d = dtype(false);
  k.bias = dtype(true);
  k.compute = static_cast<ComputeType>(name_index(at, names[i], v[i], kComputeNames));
  ++i;
  k.trans_a = num(0, 1) == 1;
  k.trans_b = num(0, 1) == 1;
  k.lda = num(1, kMaxLd);
  k.ldb = num(1, kMaxLd);
  k.ldc = num(1, kMaxLd);
  k.ldd = num(1, kMaxLd);
  k.stride_a = num(0, kMaxExtent);
  k.stride_b = num(0, kMaxExtent);
  k.stride_c = num(0, kMaxExtent);
  k.stride_d = num(0, kMaxExtent);
  k.align_a = static_cast<uint16_t>(num(1, kMaxAlignment));
  k.align_b = static_cast<uint16_t>(num(1, kMaxAlignment));
  k.align_c = static_cast<uint16_t>(num(1, kMaxAlignment));
  k.align_d = static_cast<uint16_t>(num(1, kMaxAlignment));
  k.epilogue = static_cast<Epilogue>(name_index(at, names[i], v[i], kEpilogueNames));
  ++i;
  k.scale_mode = static_cast<ScaleMode>(name_index(at, names[i], v[i], kScaleNames));
  ++i;
  k.fast_accum = num(0, 1) == 1;
  const std::string_view hex = v[i++];
  if (hex.size() != 128) at.fail("algo must be 128 lowercase hexadecimal digits");
  for (size_t w = 0; w < 8; ++w) e.tuned.algo[w] = parse_hex64(at, hex.substr(16 * w, 16));
  e.tuned.workspace = static_cast<uint64_t>(num(0, static_cast<int64_t>(kWorkspaceBytes)));
  const std::string_view t = v[i++];
  double us = -1;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), us);
  if (t.empty() || t.size() > 32 || ec != std::errc() || end != t.data() + t.size() || !std::isfinite(us) || us < 0 ||
      us > 1e12)
    at.fail(fmt::format("time_us = '{}' is not a finite time in [0, 1e12]", printable(t)));
  e.tuned.time_us = us;
  if (const std::string why = validate(k); !why.empty()) at.fail("invalid entry: " + why);
  return e;
}

}  // namespace

size_t GemmKeyHash::operator()(const GemmKey& k) const noexcept {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](uint64_t v) {
    h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h *= 0x100000001b3ull;
  };
  for (int64_t v : {k.m, k.n, k.k, k.batch, k.lda, k.ldb, k.ldc, k.ldd, k.stride_a, k.stride_b, k.stride_c, k.stride_d})
    mix(static_cast<uint64_t>(v));
  mix(static_cast<uint64_t>(k.a) | static_cast<uint64_t>(k.b) << 8 | static_cast<uint64_t>(k.c) << 16 |
      static_cast<uint64_t>(k.d) << 24 | static_cast<uint64_t>(k.bias) << 32 | static_cast<uint64_t>(k.compute) << 40 |
      static_cast<uint64_t>(k.epilogue) << 48 | static_cast<uint64_t>(k.scale_mode) << 56);
  mix(static_cast<uint64_t>(k.align_a) | static_cast<uint64_t>(k.align_b) << 16 |
      static_cast<uint64_t>(k.align_c) << 32 | static_cast<uint64_t>(k.align_d) << 48);
  mix(static_cast<uint64_t>(k.trans_a) | static_cast<uint64_t>(k.trans_b) << 1 | static_cast<uint64_t>(k.fast_accum) << 2);
  return static_cast<size_t>(h);
}

std::string validate(const GemmKey& k) {
  for (int64_t v : {k.m, k.n, k.k, k.batch})
    if (v < 1 || v > kMaxDim) return fmt::format("m, n, k and batch must be in [1, 2^31 - 1], got {}", v);
  if (static_cast<int>(k.compute) >= kNumComputeTypes || static_cast<int>(k.epilogue) >= kNumEpilogues ||
      static_cast<int>(k.scale_mode) >= kNumScaleModes)
    return "unknown compute type, epilogue or scale mode";
  for (uint16_t a : {k.align_a, k.align_b, k.align_c, k.align_d})
    if (!is_pow2_alignment(a)) return fmt::format("alignment {} is not a power of two in [1, 256]", a);
  const int64_t ra = k.trans_a ? k.k : k.m, ca = k.trans_a ? k.m : k.k;
  const int64_t rb = k.trans_b ? k.n : k.k, cb = k.trans_b ? k.k : k.n;
  for (const std::string& why : {check_matrix('a', ra, ca, k.lda, k.batch, k.stride_a, false),
                                 check_matrix('b', rb, cb, k.ldb, k.batch, k.stride_b, false),
                                 check_matrix('c', k.m, k.n, k.ldc, k.batch, k.stride_c, false),
                                 check_matrix('d', k.m, k.n, k.ldd, k.batch, k.stride_d, true)})
    if (!why.empty()) return why;
  if (epilogue_uses_aux(k.epilogue) && k.batch != 1) return "aux epilogues are planned for batch = 1 only";
  return check_dtypes(k);
}

OperandLayout operand_layout(int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
  OperandLayout l;
  if ((cols <= 1 || cs == 1) && (rows <= 1 || rs >= cols)) {  // row-major: t^T column-major
    l.ld = rows <= 1 ? cols : rs;
  } else if ((rows <= 1 || rs == 1) && (cols <= 1 || cs >= rows)) {  // column-major: t itself
    l.trans = true;
    l.ld = cols <= 1 ? rows : cs;
  } else {
    l.fits = false;
    l.ld = cols;
  }
  l.ld = std::max<int64_t>(l.ld, 1);
  return l;
}

uint16_t pointer_alignment(const void* p) {
  const auto v = reinterpret_cast<uintptr_t>(p);
  return offset_alignment(static_cast<int64_t>(v & (kMaxAlignment - 1)));
}

uint16_t offset_alignment(int64_t bytes) {
  uint16_t a = kMaxAlignment;
  while (a > 1 && bytes % a != 0) a = static_cast<uint16_t>(a / 2);
  return a;
}

std::string describe(const GemmKey& k) {
  auto e = [](auto v, auto& names) {
    const auto i = static_cast<size_t>(v);
    return i < std::size(names) ? names[i] : std::string_view("?");
  };
  auto dt = [](ScalarType t) { return t == ScalarType::Undefined ? std::string_view("none") : dtype_name(t); };
  return fmt::format(
      "m={} n={} k={} batch={} a={} b={} c={} d={} bias={} compute={} ta={} tb={} lda={} ldb={} ldc={} ldd={} sa={} "
      "sb={} sc={} sd={} aa={} ab={} ac={} ad={} epilogue={} scale={} fast_accum={}",
      k.m, k.n, k.k, k.batch, dt(k.a), dt(k.b), dt(k.c), dt(k.d), dt(k.bias), e(k.compute, kComputeNames),
      int(k.trans_a), int(k.trans_b), k.lda, k.ldb, k.ldc, k.ldd, k.stride_a, k.stride_b, k.stride_c, k.stride_d,
      k.align_a, k.align_b, k.align_c, k.align_d, e(k.epilogue, kEpilogueNames), e(k.scale_mode, kScaleNames),
      int(k.fast_accum));
}

// Note [Tuning file format]: printable ASCII, lines ended by '\n':
//   mixt-gemm-tuning 1
//   device <the GPU's name>
//   cublaslt <cublasLtGetVersion()>
//   entries <N>
//   <N lines: describe(key) algo=<128 hex digits> workspace=<bytes> time_us=<float>>
//   end
// Lines starting with '#' and empty lines are ignored anywhere after the first. The fields of
// an entry come in a fixed order, one space apart. "entries" and "end" make a truncated file
// an error rather than a shorter table.
std::string format_tuning(const TuningFile& f) {
  MIXT_CHECK(!f.device.empty() && f.device.size() <= 200 &&
                 std::all_of(f.device.begin(), f.device.end(), [](char ch) { return ch >= 0x20 && ch < 0x7f; }),
             "gemm::save_tuning", "the device name '{}' is not 1 to 200 printable characters", f.device);
  MIXT_CHECK(f.cublaslt_version >= 0, "gemm::save_tuning", "negative cuBLASLt version {}", f.cublaslt_version);
  std::string out = fmt::format("{} {}\n# GEMM algorithms chosen by timing; see docs/gemm.md\ndevice {}\ncublaslt {}\n"
                                "entries {}\n",
                                kMagic, kVersion, f.device, f.cublaslt_version, f.entries.size());
  std::unordered_set<GemmKey, GemmKeyHash> seen;
  for (const TuningEntry& e : f.entries) {
    const std::string why = validate(e.key);
    MIXT_CHECK(why.empty(), "gemm::save_tuning", "invalid key ({}): {}", why, describe(e.key));
    MIXT_CHECK(seen.insert(e.key).second, "gemm::save_tuning", "two entries for one key: {}", describe(e.key));
    MIXT_CHECK(e.tuned.workspace <= kWorkspaceBytes && std::isfinite(e.tuned.time_us) && e.tuned.time_us >= 0 &&
                   e.tuned.time_us <= 1e12,
               "gemm::save_tuning", "workspace {} or time {} out of range", e.tuned.workspace, e.tuned.time_us);
    out += describe(e.key);
    out += " algo=";
    for (uint64_t w : e.tuned.algo) out += fmt::format("{:016x}", w);
    out += fmt::format(" workspace={} time_us={}\n", e.tuned.workspace, e.tuned.time_us);
  }
  out += "end\n";
  return out;
}

TuningFile parse_tuning(std::string_view text, const std::string& file) {
  Cursor at{file};
  if (text.size() > kMaxTuningFileBytes)
    at.fail(fmt::format("the file has {} bytes, more than the {} a tuning file may have", text.size(),
                        kMaxTuningFileBytes));
  TuningFile f;
  enum class State { Magic, Device, Version, Count, Entries, End, Done } state = State::Magic;
  int64_t expected = 0;
  std::unordered_set<GemmKey, GemmKeyHash> seen;
  size_t pos = 0;
  while (pos < text.size()) {
    ++at.line;
    const size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) at.fail("the last line has no line break (truncated file?)");
    const std::string_view line = text.substr(pos, nl - pos);
    pos = nl + 1;
    if (line.size() > kMaxTuningLineBytes) at.fail(fmt::format("line longer than {} bytes", kMaxTuningLineBytes));
    for (char ch : line)
      if (ch < 0x20 || ch >= 0x7f) at.fail(fmt::format("byte 0x{:02x} is not printable ASCII", static_cast<uint8_t>(ch)));
    if (state != State::Magic && (line.empty() || line[0] == '#')) continue;
    auto value_of = [&](std::string_view word) {
      if (line.size() <= word.size() + 1 || line.substr(0, word.size()) != word || line[word.size()] != ' ')
        at.fail(fmt::format("expected '{} ...', found '{}'", word, printable(line)));
      return line.substr(word.size() + 1);
    };
    switch (state) {
      case State::Magic: {
        if (line.substr(0, kMagic.size()) != kMagic || line.size() <= kMagic.size() || line[kMagic.size()] != ' ')
          at.fail(fmt::format("not a mixt GEMM tuning file (the first line must be '{} {}')", kMagic, kVersion));
        const int64_t version = parse_int(at, "version", line.substr(kMagic.size() + 1), 0, INT64_MAX);
        if (version != kVersion)
          at.fail(fmt::format("tuning file version {} is not supported (this mixt reads version {})", version, kVersion));
        state = State::Device;
        break;
      }
      case State::Device:
        f.device = std::string(value_of("device"));
        if (f.device.size() > 200) at.fail("the device name is longer than 200 characters");
        state = State::Version;
        break;
      case State::Version:
        f.cublaslt_version = parse_int(at, "cublaslt", value_of("cublaslt"), 0, INT32_MAX);
        state = State::Count;
        break;
      case State::Count:
        expected = parse_int(at, "entries", value_of("entries"), 0, kMaxTuningEntries);
        f.entries.reserve(static_cast<size_t>(std::min<int64_t>(expected, 1024)));
        state = expected == 0 ? State::End : State::Entries;
        break;
      case State::Entries: {
        TuningEntry e = parse_entry(at, line);
        if (!seen.insert(e.key).second) at.fail("a second entry for the same key");
        f.entries.push_back(e);
        if (static_cast<int64_t>(f.entries.size()) == expected) state = State::End;
        break;
      }
      case State::End:
        if (line != "end") at.fail(fmt::format("expected 'end' after {} entries, found '{}'", expected, printable(line)));
        state = State::Done;
        break;
      case State::Done:
        at.fail(fmt::format("unexpected text after 'end': '{}'", printable(line)));
    }
  }
  if (state != State::Done) {
    ++at.line;
    at.fail(state == State::Magic ? std::string("the file is empty")
                                  : fmt::format("the file ends early (after {} of {} entries, or without 'end')",
                                                f.entries.size(), expected));
  }
  return f;
}

}  // namespace mixt::gemm
