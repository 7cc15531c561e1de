// The GEMM engine's host side: the plan-cache key (validation, hashing, alignment), the
// tuning file's format (round trip, every refusal naming the file and line), a fuzz run
// that throws thousands of mutated and random files at the parser (each either parses
// into valid entries or raises mixt::Error, never anything else), and save_tuning /
// load_tuning / clear_plan_cache / plan_cache_stats on disk: a bad file changes nothing.
#include <fstream>
#include <random>
#include <string>
#include <unordered_set>
#include <vector>

#include <catch2/catch.hpp>

#include <mixt/kernels/common/gemm_key.h>
#include <mixt/kernels/common/gemm_tuning.h>
#include <mixt/mixt.h>

#include "temp_dir.h"

using namespace mixt;
using namespace mixt::gemm;
using Catch::Contains;

namespace {

// A bfloat16 GEMM as the engine plans a row-major [m, k] @ [k, n]: column-major D^T = B^T A^T.
GemmKey bf16_key(int64_t m = 64, int64_t n = 32, int64_t k = 128) {
  GemmKey key;
  key.m = m;
  key.n = n;
  key.k = k;
  key.a = key.b = key.c = key.d = kBFloat16;
  key.lda = m;
  key.ldb = k;
  key.ldc = key.ldd = m;
  return key;
}

// A float8 TN GEMM with a bias and per-tensor scales.
GemmKey fp8_key() {
  GemmKey key;
  key.m = 64;
  key.n = 48;
  key.k = 32;
  key.a = kFloat8_e4m3fn;
  key.b = kFloat8_e5m2;
  key.c = key.d = kBFloat16;
  key.bias = kBFloat16;
  key.epilogue = Epilogue::Bias;
  key.scale_mode = ScaleMode::Tensorwise;
  key.fast_accum = true;
  key.trans_a = true;
  key.lda = 32;
  key.ldb = 32;
  key.ldc = key.ldd = 64;
  key.align_c = 16;
  return key;
}

GemmKey batched_key() {
  GemmKey key = bf16_key(16, 8, 24);
  key.batch = 5;
  key.trans_b = true;
  key.ldb = 8;
  key.stride_a = 16 * 24;
  key.stride_b = 0;  // one B broadcast over the batch
  key.stride_c = key.stride_d = 16 * 8;
  key.d = key.c = kFloat32;
  return key;
}

TunedAlgo algo(uint64_t seed) {
  TunedAlgo t;
  for (size_t i = 0; i < t.algo.size(); ++i) t.algo[i] = seed * 0x9e3779b97f4a7c15ull + i;
  t.workspace = seed * 4096;
  t.time_us = 12.5 + static_cast<double>(seed);
  return t;
}

TuningFile sample_file() {
  TuningFile f;
  f.device = "NVIDIA H200";
  f.cublaslt_version = 130100;
  f.entries = {{bf16_key(), algo(1)}, {fp8_key(), algo(2)}, {batched_key(), algo(3)}};
  GemmKey f32 = bf16_key(8, 8, 8);
  f32.a = f32.b = f32.c = f32.d = kFloat32;
  f32.compute = ComputeType::F32FastTF32;
  f32.epilogue = Epilogue::GeluAuxBias;
  f32.bias = kFloat32;
  f.entries.push_back({f32, algo(4)});
  return f;
}

// Parses `text`; "" when it parses (and then every entry is valid and the file round-trips),
// else the error's message.
std::string parse_outcome(const std::string& text) {
  try {
    const TuningFile f = parse_tuning(text, "fuzz.tuning");
    for (const TuningEntry& e : f.entries) REQUIRE(validate(e.key).empty());
    const TuningFile again = parse_tuning(format_tuning(f), "again.tuning");
    REQUIRE(again.entries.size() == f.entries.size());
    for (size_t i = 0; i < f.entries.size(); ++i) {
      REQUIRE(again.entries[i].key == f.entries[i].key);
      REQUIRE(again.entries[i].tuned == f.entries[i].tuned);
    }
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

}  // namespace

TEST_CASE("GEMM keys: valid problems pass, inconsistent ones say why", "[gemm]") {
  CHECK(validate(bf16_key()) == "");
  CHECK(validate(fp8_key()) == "");
  CHECK(validate(batched_key()) == "");
  for (const TuningEntry& e : sample_file().entries) CHECK(validate(e.key) == "");

  auto refused = [](GemmKey k, const char* why) {
    INFO(describe(k));
    CHECK_THAT(validate(k), Contains(why));
  };
  GemmKey k = bf16_key();
  k.m = 0;
  refused(k, "[1, 2^31 - 1]");
  k = bf16_key();
  k.lda = 10;  // fewer than m = 64 rows
  refused(k, "lda");
  k = bf16_key();
  k.align_b = 24;
  refused(k, "power of two");
  k = bf16_key();
  k.stride_a = 8;  // batch = 1 keeps strides 0
  refused(k, "stride_a");
  k = batched_key();
  k.stride_d = 16;  // outputs of the batch overlap
  refused(k, "overlap");
  k = bf16_key();
  k.bias = kBFloat16;
  refused(k, "without a bias epilogue");
  k = bf16_key();
  k.epilogue = Epilogue::Bias;
  refused(k, "without a bias dtype");
  k = bf16_key();
  k.compute = ComputeType::F16;
  refused(k, "compute f32");
  k = bf16_key();
  k.d = k.c = kFloat16;
  refused(k, "operands' dtype or float32");
  k = fp8_key();
  k.a = k.b = kFloat8_e5m2;
  refused(k, "e5m2 x float8_e5m2");
  k = fp8_key();
  k.trans_a = false;
  k.lda = 64;
  refused(k, "TN");
  k = fp8_key();
  k.scale_mode = ScaleMode::None;
  refused(k, "scale mode");
  // Row-wise (OUTER_VEC_32F) scaling writes bfloat16, float16 or float32 D, never float8 (no D scale).
  k = fp8_key();
  k.scale_mode = ScaleMode::Rowwise;
  CHECK(validate(k) == "");
  k.d = kFloat8_e4m3fn;
  refused(k, "row-wise scaling needs a bfloat16, float16 or float32 D");
  k.scale_mode = ScaleMode::Tensorwise;
  CHECK(validate(k) == "");
  k = fp8_key();
  k.d = kFloat32;
  k.c = kFloat32;
  refused(k, "bias");
  k = bf16_key();
  k.fast_accum = true;
  refused(k, "fast_accum");
  k = bf16_key();
  k.a = k.b = k.c = k.d = kInt32;
  refused(k, "not a GEMM dtype");
  k = bf16_key();
  k.lda = int64_t{1} << 40;
  k.ldb = int64_t{1} << 40;
  k.k = (int64_t{1} << 31) - 1;  // spans ~2^71 elements: refused without overflowing
  refused(k, "2^62");
}

TEST_CASE("GEMM keys: every field takes part in equality and the hash", "[gemm]") {
  const GemmKey base = fp8_key();
  std::vector<GemmKey> variants;
  auto vary = [&](auto change) {
    GemmKey k = base;
    change(k);
    variants.push_back(k);
  };
  vary([](GemmKey& k) { k.m++; });
  vary([](GemmKey& k) { k.n++; });
  vary([](GemmKey& k) { k.k++; });
  vary([](GemmKey& k) { k.batch++; });
  vary([](GemmKey& k) { k.a = kFloat8_e5m2; });
  vary([](GemmKey& k) { k.b = kFloat8_e4m3fn; });
  vary([](GemmKey& k) { k.c = kFloat16; });
  vary([](GemmKey& k) { k.d = kFloat16; });
  vary([](GemmKey& k) { k.bias = kFloat16; });
  vary([](GemmKey& k) { k.compute = ComputeType::F64; });
  vary([](GemmKey& k) { k.trans_a = false; });
  vary([](GemmKey& k) { k.trans_b = true; });
  vary([](GemmKey& k) { k.lda++; });
  vary([](GemmKey& k) { k.ldb++; });
  vary([](GemmKey& k) { k.ldc++; });
  vary([](GemmKey& k) { k.ldd++; });
  vary([](GemmKey& k) { k.stride_a++; });
  vary([](GemmKey& k) { k.stride_b++; });
  vary([](GemmKey& k) { k.stride_c++; });
  vary([](GemmKey& k) { k.stride_d++; });
  vary([](GemmKey& k) { k.align_a = 16; });
  vary([](GemmKey& k) { k.align_b = 16; });
  vary([](GemmKey& k) { k.align_c = 8; });
  vary([](GemmKey& k) { k.align_d = 16; });
  vary([](GemmKey& k) { k.epilogue = Epilogue::None; });
  vary([](GemmKey& k) { k.scale_mode = ScaleMode::Rowwise; });
  vary([](GemmKey& k) { k.fast_accum = false; });
  const GemmKeyHash hash;
  std::unordered_set<size_t> hashes{hash(base)};
  for (const GemmKey& k : variants) {
    CHECK_FALSE(k == base);
    CHECK(describe(k) != describe(base));
    hashes.insert(hash(k));
  }
  CHECK(hashes.size() == variants.size() + 1);
  GemmKey same = base;
  CHECK(same == base);
  CHECK(hash(same) == hash(base));
}

TEST_CASE("GEMM keys: pointer and offset alignment", "[gemm]") {
  alignas(256) static unsigned char buf[1024];
  CHECK(pointer_alignment(buf) == 256);
  CHECK(pointer_alignment(buf + 2) == 2);
  CHECK(pointer_alignment(buf + 48) == 16);
  CHECK(pointer_alignment(buf + 1) == 1);
  CHECK(pointer_alignment(nullptr) == 256);
  CHECK(offset_alignment(0) == 256);
  CHECK(offset_alignment(1024) == 256);
  CHECK(offset_alignment(96) == 32);
  CHECK(offset_alignment(6) == 2);
}

TEST_CASE("GEMM operands: strides to transposes and leading dimensions", "[gemm]") {
  // Row-major [4, 6]: t^T column-major, ld 6 (or the row stride of a wider buffer).
  OperandLayout l = operand_layout(4, 6, 6, 1);
  CHECK((l.fits && !l.trans && l.ld == 6));
  l = operand_layout(4, 6, 10, 1);
  CHECK((l.fits && !l.trans && l.ld == 10));
  // A transposed view (column-major [4, 6]): op T, ld = the column stride.
  l = operand_layout(4, 6, 1, 4);
  CHECK((l.fits && l.trans && l.ld == 4));
  l = operand_layout(4, 6, 1, 8);
  CHECK((l.fits && l.trans && l.ld == 8));
  // Neither stride 1, or rows overlapping: a copy.
  CHECK_FALSE(operand_layout(4, 6, 12, 2).fits);
  CHECK_FALSE(operand_layout(4, 6, 3, 1).fits);  // rows 3 apart but 6 wide
  CHECK(operand_layout(4, 6, 12, 2).ld == 6);
  // Vectors and single elements fit either way, with ld at least 1.
  l = operand_layout(1, 6, 0, 1);
  CHECK((l.fits && !l.trans && l.ld == 6));
  l = operand_layout(5, 1, 1, 1);
  CHECK((l.fits && !l.trans && l.ld == 1));
  l = operand_layout(5, 1, 7, 3);  // one column, rows 7 apart: t^T is one row of a 1 x 5 matrix, ld 7
  CHECK((l.fits && !l.trans && l.ld == 7));
  l = operand_layout(0, 0, 0, 0);
  CHECK((l.fits && l.ld == 1));
  // The key of a row-major [M, K] @ [K, N] into a contiguous [M, N], planned as out^T = b^T a^T,
  // validates, for each layout of the operands.
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      const int64_t M = 12, K = 20, N = 8;
      const OperandLayout x = ta ? operand_layout(M, K, 1, M) : operand_layout(M, K, K, 1);
      const OperandLayout y = tb ? operand_layout(K, N, 1, K) : operand_layout(K, N, N, 1);
      GemmKey k;
      k.m = N;
      k.n = M;
      k.k = K;
      k.trans_a = y.trans;
      k.trans_b = x.trans;
      k.lda = y.ld;
      k.ldb = x.ld;
      k.ldc = k.ldd = N;
      INFO(describe(k));
      CHECK(validate(k) == "");
    }
}

TEST_CASE("Tuning files: format and parse round trip", "[gemm]") {
  const TuningFile f = sample_file();
  const std::string text = format_tuning(f);
  CHECK_THAT(text, Contains("mixt-gemm-tuning 1\n"));
  CHECK_THAT(text, Contains("device NVIDIA H200\n"));
  const TuningFile g = parse_tuning(text, "x.tuning");
  CHECK(g.device == f.device);
  CHECK(g.cublaslt_version == f.cublaslt_version);
  REQUIRE(g.entries.size() == f.entries.size());
  for (size_t i = 0; i < f.entries.size(); ++i) {
    CHECK(g.entries[i].key == f.entries[i].key);
    CHECK(g.entries[i].tuned == f.entries[i].tuned);
  }
  // Comments and blank lines are ignored after the first line.
  std::string commented = text;
  commented.insert(commented.find("device"), "# a comment\n\n");
  CHECK(parse_tuning(commented, "c.tuning").entries.size() == f.entries.size());
  // An empty table.
  TuningFile empty;
  CHECK(parse_tuning(format_tuning(empty), "e.tuning").entries.empty());
  // format_tuning refuses what parse_tuning would.
  TuningFile dup = f;
  dup.entries.push_back(dup.entries[0]);
  CHECK_THROWS_WITH(format_tuning(dup), Contains("two entries"));
  TuningFile bad = f;
  bad.entries[0].key.lda = 1;
  CHECK_THROWS_WITH(format_tuning(bad), Contains("invalid key"));
}

TEST_CASE("Tuning files: each kind of damage is refused, naming the file and the line", "[gemm]") {
  const std::string text = format_tuning(sample_file());
  const size_t first_entry = text.find("m=");
  auto replaced = [&](const std::string& from, const std::string& to, size_t start = 0) {
    std::string t = text;
    const size_t at = t.find(from, start);
    REQUIRE(at != std::string::npos);
    t.replace(at, from.size(), to);
    return t;
  };
  struct Bad {
    std::string text, why;
  };
  const std::vector<Bad> cases = {
      {"", "bad.tuning:1: the file is empty"},
      {"hello\n", "bad.tuning:1: not a mixt GEMM tuning file"},
      {replaced("mixt-gemm-tuning 1", "mixt-gemm-tuning 2"), "bad.tuning:1: tuning file version 2"},
      {replaced("device ", "devices "), "bad.tuning:3: expected 'device"},
      {replaced("cublaslt 130100", "cublaslt -5"), "bad.tuning:4: cublaslt"},
      {replaced("entries 4", "entries 5"), "bad.tuning:10: expected field 'm=', found 'end'"},
      {replaced("entries 4", "entries 3"), "expected 'end'"},
      {replaced("entries 4", "entries 99999999999999999999999"), "entries"},
      {replaced("m=64", "m=0", first_entry), "bad.tuning:6: m = 0 is out of range"},
      {replaced("m=64", "m=-64", first_entry), "bad.tuning:6: m = '-64'"},
      {replaced("m=64", "m=18446744073709551617", first_entry), "bad.tuning:6: m"},
      {replaced("m=64", "m=6x4", first_entry), "bad.tuning:6: m = '6x4'"},
      {replaced("m=64 n=", "n=64 m=", first_entry), "bad.tuning:6: expected field 'm='"},
      {replaced("a=bfloat16", "a=int32", first_entry), "not a GEMM dtype"},
      {replaced("compute=f32", "compute=f17", first_entry), "compute = 'f17'"},
      {replaced("epilogue=none", "epilogue=swish", first_entry), "epilogue = 'swish'"},
      {replaced("aa=256", "aa=3", first_entry), "invalid entry: alignment 3"},
      {replaced("algo=", "algo=g", first_entry), "algo must be 128"},
      {replaced("time_us=", "time_us=nan", first_entry), "time_us"},
      {replaced("time_us=", "time_us=1e400", first_entry), "time_us"},
      {replaced("workspace=", "workspace=99999999999", first_entry), "workspace"},
      {replaced("lda=64", "lda=2", first_entry), "invalid entry: lda = 2"},
      {replaced("\nend\n", "\nend\nmore\n"), "unexpected text after 'end'"},
      {text.substr(0, text.size() - 1), "no line break"},
      {text.substr(0, text.size() - 4), "ends early"},
      {replaced("device NVIDIA", "device NV\x01IDIA"), "bad.tuning:3: byte 0x01"},
      {replaced("device NVIDIA", "device NV\xc3\xa9IDIA"), "bad.tuning:3: byte 0xc3"},
      {replaced("\nm=16", " extra=1\nm=16"), "after the last field: 'extra=1'"},
      {replaced("fast_accum=0 algo", "fast_accum=0  algo", first_entry), "expected field 'algo='"},
      {std::string(kMaxTuningFileBytes + 1, 'x'), "more than the"},
      {"mixt-gemm-tuning 1\n" + std::string(kMaxTuningLineBytes + 1, 'x') + "\n", "bad.tuning:2: line longer"},
  };
  for (const Bad& b : cases) {
    INFO("expect: " << b.why);
    CHECK_THROWS_WITH(parse_tuning(b.text, "bad.tuning"), Contains(b.why) && Contains("gemm::load_tuning"));
  }
  // A second entry for one key.
  const size_t line_start = first_entry, line_end = text.find('\n', first_entry) + 1;
  std::string dup = text;
  dup.insert(line_end, text.substr(line_start, line_end - line_start));
  dup = dup.replace(dup.find("entries 4"), 9, "entries 5");
  CHECK_THROWS_WITH(parse_tuning(dup, "dup.tuning"), Contains("dup.tuning:7: a second entry"));
}

TEST_CASE("Tuning files: fuzzed files parse into valid entries or raise mixt::Error", "[gemm][fuzz]") {
  const std::string good = format_tuning(sample_file());
  std::mt19937 rng(20261201);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % std::max<size_t>(n, 1)); };
  const std::vector<std::string> tokens = {"0", "1", "-1", "256", "999999999999999999999", "2147483648", "nan", "inf",
                                           " ", "=", "\n", "#", "end\n", "entries 1\n", "bfloat16", "f32", "1e308",
                                           "0x10", "\t", "\r"};
  int parsed = 0, refused = 0;
  for (int iter = 0; iter < 4000; ++iter) {
    std::string t = good;
    const int edits = 1 + static_cast<int>(pick(4));
    for (int e = 0; e < edits; ++e) {
      switch (pick(8)) {
        case 0: if (!t.empty()) t[pick(t.size())] = static_cast<char>(rng()); break;         // any byte
        case 1: if (!t.empty()) t.erase(pick(t.size()), 1 + pick(8)); break;                  // delete a few
        case 2: t.insert(pick(t.size() + 1), tokens[pick(tokens.size())]); break;             // insert a token
        case 3: t.resize(pick(t.size() + 1)); break;                                          // truncate
        case 4: {                                                                             // digit -> number
          const size_t at = t.find_first_of("0123456789", pick(t.size()));
          if (at != std::string::npos) t.replace(at, 1, tokens[pick(6)]);
          break;
        }
        case 5: {                                                                             // duplicate a line
          const size_t a = t.rfind('\n', pick(t.size()));
          const size_t s = a == std::string::npos ? 0 : a + 1, n = t.find('\n', s);
          if (n != std::string::npos) t.insert(s, t.substr(s, n + 1 - s));
          break;
        }
        case 6: {                                                                             // a field's value
          const size_t at = t.find('=', pick(t.size()));
          if (at != std::string::npos) t.insert(at + 1, tokens[pick(tokens.size())]);
          break;
        }
        default: {                                                                            // swap two bytes
          if (t.size() > 1) std::swap(t[pick(t.size())], t[pick(t.size())]);
        }
      }
    }
    const std::string why = parse_outcome(t);
    if (why.empty()) {
      ++parsed;
    } else {
      ++refused;
      INFO(why);
      REQUIRE_THAT(why, Contains("gemm::load_tuning") && Contains("fuzz.tuning:"));
    }
  }
  // Random bytes and random lines after a valid header.
  for (int iter = 0; iter < 500; ++iter) {
    std::string t(pick(300), '\0');
    for (char& ch : t) ch = static_cast<char>(rng());
    if (iter % 2) t = "mixt-gemm-tuning 1\ndevice x\ncublaslt 1\nentries 1\n" + t;
    CHECK_THAT(parse_outcome(t), Contains("fuzz.tuning:"));
  }
  INFO(parsed << " parsed, " << refused << " refused");
  CHECK(refused > 3000);  // nearly every mutation breaks something
  CHECK(parse_outcome(good).empty());
}

TEST_CASE("save_tuning / load_tuning: round trip through a file; a bad file changes nothing", "[gemm]") {
  testing::TempDir dir;
  clear_plan_cache();
  CHECK(tuned_entries().empty());
  for (const TuningEntry& e : sample_file().entries) record_tuned(e.key, e.tuned);
  const std::string path = dir.file("plans.tuning");
  save_tuning(path);
  const std::string saved = testing::read_file(path);
  CHECK_THAT(saved, Contains("entries 4\n"));

  clear_plan_cache();
  CHECK(tuned_entries().empty());
  CHECK_FALSE(find_tuned(bf16_key()).has_value());
  load_tuning(path);
  CHECK(tuned_entries().size() == 4);
  REQUIRE(find_tuned(fp8_key()).has_value());
  CHECK(*find_tuned(fp8_key()) == algo(2));
  save_tuning(dir.file("again.tuning"));
  CHECK(testing::read_file(dir.file("again.tuning")) == saved);  // sorted: equal tables, equal files

  // A damaged file: refused with its path and line, and the table is untouched.
  std::string damaged = saved;
  damaged.replace(damaged.rfind("time_us="), 8, "time_us=-");
  const std::string bad_path = dir.file("bad.tuning");
  write_text(bad_path, damaged);
  clear_plan_cache();
  record_tuned(bf16_key(), algo(9));
  CHECK_THROWS_WITH(load_tuning(bad_path), Contains(bad_path + ":") && Contains("time_us"));
  REQUIRE(tuned_entries().size() == 1);
  CHECK(*find_tuned(bf16_key()) == algo(9));
  CHECK_THROWS_WITH(load_tuning(dir.file("missing.tuning")), Contains("missing.tuning"));
  clear_plan_cache();
}

TEST_CASE("Engine hooks: stats, clear and the cuBLASLt version check", "[gemm]") {
  testing::TempDir dir;
  // Registered once per process, as the CUDA engine does (this CPU test stands in for it).
  static int64_t plans = 3;
  static int clears = 0;
  EngineHooks hooks;
  hooks.plan_count = [] { return plans; };
  hooks.clear_plans = [] {
    ++clears;
    plans = 0;
  };
  hooks.device_name = [] { return std::string("Test GPU"); };
  hooks.cublaslt_version = 130100;
  set_engine_hooks(hooks);
  count_miss();
  count_hit();
  count_hit();
  count_autotuned();
  PlanCacheStats s = plan_cache_stats();
  CHECK(s.plans == 3);
  CHECK(s.hits == 2);
  CHECK(s.misses == 1);
  CHECK(s.autotuned == 1);
  record_tuned(bf16_key(), algo(5));
  save_tuning(dir.file("t.tuning"));
  CHECK_THAT(testing::read_file(dir.file("t.tuning")), Contains("device Test GPU\ncublaslt 130100\n"));
  clear_plan_cache();
  CHECK(clears == 1);
  s = plan_cache_stats();
  CHECK(s.plans == 0);
  CHECK(s.hits == 0);
  CHECK(tuned_entries().empty());
  // Another cuBLASLt version's algorithms are refused, changing nothing.
  TuningFile other = sample_file();
  other.cublaslt_version = 120900;
  write_text(dir.file("other.tuning"), format_tuning(other));
  CHECK_THROWS_WITH(load_tuning(dir.file("other.tuning")), Contains("cuBLASLt 120900"));
  CHECK(tuned_entries().empty());
  load_tuning(dir.file("t.tuning"));
  CHECK(tuned_entries().size() == 1);
  clear_plan_cache();
}
