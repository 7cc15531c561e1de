// safetensors I/O: save/load throughput of large tensors against the plain
// write/read rate of the same file system measured in the same run, tensors/s
// for many small tensors, and the time to parse (or refuse) pathological headers
// (the files of issue 8: 50,000 empty objects, 20,000 and 200,000 zero-size
// tensors, a header near the 100 MB limit).
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include <mixt/mixt.h>
#include <mixt/runtime/io/safetensors.h>

#include "bench_io.h"
#include "bench_json.h"

namespace mixt::bench {
namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// CPU seconds this process has used (unlike wall time, not inflated by other load).
double cpu_seconds() {
  timespec ts;
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Fails the benchmark with the errno text of a failed system call.
void check_sys(bool ok, const char* what, const std::string& path) {
  if (!ok) throw std::runtime_error(std::string(what) + " '" + path + "': " + std::strerror(errno));
}

// Wall and CPU seconds of `f` (CPU time is not inflated by other load on the machine).
struct Seconds {
  double wall, cpu;
};
template <class F>
Seconds timed(F&& f) {
  const auto t0 = Clock::now();
  const double c0 = cpu_seconds();
  f();
  return {seconds_since(t0), cpu_seconds() - c0};
}
// The best (by wall time) of `reps` runs.
template <class F>
Seconds best_timed(int64_t reps, F&& f) {
  Seconds best{1e300, 1e300};
  for (int64_t r = 0; r < reps; ++r) {
    const Seconds s = timed(f);
    if (s.wall < best.wall) best = s;
  }
  return best;
}

// Writes `n` bytes to `path` (replacing what is there) and fsyncs it, as a careful program would.
void plain_write(const std::string& path, const char* data, size_t n) {
  const int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
  check_sys(fd >= 0, "open", path);
  for (size_t done = 0; done < n;) {
    const ssize_t w = ::write(fd, data + done, std::min<size_t>(n - done, size_t{1} << 30));
    check_sys(w > 0, "write", path);
    done += static_cast<size_t>(w);
  }
  check_sys(::fsync(fd) == 0 && ::close(fd) == 0, "fsync", path);
}

// Reads all `n` bytes of `path` into `buf`.
void plain_read(const std::string& path, char* buf, size_t n) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  check_sys(fd >= 0, "open", path);
  for (size_t done = 0; done < n;) {
    const ssize_t r = ::read(fd, buf + done, std::min<size_t>(n - done, size_t{1} << 30));
    check_sys(r > 0, "read", path);
    done += static_cast<size_t>(r);
  }
  ::close(fd);
}

// The JSON figures of one timed operation.
Json timing(const char* what, Seconds s) {
  return {{"operation", what}, {"wall_ms", s.wall * 1e3}, {"cpu_ms", s.cpu * 1e3}};
}

void throughput_row(const char* what, double bytes, Seconds s, double reference_mbs, Json& rows) {
  const double mbs = bytes / s.wall / 1e6;
  std::printf("| %-30s | %8.1f | %8.1f | %8.0f | %5.2f |\n", what, s.wall * 1e3, s.cpu * 1e3, mbs, mbs / reference_mbs);
  Json row = timing(what, s);
  row["mb_per_s"] = mbs;
  row["ratio"] = mbs / reference_mbs;
  rows.push_back(std::move(row));
}

// Large tensors: save and load against plain write and read of the same bytes
// on the same file system.
void bench_large(const std::string& dir, int64_t mib, int64_t reps, Json& figures) {
  constexpr int64_t kTensors = 8;
  const int64_t each = mib * (int64_t{1} << 20) / 4 / kTensors;
  io::StateDict dict;
  for (int64_t i = 0; i < kTensors; ++i) dict.set(fmt::format("layer{}.weight", i), full({each}, 0.25 + i));
  const std::string path = dir + "/large.safetensors", plain = dir + "/large.bin";
  const std::string same = io::to_safetensors_bytes(dict);
  const size_t bytes = same.size();
  const Seconds w_plain = best_timed(reps, [&] { plain_write(plain, same.data(), bytes); });
  const Seconds w_save = best_timed(reps, [&] { io::save_safetensors(path, dict); });
  // Reads land in memory that is already mapped: a reused buffer for the plain
  // read, mixt's block cache for the loader (after the first run).
  std::string buffer(bytes, '\0');
  const Seconds r_plain = best_timed(reps, [&] { plain_read(plain, buffer.data(), bytes); });
  const Seconds r_load = best_timed(reps, [&] {
    if (io::load_safetensors(path).tensors.size() != static_cast<size_t>(kTensors)) throw std::runtime_error("count");
  });
  std::printf("\nlarge: %lld float32 tensors, %.1f MB in all, in '%s' (best of %lld; reads from the page cache)\n\n",
              static_cast<long long>(kTensors), static_cast<double>(bytes) / 1e6, dir.c_str(),
              static_cast<long long>(reps));
  std::printf("| %-30s | %8s | %8s | %8s | %5s |\n|---|---|---|---|---|\n", "operation", "wall ms", "CPU ms", "MB/s",
              "ratio");
  const double b = static_cast<double>(bytes);
  Json rows = Json::array();
  throughput_row("plain write + fsync", b, w_plain, b / w_plain.wall / 1e6, rows);
  throughput_row("save_safetensors (atomic)", b, w_save, b / w_plain.wall / 1e6, rows);
  throughput_row("plain read", b, r_plain, b / r_plain.wall / 1e6, rows);
  throughput_row("load_safetensors", b, r_load, b / r_plain.wall / 1e6, rows);
  figures["large"] = {{"tensors", kTensors}, {"bytes", bytes}, {"reps", reps}, {"rows", rows}};
  fs::remove(path);
  fs::remove(plain);
}

// Many small tensors: tensors/s of save and load.
void bench_small(const std::string& dir, int64_t count, int64_t reps, Json& figures) {
  io::StateDict dict;
  const Tensor value = full({4}, 1.5);
  for (int64_t i = 0; i < count; ++i) dict.tensors.emplace_back(fmt::format("block.{}.bias", i), value);
  const std::string path = dir + "/small.safetensors";
  const Seconds save = best_timed(reps, [&] { io::save_safetensors(path, dict); });
  const Seconds load = best_timed(reps, [&] {
    if (io::load_safetensors(path).tensors.size() != dict.tensors.size()) throw std::runtime_error("small: count");
  });
  const Seconds set = best_timed(reps, [&] {
    io::StateDict built;
    for (const auto& [n, t] : dict.tensors) built.set(n, t);
    for (const auto& [n, t] : dict.tensors)
      if (built.find(n) == nullptr) throw std::runtime_error("small: find failed");
  });
  std::printf("\nsmall: %lld float32 tensors of 4 elements, file of %.1f MB (best of %lld)\n\n",
              static_cast<long long>(count), static_cast<double>(fs::file_size(path)) / 1e6,
              static_cast<long long>(reps));
  std::printf("| %-30s | %8s | %8s | %12s |\n|---|---|---|---|\n", "operation", "wall ms", "CPU ms", "tensors/s");
  const double n = static_cast<double>(count);
  Json rows = Json::array();
  for (const auto& [what, s] : {std::pair{"save_safetensors", save}, std::pair{"load_safetensors", load},
                                std::pair{"StateDict set + find of each", set}}) {
    std::printf("| %-30s | %8.1f | %8.1f | %12.0f |\n", what, s.wall * 1e3, s.cpu * 1e3, n / s.wall);
    Json row = timing(what, s);
    row["tensors_per_s"] = n / s.wall;
    rows.push_back(std::move(row));
  }
  figures["small"] = {{"tensors", count}, {"reps", reps}, {"rows", rows}};
  fs::remove(path);
}

// A file whose header is `header` and whose data buffer is empty.
std::string file_of(const std::string& header) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header;
}

// The header entry of a zero-size float32 tensor called `name`.
std::string empty_entry(const std::string& name) {
  return fmt::format("\"{}\":{{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[0,0]}}", name);
}

// Parses `bytes`; prints the time and whether they loaded or were refused.
void header_row(const char* what, const std::string& bytes, Json& rows) {
  std::string outcome;
  const Seconds s = timed([&] {
    try {
      outcome = fmt::format("loaded {} tensors", io::from_safetensors_bytes(bytes).tensors.size());
    } catch (const Error& e) {
      outcome = "refused";
    }
  });
  std::printf("| %-46s | %8.2f | %8.3f | %8.3f | %-21s |\n", what, static_cast<double>(bytes.size()) / 1e6, s.wall,
              s.cpu, outcome.c_str());
  std::fflush(stdout);
  rows.push_back({{"file", what}, {"mb", static_cast<double>(bytes.size()) / 1e6}, {"wall_s", s.wall},
                  {"cpu_s", s.cpu}, {"outcome", outcome}});
}

// Header parsing: files built to be slow to parse.
void bench_headers(int64_t header_mb, Json& figures) {
  Json rows = Json::array();
  std::printf("\nheaders: time to parse or refuse crafted files (in memory)\n\n");
  std::printf("| %-46s | %8s | %8s | %8s | %-21s |\n|---|---|---|---|---|\n", "file", "MB", "wall s", "CPU s",
              "outcome");
  std::string h = "{";
  for (int i = 0; i < 50'000; ++i) h += fmt::format("\"{}\":{{}},", i);
  h.back() = '}';
  header_row("50,000 empty objects", file_of(h), rows);
  for (int count : {20'000, 200'000}) {
    h.clear();
    h.push_back('{');
    for (int i = 0; i < count; ++i) h.append(empty_entry(fmt::format("t{}", i))).append(",");
    h.back() = '}';
    header_row(fmt::format("{} zero-size tensors", count).c_str(), file_of(h), rows);
  }
  // Near the size limit: zero-size tensors, the last one malformed (refused after a full parse).
  const size_t limit = static_cast<size_t>(header_mb) * 1'000'000;
  h.clear();
  h.push_back('{');
  for (int i = 0; h.size() + 200 < limit; ++i) h.append(empty_entry(fmt::format("t{}", i))).append(",");
  h += "\"last\":{}}";
  header_row(fmt::format("{:.0f} MB of zero-size tensors, last one bad", static_cast<double>(h.size()) / 1e6).c_str(),
             file_of(h), rows);
  figures["headers"] = rows;
}

}  // namespace

int run_io(const cli::Args& args) {
  const int64_t mib = args.integer("--mib");
  const int64_t small = args.integer("--small");
  const int64_t reps = args.integer("--reps");
  const int64_t header_mb = args.integer("--header-mb");
  const std::vector<std::string> only = args.list("--only");
  const auto part = [&](const char* name) { return std::find(only.begin(), only.end(), name) != only.end(); };
  std::string dir = args.text("--dir");
  const bool own_dir = dir.empty();
  if (own_dir) {
    dir = (fs::temp_directory_path() / fmt::format("mixt_bench_io_{}", ::getpid())).string();
    fs::create_directories(dir);
  }
  std::printf("mixt-bench io: safetensors save/load on the CPU\n");
  Json figures = {{"command", "io"}};
  try {
    if (part("large")) bench_large(dir, mib, reps, figures);
    if (part("small")) bench_small(dir, small, reps, figures);
    if (part("headers")) bench_headers(header_mb, figures);
  } catch (...) {
    if (own_dir) fs::remove_all(dir);
    throw;
  }
  if (own_dir) fs::remove_all(dir);
  write_figures(args.text("--json"), figures);
  return 0;
}

cli::Command io_command() {
  using cli::Kind;
  return {.name = "io",
          .summary = "safetensors save/load against plain file I/O, many small tensors, crafted headers",
          .options = {{.name = "--mib", .kind = Kind::Int, .metavar = "M", .help = "MiB in the large part, 8 tensors",
                       .default_value = "1024", .max = int64_t{1} << 20},
                      {.name = "--small", .kind = Kind::Int, .metavar = "N",
                       .help = "tensors of 4 float32 elements in the small part", .default_value = "200000"},
                      {.name = "--reps", .kind = Kind::Int, .metavar = "R", .help = "timed runs, the best is shown",
                       .default_value = "3"},
                      {.name = "--header-mb", .kind = Kind::Int, .metavar = "H",
                       .help = "MB of the largest crafted header; the loader's limit is 100",
                       .default_value = "99", .max = 1000},
                      {.name = "--dir", .kind = Kind::Text, .metavar = "PATH",
                       .help = "folder for the files (default: a new folder in the temp dir, removed after)"},
                      {.name = "--only", .kind = Kind::List, .metavar = "PARTS", .help = "the parts to run",
                       .default_value = "large,small,headers", .choices = {"large", "small", "headers"}},
                      cli::json_option()},
          .run = run_io};
}

}  // namespace mixt::bench
