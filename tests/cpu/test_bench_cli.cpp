// mixt-bench's option parser (bench/bench_cli.h): help exits 0 on stdout; unknown
// options, missing or malformed values and stray words exit 2 with the usage on
// stderr before the command runs; defaults fill what is not given; `--device cuda`
// without a usable GPU fails with "CUDA is not available" (exit 1). And the two
// commands whose --device used to be ignored: `policy --device cuda` prints CUDA's
// table, `explain --device cuda` rehearses CUDA's float16 policy on the CPU.
#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include <mixt/mixt.h>
#include <mixt/runtime/cuda.h>

#include "bench_autocast.h"
#include "bench_kernels.h"
#include "bench_train_step.h"
#include "bench_cli.h"
#include "torch_compare.h"
#include "temp_dir.h"
#include "test_util.h"

using namespace mixt;
using namespace mixt::bench;
using Catch::Contains;
using Catch::StartsWith;
using mixt::testing::error_of;
using mixt::testing::read_file;

namespace {

// What one run of run_main printed and returned.
struct Run {
  int status = -1;
  std::string out, err;
};

// Points file descriptor `fd` at a temporary file until destroyed, then restores it.
class Capture {
 public:
  explicit Capture(int fd) : fd_(fd), file_(std::tmpfile()), saved_(::dup(fd)) {
    std::fflush(nullptr);
    ::dup2(::fileno(file_), fd_);
  }
  ~Capture() {
    restore();
    std::fclose(file_);
  }
  // Restores the descriptor and returns what was written to it.
  std::string text() {
    restore();
    std::string s;
    std::rewind(file_);
    for (int c; (c = std::fgetc(file_)) != EOF;) s.push_back(static_cast<char>(c));
    return s;
  }

 private:
  void restore() {
    if (saved_ < 0) return;
    std::fflush(nullptr);
    ::dup2(saved_, fd_);
    ::close(saved_);
    saved_ = -1;
  }
  int fd_;
  std::FILE* file_;
  int saved_;
};

// Runs `main_of(argc, argv)` for `program <words...>`, capturing stdout and stderr.
template <class Main>
Run run_captured(const char* program, const std::vector<std::string>& words, Main&& main_of) {
  std::vector<const char*> argv = {program};
  for (const std::string& w : words) argv.push_back(w.c_str());
  Run r;
  Capture out(1), err(2);
  r.status = main_of(static_cast<int>(argv.size()), argv.data());
  r.out = out.text();
  r.err = err.text();
  return r;
}

// Runs `mixt-bench <words...>` against `commands`.
Run run(const std::vector<cli::Command>& commands, const std::vector<std::string>& words) {
  return run_captured("mixt-bench", words, [&](int argc, const char* const* argv) {
    return cli::run_main(commands, argc, argv);
  });
}

// A command with one option of each kind that records what it was run with.
struct Probe {
  int runs = 0;
  int64_t iters = 0, reps = 0;
  std::string dir;
  std::vector<std::string> only;
  bool quick = false;
  Device device;

  std::vector<cli::Command> commands(bool needs_usable_device = false) {
    using cli::Kind;
    cli::Command c{.name = "probe",
                   .summary = "records its options",
                   .options = {{.name = "--iters", .kind = Kind::Int, .metavar = "N", .help = "calls",
                                .default_value = "200000"},
                               {.name = "--reps", .kind = Kind::Int, .metavar = "R", .help = "runs",
                                .default_value = "3", .min = 1, .max = 10},
                               {.name = "--dir", .kind = Kind::Text, .metavar = "PATH", .help = "folder"},
                               {.name = "--only", .kind = Kind::List, .metavar = "PARTS", .help = "parts",
                                .default_value = "large,small", .choices = {"large", "small", "headers"}},
                               {.name = "--quick", .kind = Kind::Flag, .help = "fewer runs"},
                               cli::device_option("where", needs_usable_device)},
                   .run = [this](const cli::Args& a) {
                     ++runs;
                     iters = a.integer("--iters");
                     reps = a.integer("--reps");
                     dir = a.text("--dir");
                     only = a.list("--only");
                     quick = a.flag("--quick");
                     device = a.device();
                     return 0;
                   }};
    cli::Command other{.name = "other", .summary = "does nothing", .run = [](const cli::Args&) { return 0; }};
    return {c, other};
  }
};

// Checks that `words` are refused with exit status 2, `message` and the usage on stderr, and nothing run.
void check_refused(const std::vector<std::string>& words, const std::string& message) {
  Probe p;
  const Run r = run(p.commands(), words);
  INFO(r.err);
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, StartsWith("mixt-bench probe: " + message + "\n"));
  CHECK_THAT(r.err, Contains("usage: mixt-bench probe [--iters N] [--reps R]"));
  CHECK(p.runs == 0);
}

}  // namespace

TEST_CASE("mixt-bench --help lists the subcommands; none or an unknown one exits 2", "[bench_cli]") {
  Probe p;
  for (const char* help : {"--help", "-h"}) {
    const Run r = run(p.commands(), {help});
    CHECK(r.status == 0);
    CHECK_THAT(r.out, StartsWith("usage: mixt-bench <subcommand> [options]\n"));
    CHECK_THAT(r.out, Contains("  probe  records its options\n") && Contains("  other  does nothing\n"));
    CHECK(r.err.empty());
  }
  const Run none = run(p.commands(), {});
  CHECK(none.status == 2);
  CHECK(none.out.empty());
  CHECK_THAT(none.err, StartsWith("usage: mixt-bench <subcommand>"));
  const Run unknown = run(p.commands(), {"probes", "--iters", "3"});
  CHECK(unknown.status == 2);
  CHECK_THAT(unknown.err, StartsWith("mixt-bench: unknown subcommand 'probes'\nusage: mixt-bench <subcommand>"));
  CHECK(p.runs == 0);
}

TEST_CASE("a subcommand's --help prints its usage to stdout and exits 0 without running it", "[bench_cli]") {
  for (const std::vector<std::string>& words :
       {std::vector<std::string>{"probe", "--help"}, {"probe", "-h"}, {"probe", "--iters", "5", "--help"}}) {
    Probe p;
    const Run r = run(p.commands(), words);
    CHECK(r.status == 0);
    CHECK(r.err.empty());
    CHECK(p.runs == 0);
    CHECK_THAT(r.out, StartsWith("usage: mixt-bench probe [--iters N] [--reps R] [--dir PATH] [--only PARTS] "
                                 "[--quick] [--device cpu|cuda]\nrecords its options\n"));
    CHECK_THAT(r.out, Contains("  --iters N          calls (default: 200000)\n"));
    CHECK_THAT(r.out, Contains("  --quick            fewer runs\n"));
    CHECK_THAT(r.out, Contains("  -h, --help         print this help and exit\n"));
  }
}

TEST_CASE("an unknown option exits 2 with the error and the usage on stderr", "[bench_cli]") {
  check_refused({"probe", "--iter", "5"}, "unknown option '--iter'");
  check_refused({"probe", "--iters", "5", "-x"}, "unknown option '-x'");
  check_refused({"probe", "--quick=yes"}, "--quick takes no value");
}

TEST_CASE("an option without its value exits 2", "[bench_cli]") {
  check_refused({"probe", "--iters"}, "--iters needs a value N");
  check_refused({"probe", "--iters", "--reps", "2"}, "--iters needs a value N");
  check_refused({"probe", "--dir"}, "--dir needs a value PATH");
}

TEST_CASE("a malformed or out-of-range number exits 2", "[bench_cli]") {
  check_refused({"probe", "--iters", "12x"}, "--iters expects an integer N, got '12x'");
  check_refused({"probe", "--iters", "1e6"}, "--iters expects an integer N, got '1e6'");
  check_refused({"probe", "--iters", ""}, "--iters expects an integer N, got ''");
  check_refused({"probe", "--iters", " 3"}, "--iters expects an integer N, got ' 3'");
  check_refused({"probe", "--iters=abc"}, "--iters expects an integer N, got 'abc'");
  check_refused({"probe", "--iters", "0"}, "--iters must be at least 1, got 0");
  check_refused({"probe", "--iters", "-5"}, "--iters must be at least 1, got -5");
  check_refused({"probe", "--reps", "11"}, "--reps must be between 1 and 10, got 11");
  check_refused({"probe", "--iters", "99999999999999999999"},
                "--iters 99999999999999999999: out of the range of a 64-bit integer");
}

TEST_CASE("stray words, repeated options, bad list items and bad devices exit 2", "[bench_cli]") {
  check_refused({"probe", "cuda"}, "unexpected argument 'cuda'");
  check_refused({"probe", "--iters", "5", "6"}, "unexpected argument '6'");
  check_refused({"probe", "--iters", "5", "--iters=6"}, "--iters given twice");
  check_refused({"probe", "--quick", "--quick"}, "--quick given twice");
  check_refused({"probe", "--only", "large,fast"}, "--only: unknown item 'fast' in 'large,fast' (items: large, small, headers)");
  check_refused({"probe", "--only", "large,"}, "--only: unknown item '' in 'large,' (items: large, small, headers)");
  check_refused({"probe", "--device", "gpu"}, "--device expects cpu or cuda[:N], got 'gpu'");
  check_refused({"probe", "--device", "meta"}, "--device expects cpu or cuda[:N], got 'meta'");
}

TEST_CASE("options not given take their defaults; given ones, in either spelling, override them", "[bench_cli]") {
  Probe p;
  const Run defaults = run(p.commands(), {"probe"});
  CHECK(defaults.status == 0);
  CHECK(p.runs == 1);
  CHECK(p.iters == 200000);
  CHECK(p.reps == 3);
  CHECK(p.dir.empty());
  CHECK(p.only == std::vector<std::string>{"large", "small"});
  CHECK_FALSE(p.quick);
  CHECK(p.device == Device::cpu());

  const Run given = run(p.commands(), {"probe", "--iters", "7", "--reps=10", "--dir", "/x y", "--only", "headers",
                                       "--quick"});
  CHECK(given.status == 0);
  CHECK(p.runs == 2);
  CHECK(p.iters == 7);
  CHECK(p.reps == 10);
  CHECK(p.dir == "/x y");
  CHECK(p.only == std::vector<std::string>{"headers"});
  CHECK(p.quick);

  cli::Command c = p.commands()[0];
  const std::vector<std::string> words = {"--iters", "9"};
  const cli::Args a = cli::parse(c, words);
  CHECK(a.given("--iters"));
  CHECK_FALSE(a.given("--reps"));
  CHECK(a.integer("--reps") == 3);
  CHECK_THROWS_AS(a.text("--iters"), std::logic_error);  // asked as the wrong kind: a bug in the command
}

TEST_CASE("--device cuda without a usable GPU fails with 'CUDA is not available' (exit 1)", "[bench_cli]") {
  if (cuda::is_available()) {
    Probe p;
    CHECK(run(p.commands(/*needs_usable_device=*/true), {"probe", "--device", "cuda"}).status == 0);
    CHECK(p.device == Device::cuda(0));
    return;
  }
  const std::string reason = cuda::unavailable_reason();
  REQUIRE_FALSE(reason.empty());
  CHECK_THAT(error_of([] { cli::require_usable(Device::cuda(0)); }),
             Contains("--device cuda:0") && Contains("CUDA is not available: " + reason));
  CHECK_NOTHROW(cli::require_usable(Device::cpu()));

  Probe p;
  const Run r = run(p.commands(/*needs_usable_device=*/true), {"probe", "--device", "cuda"});
  CHECK(r.status == 1);
  CHECK(p.runs == 0);
  CHECK(r.out.empty());
  CHECK_THAT(r.err, StartsWith("mixt-bench probe: ") && Contains("CUDA is not available: " + reason));
  // A command that runs nothing on the device (a policy table) takes cuda as a name.
  const Run named = run(p.commands(/*needs_usable_device=*/false), {"probe", "--device", "cuda:1"});
  CHECK(named.status == 0);
  CHECK(p.device == Device::cuda(1));
}

TEST_CASE("a standalone program (mixt-bench-allreduce): its own usage, sizes with K/M/G, exit 2 on bad lines",
          "[bench_cli]") {
  std::vector<int64_t> sizes;
  int runs = 0;
  const cli::Command program{
      .name = "mixt-bench-x",
      .summary = "one command",
      .options = {{.name = "--sizes", .kind = cli::Kind::Sizes, .metavar = "LIST", .help = "bytes",
                   .default_value = "4K,1M", .min = 4, .max = int64_t{1} << 30}},
      .run = [&](const cli::Args& a) {
        ++runs;
        sizes = a.sizes("--sizes");
        return 0;
      },
      .standalone = true};
  auto run_x = [&](const std::vector<std::string>& words) {
    return run_captured("mixt-bench-x", words,
                        [&](int argc, const char* const* argv) { return cli::run_program(program, argc, argv); });
  };
  const Run help = run_x({"--help"});
  CHECK(help.status == 0);
  CHECK_THAT(help.out, StartsWith("usage: mixt-bench-x [--sizes LIST]\none command\n"));
  CHECK(run_x({}).status == 0);
  CHECK(sizes == std::vector<int64_t>{4096, 1 << 20});
  CHECK(run_x({"--sizes", "4,5K,2M,1G"}).status == 0);
  CHECK(sizes == std::vector<int64_t>{4, 5 << 10, 2 << 20, int64_t{1} << 30});
  CHECK(runs == 2);
  for (const auto& [word, message] : std::vector<std::pair<std::string, std::string>>{
           {"4K,3X", "--sizes: '3X' in '4K,3X' is not a byte count (N, or N with K, M or G)"},
           {"4K,", "--sizes: '' in '4K,' is not a byte count"},
           {"K", "--sizes: 'K' in 'K' is not a byte count"},
           {"-4K", "--sizes: -4K is outside [4, 1073741824] bytes"},
           {"2G", "--sizes: 2G is outside [4, 1073741824] bytes"},
           {"3", "--sizes: 3 is outside [4, 1073741824] bytes"},
           {"99999999999999999999G", "is not a byte count"}}) {
    INFO(word);
    const Run r = run_x({"--sizes", word});
    CHECK(r.status == 2);
    CHECK_THAT(r.err, StartsWith("mixt-bench-x: ") && Contains(message) && Contains("usage: mixt-bench-x [--sizes"));
  }
  CHECK(runs == 2);
  const Run unknown = run_x({"--size", "4K"});
  CHECK(unknown.status == 2);
  CHECK_THAT(unknown.err, StartsWith("mixt-bench-x: unknown option '--size'\nusage: mixt-bench-x"));
}

TEST_CASE("a command that raises exits 1 with its error on stderr", "[bench_cli]") {
  const std::vector<cli::Command> commands = {
      {.name = "fail", .summary = "fails", .run = [](const cli::Args&) -> int { throw std::runtime_error("disk full"); }}};
  const Run r = run(commands, {"fail"});
  CHECK(r.status == 1);
  CHECK(r.err == "mixt-bench fail: disk full\n");
}

TEST_CASE("mixt-bench policy --device cuda prints CUDA's table, not the CPU's", "[bench_cli]") {
  const std::vector<cli::Command> commands = {policy_command()};
  const std::string cuda_table = autocast::describe_policies(DeviceType::CUDA, /*markdown=*/false);
  REQUIRE(cuda_table != autocast::describe_policies(DeviceType::CPU, /*markdown=*/false));
  for (const std::vector<std::string>& words :
       {std::vector<std::string>{"policy", "--device", "cuda"}, {"policy", "cuda"}, {"policy", "--device=cuda"}}) {
    const Run r = run(commands, words);
    CHECK(r.status == 0);
    CHECK_THAT(r.out, StartsWith("autocast policies on cuda ") && Contains(cuda_table));
  }
  const Run cpu = run(commands, {"policy"});
  CHECK_THAT(cpu.out, StartsWith("autocast policies on cpu ") &&
                          Contains(autocast::describe_policies(DeviceType::CPU, /*markdown=*/false)));
  CHECK(run(commands, {"policy", "cuda", "--device", "cpu"}).status == 2);

  mixt::testing::TempDir dir;
  const std::string path = dir.file("policy.json");
  const Run json = run(commands, {"policy", "--device", "cuda", "--json", path});
  CHECK(json.status == 0);
  CHECK_THAT(json.out, Contains("JSON written to " + path));
  const auto doc = nlohmann::json::parse(read_file(path));
  CHECK(doc["device"] == "cuda");
  CHECK(doc["ops"]["mm"] == "lower");
  CHECK(doc["ops"]["binary_cross_entropy"] == "banned");  // banned on CUDA only
  CHECK(doc["ops"].size() == static_cast<size_t>(num_ops()));
}

TEST_CASE("mixt-bench explain --device cuda rehearses CUDA's float16 policy on the CPU without a GPU", "[bench_cli]") {
  const std::vector<cli::Command> commands = {explain_command()};
  mixt::testing::TempDir dir;
  const std::string path = dir.file("explain.json");
  // Without a GPU, cuda rehearses; with one, --rehearse asks for the same run.
  std::vector<std::string> words = {"explain", "--device", "cuda", "--json", path};
  if (cuda::is_available()) words.push_back("--rehearse");
  const Run r = run(commands, words);
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, StartsWith("explain: the demo model's forward under CUDA float16 autocast, rehearsed on the CPU ("));
  if (!cuda::is_available()) CHECK_THAT(r.out, Contains("(CUDA is not available: " + cuda::unavailable_reason() + ")"));
  const auto doc = nlohmann::json::parse(read_file(path));
  int lowered = 0;
  for (const auto& rec : doc["ops"]) {
    CHECK(rec["device"] == "cpu");
    CHECK(rec["policy_device"] == "cuda");
    if (rec["op"] == "linear") {
      CHECK(rec["outputs"][0] == "float16");
      ++lowered;
    }
  }
  CHECK(lowered > 0);

  const Run cpu = run(commands, {"explain", "--json", path});
  CHECK(cpu.status == 0);
  CHECK_THAT(cpu.out, StartsWith("explain: the demo model's forward under CPU bfloat16 autocast\n"));
  const auto cpu_doc = nlohmann::json::parse(read_file(path));
  for (const auto& rec : cpu_doc["ops"]) {
    CHECK(rec["policy_device"] == "cpu");
    if (rec["op"] == "linear") CHECK(rec["outputs"][0] == "bfloat16");
  }
  const Run bad = run(commands, {"explain", "--rehearse"});
  CHECK(bad.status == 2);
  CHECK_THAT(bad.err, StartsWith("mixt-bench explain: --rehearse needs --device cuda\nusage:"));
}

TEST_CASE("mixt-bench kernels --small measures every kernel against the copy rate; cuda needs a GPU", "[bench_cli]") {
  const std::vector<cli::Command> commands = {kernels_command()};
  mixt::testing::TempDir dir;
  const std::string path = dir.file("kernels.json");
  const Run r = run(commands, {"kernels", "--small", "--reps", "1", "--json", path});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, StartsWith("mixt-bench kernels on cpu: median of 1 runs"));
  const auto doc = nlohmann::json::parse(read_file(path));
  CHECK(doc["device"] == "cpu");
  CHECK(doc["copy_gbs"].get<double>() > 0);
  CHECK(doc["small_op_host_us"].get<double>() > 0);
  std::vector<std::string> names;
  for (const auto& row : doc["rows"]) {
    names.push_back(row["kernel"]);
    INFO(row.dump());
    CHECK(row["ms"].get<double>() > 0);
    CHECK(row["gbs"].get<double>() > 0);
    CHECK(row["x_copy"].get<double>() > 0);
  }
  REQUIRE(names.size() == 26);
  for (const char* kernel : {"cast float32 -> bfloat16", "cast bfloat16 -> float32", "where float32 (random condition)",
                             "contiguous() of a transposed float32 matrix", "softmax [256, 4096] bf16",
                             "rms_norm [256, 4096] bf16", "layer_norm_backward [256, 4096] bf16",
                             "gelu_backward [256, 4096] bf16", "gelu_backward as separate ops [256, 4096] bf16",
                             "cross_entropy fwd+bwd [256, 4096] bf16",
                             "cross_entropy fwd+bwd as separate ops [256, 4096] bf16",
                             "unscale+check 2e+06 f32 in 2000 tensors",
                             "fused AdamW over 1e+06 f32 parameters"})
    CHECK(std::find(names.begin(), names.end(), kernel) != names.end());
  // The issue's targets ride along in the rows that have one.
  CHECK(doc["rows"][2]["target_x_copy"].get<double>() == 0.9);

  if (!cuda::is_available()) {
    const Run cuda = run(commands, {"kernels", "--device", "cuda", "--small"});
    CHECK(cuda.status == 1);
    CHECK_THAT(cuda.err, Contains("CUDA is not available"));
  }
  CHECK(run(commands, {"kernels", "--reps", "0"}).status == 2);
}

TEST_CASE("mixt-bench train-step: one row per precision, the step slower than its GEMMs alone", "[bench_cli]") {
  const std::vector<cli::Command> commands = {train_step_command()};
  mixt::testing::TempDir dir;
  const std::string path = dir.file("train_step.json");
  const Run r = run(commands, {"train-step", "--precision", "f32,bf16,fp16", "--tokens", "32", "--dim", "64",
                               "--layers", "2", "--steps", "1", "--json", path});
  INFO(r.err);
  REQUIRE(r.status == 0);
  CHECK_THAT(r.out, StartsWith("mixt-bench train-step on cpu: 32 tokens, 2 x (Linear 64 + GELU)"));
  const auto doc = nlohmann::json::parse(read_file(path));
  REQUIRE(doc["rows"].size() == 3);
  for (const auto& row : doc["rows"]) {
    INFO(row.dump());
    CHECK(row["ms_per_step"].get<double>() > 0);
    CHECK(row["gemm_floor_ms"].get<double>() > 0);
    CHECK(std::isfinite(row["final_loss"].get<double>()));
    CHECK(row["final_loss"].get<double>() > 0);
  }
  CHECK(doc["rows"][2]["precision"] == "fp16");
  CHECK(run(commands, {"train-step", "--precision", "fp8"}).status == 2);
  if (!cuda::is_available()) CHECK(run(commands, {"train-step", "--device", "cuda"}).status == 1);
}

// mixt-torch-compare's logic (bench/torch_compare.h) against a peer made of mixt ops:
// the same op agrees, a different one is reported, a missing one is skipped.
TEST_CASE("torch-compare: the agreement check catches differences beyond the tolerance", "[bench_cli]") {
  using compare::agreement;
  const float nan = std::nanf(""), inf = INFINITY;
  const std::vector<float> a = {1.0f, -2.0f, 0.0f, inf, nan};
  CHECK(agreement(a, a, {}).agree());
  CHECK(agreement(a, a, {}).max_abs == 0);
  const std::vector<float> close = {1.00001f, -2.0f, 1e-7f, inf, nan};
  const compare::Agreement within = agreement(a, close, {.atol = 1e-6, .rtol = 1e-4});
  CHECK(within.agree());
  CHECK(within.max_abs == Approx(1e-5).epsilon(0.05));
  CHECK(within.max_rel == 1.0);  // 0 against 1e-7: relative differences near zero are large, hence atol
  const compare::Agreement beyond = agreement(a, close, {.atol = 1e-8, .rtol = 1e-6});
  CHECK(beyond.mismatched == 2);  // 1 vs 1.00001 and 0 vs 1e-7
  const std::vector<float> number = {1.0f, -2.0f, 0.0f, inf, 3.0f}, opposite = {1.0f, -2.0f, 0.0f, -inf, nan};
  CHECK(agreement(a, number, {.atol = 1, .rtol = 1}).mismatched == 1);    // NaN vs a number
  CHECK(agreement(a, opposite, {.atol = 1, .rtol = 1}).mismatched == 1);  // opposite infinities
  const std::vector<float> one = {1.0f};
  const compare::Agreement sizes = agreement(a, one, {.atol = 1, .rtol = 1});
  CHECK(sizes.mismatched == 5);
  CHECK(std::isinf(sizes.max_abs));
}

TEST_CASE("torch-compare: bytes and FLOPs per op, the share of the copy rate, the table", "[bench_cli]") {
  const compare::Inputs in = compare::make_inputs(8, 4);
  std::map<std::string, compare::Work> work;
  for (const compare::OpSpec& s : compare::op_specs()) work[s.id] = s.work(in);
  CHECK(work["add"].bytes == 12 * 64);            // reads x and y, writes the sum
  CHECK(work["softmax"].bytes == 8 * 64);         // float32 in, float32 out
  CHECK(work["softmax_bf16"].bytes == 4 * 64);    // bfloat16 in and out
  CHECK(work["add_bf16"].bytes == 6 * 64);        // two bfloat16 inputs, one output
  CHECK(work["cast_bf16"].bytes == 6 * 64);       // float32 in, bfloat16 out
  CHECK(work["sum"].bytes == 4 * 64 + 4 * 8);     // a row of 8 sums out
  CHECK(work["sum_dim0"].bytes == 4 * 64 + 4 * 8);
  CHECK(work["mm_bf16"].bytes == 0);
  CHECK(work["mm_bf16"].flops == 2 * 64);
  CHECK(compare::copy_share({.bytes = 8e9}, 2.0, 8e9) == 0.5);
  CHECK(compare::copy_share({.flops = 1e9}, 1.0, 8e9) == 0);

  compare::Row add{.id = "add", .label = "add f32", .work = {.bytes = 8e6}, .mixt = {0.002, 0.003},
                   .peer = {0.001, 0.001}};
  compare::Row mm{.id = "mm", .label = "mm f32", .work = {.flops = 4e9}, .mixt = {0.1, 0.1}, .peer = {0.2, 0.3},
                  .agreement = {.max_abs = 0.5, .max_rel = 0.25, .mismatched = 7}, .tolerance = {.atol = 0.01, .rtol = 0.001}};
  compare::Row rms{.id = "rms_norm", .label = "rms_norm f32", .work = {.bytes = 8e6}, .mixt = {0.004, 0.004},
                   .skipped = "the peer has none"};
  const std::vector<compare::Row> rows = {add, mm, rms};
  const std::string table = compare::format_table(rows, "Peer 9.1", 8e9);
  INFO(table);
  CHECK_THAT(table, StartsWith("| op "));
  CHECK_THAT(table, Contains("mixt / Peer"));
  // add: 2 ms against 1 ms; 8 MB in 2 ms is 4 GB/s, half the 8 GB/s copy rate.
  CHECK_THAT(table, Contains("|       2.000 / 3.000 |       1.000 / 1.000 |            2.00 |     0.50 xcopy |     1.00 xcopy |   yes |"));
  CHECK_THAT(table, Contains("|            0.50 |   40.0 GFLOP/s |   20.0 GFLOP/s |    NO |"));
  CHECK_THAT(table, Contains("NOTE: mm: the results differ: 7 elements beyond atol 0.01 + rtol 0.001 (max abs diff 0.5, "
                             "max rel diff 0.25)"));
  CHECK_THAT(table, Contains("NOTE: rms_norm: not compared: the peer has none"));
  CHECK_THAT(table, !Contains("NOTE: add"));
  const Json json = compare::rows_json(rows, 8e9);
  REQUIRE(json.size() == 3);
  CHECK(json[0]["ratio"].get<double>() == Approx(2.0));
  CHECK(json[0]["mixt_x_copy"].get<double>() == Approx(0.5));
  CHECK(json[1]["agree"] == false);
  CHECK(json[2]["skipped"] == "the peer has none");
  CHECK(!json[2].contains("ratio"));
}

TEST_CASE("torch-compare: each op timed against the peer, disagreements and missing ops noted", "[bench_cli]") {
  namespace F = nn::functional;
  int peer_threads = 0;
  // The peer: mixt's own add and mm (so they agree), exp in place of softmax (so it does
  // not), and no rms_norm.
  const compare::Peer peer{
      .name = "Fake 0.1",
      .set_threads = [&](int t) { peer_threads = t; },
      .describe_threads = [] { return std::string("Fake: serial"); },
      .side = [](const compare::OpSpec& spec, const compare::Inputs& in) -> compare::PeerSide {
        std::function<Tensor()> f;
        if (spec.id == "add") f = [&in] { return add(in.x, in.y); };
        if (spec.id == "softmax") f = [&in] { return exp(in.x); };
        if (spec.id == "mm") f = [&in] { return mm(in.a, in.b); };
        if (!f) return {.skipped = "Fake has no " + spec.id};
        return {.call = [f] { (void)f(); }, .values = [f] { return compare::values_of(f()); }};
      }};
  const cli::Command program = compare::command("mixt-torch-compare", peer);
  auto run_compare = [&](const std::vector<std::string>& words) {
    return run_captured("mixt-torch-compare", words,
                        [&](int argc, const char* const* argv) { return cli::run_program(program, argc, argv); });
  };
  mixt::testing::TempDir dir;
  const std::string path = dir.file("compare.json");
  const Run r = run_compare({"--size", "32", "--mm-size", "16", "--threads", "2", "--reps", "3", "--only",
                             "add,softmax,rms_norm,mm", "--json", path});
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(peer_threads == 2);
  CHECK_THAT(r.out, StartsWith("mixt vs Fake 0.1 on the CPU: [32, 32] float32 inputs, GEMMs [16, 16]; best / median "
                               "of 3 alternating rounds\nthreads: mixt 2 (OpenMP); Fake: serial\n"));
  CHECK_THAT(r.out, Contains("NOTE: softmax: the results differ"));
  CHECK_THAT(r.out, Contains("NOTE: rms_norm: not compared: Fake has no rms_norm"));
  CHECK_THAT(r.out, !Contains("NOTE: add"));
  CHECK_THAT(r.out, !Contains("NOTE: mm"));
  const auto doc = nlohmann::json::parse(read_file(path));
  CHECK(doc["peer"] == "Fake 0.1");
  CHECK(doc["size"] == 32);
  CHECK(doc["copy_gbs"].get<double>() > 0);
  REQUIRE(doc["rows"].size() == 4);
  std::vector<std::string> ops;
  for (const auto& row : doc["rows"]) {
    INFO(row.dump());
    ops.push_back(row["op"]);
    CHECK(row["mixt_best_ms"].get<double>() > 0);
    CHECK(row["mixt_median_ms"].get<double>() >= row["mixt_best_ms"].get<double>());
    if (row.contains("skipped")) continue;
    CHECK(row["peer_best_ms"].get<double>() > 0);
    CHECK(row["ratio"].get<double>() == Approx(row["mixt_best_ms"].get<double>() / row["peer_best_ms"].get<double>()));
  }
  CHECK(ops == std::vector<std::string>{"add", "softmax", "rms_norm", "mm"});  // the table's order
  CHECK(doc["rows"][0]["agree"] == true);
  CHECK(doc["rows"][0]["max_abs_diff"] == 0.0);
  CHECK(doc["rows"][1]["agree"] == false);
  CHECK(doc["rows"][3]["agree"] == true);
  CHECK(doc["rows"][3]["flops"] == 2.0 * 16 * 16 * 16);

  CHECK(run_compare({"--only", "add,nope"}).status == 2);
  CHECK(run_compare({"--size", "0"}).status == 2);
  const Run help = run_compare({"--help"});
  CHECK(help.status == 0);
  CHECK_THAT(help.out, Contains("--only OPS"));
}
