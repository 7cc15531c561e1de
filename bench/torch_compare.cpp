// mixt-torch-compare without LibTorch (torch_compare.h): the ops, their work, the
// alternating timer, the agreement check, the table and the JSON.
#include "torch_compare.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <tuple>
#include <vector>

#include <fmt/format.h>
#include <omp.h>

#include "bench_util.h"

namespace mixt::bench::compare {
namespace {

namespace F = nn::functional;

double elements(const Inputs& in) { return static_cast<double>(in.n) * static_cast<double>(in.n); }
// Reads x, writes one output of its size (float32).
Work unary_f32(const Inputs& in) { return {.bytes = 8 * elements(in)}; }
// Reads x and y, writes one output (float32).
Work binary_f32(const Inputs& in) { return {.bytes = 12 * elements(in)}; }
// Reads x, writes a row or column of results (float32).
Work reduce_f32(const Inputs& in) { return {.bytes = 4 * elements(in) + 4 * static_cast<double>(in.n)}; }
// Reads x as logits and an int64 target per row, writes one loss (float32).
Work logits_f32(const Inputs& in) { return {.bytes = 4 * elements(in) + 8 * static_cast<double>(in.n)}; }
// Reads x and its affine parameters, writes one output (float32).
Work norm_f32(const Inputs& in) { return {.bytes = 8 * elements(in) + 8 * static_cast<double>(in.n)}; }
// Reads bfloat16 x, writes one bfloat16 output.
Work unary_bf16(const Inputs& in) { return {.bytes = 4 * elements(in)}; }
// Reads bfloat16 x and y, writes one bfloat16 output.
Work binary_bf16(const Inputs& in) { return {.bytes = 6 * elements(in)}; }
// Reads float32 x, writes bfloat16.
Work cast_f32_bf16(const Inputs& in) { return {.bytes = 6 * elements(in)}; }
Work gemm(const Inputs& in) { return {.flops = 2.0 * std::pow(static_cast<double>(in.mm_n), 3)}; }

// Elementwise transcendental results: a few float32 ulps apart.
constexpr Tolerance kUlps{.atol = 1e-6, .rtol = 1e-5};
// Sums over a row of thousands: the summation order moves the last bits.
constexpr Tolerance kSums{.atol = 1e-4, .rtol = 1e-4};
// bfloat16 outputs: one bfloat16 ulp (2^-8 relative) apart, from rounding float32 results that differ in their last bits.
constexpr Tolerance kBf16{.atol = 1e-6, .rtol = 1.0 / 128};

std::string ms_text(const Times& t) { return fmt::format("{:.3f} / {:.3f}", t.best * 1e3, t.median * 1e3); }

// "0.45 xcopy" for memory-bound ops, "85.2 GFLOP/s" for GEMMs.
std::string rate_text(const Work& w, double seconds, double copy_bps) {
  if (w.bytes > 0) return fmt::format("{:.2f} xcopy", copy_share(w, seconds, copy_bps));
  return fmt::format("{:.1f} GFLOP/s", w.flops / seconds / 1e9);
}

// The first line of a small system file ("" when it cannot be read).
std::string first_line(const char* path) {
  std::ifstream f(path);
  std::string line;
  std::getline(f, line);
  return line;
}

}  // namespace

Inputs make_inputs(int64_t n, int64_t mm_n) {
  Generator gen(23);
  const TensorOptions f32{.dtype = kFloat32};
  Inputs in{.n = n, .mm_n = mm_n};
  in.x = randn({n, n}, f32, &gen);
  in.y = randn({n, n}, f32, &gen);
  in.x_bf16 = in.x.to(kBFloat16);
  in.y_bf16 = in.y.to(kBFloat16);
  in.weight = add(mul(randn({n}, f32, &gen), 0.1), 1.0);
  in.bias = mul(randn({n}, f32, &gen), 0.1);
  std::vector<int64_t> target(static_cast<size_t>(n));
  for (size_t i = 0; i < target.size(); ++i) target[i] = static_cast<int64_t>((i * 7919) % static_cast<size_t>(n));
  in.target = from_vector(target, {n});
  in.cast_out = empty({n, n}, {.dtype = kBFloat16});
  in.a = randn({mm_n, mm_n}, f32, &gen);
  in.b = randn({mm_n, mm_n}, f32, &gen);
  in.a_bf16 = in.a.to(kBFloat16);
  in.b_bf16 = in.b.to(kBFloat16);
  return in;
}

const std::vector<OpSpec>& op_specs() {
  static const std::vector<OpSpec> specs = {
      {"add", "add f32", binary_f32, {}, [](Inputs& in) { return add(in.x, in.y); }},
      {"add_bf16", "add bf16", binary_bf16, {}, [](Inputs& in) { return add(in.x_bf16, in.y_bf16); }},
      {"exp", "exp f32", unary_f32, kUlps, [](Inputs& in) { return exp(in.x); }},
      {"sigmoid", "sigmoid f32", unary_f32, kUlps, [](Inputs& in) { return sigmoid(in.x); }},
      {"tanh", "tanh f32", unary_f32, kUlps, [](Inputs& in) { return tanh(in.x); }},
      {"silu", "silu f32", unary_f32, kUlps, [](Inputs& in) { return F::silu(in.x); }},
      {"gelu", "gelu f32 (erf)", unary_f32, kUlps, [](Inputs& in) { return F::gelu(in.x); }},
      {"gelu_tanh", "gelu f32 (tanh)", unary_f32, kUlps, [](Inputs& in) { return F::gelu(in.x, "tanh"); }},
      {"pow", "pow f32 (x ^ 2.5)", unary_f32, kUlps, [](Inputs& in) { return pow(in.x, 2.5); }},
      {"softmax", "softmax f32 dim 1", unary_f32, {.atol = 1e-9, .rtol = 1e-5},
       [](Inputs& in) { return F::softmax(in.x, 1); }},
      {"softmax_bf16", "softmax bf16 dim 1", unary_bf16, {.atol = 1e-7, .rtol = 1.0 / 128},
       [](Inputs& in) { return F::softmax(in.x_bf16, 1); }},
      {"log_softmax", "log_softmax f32 dim 1", unary_f32, kUlps, [](Inputs& in) { return F::log_softmax(in.x, 1); }},
      {"layer_norm", "layer_norm f32 over dim 1", norm_f32, {.atol = 1e-5, .rtol = 1e-4},
       [](Inputs& in) { return F::layer_norm(in.x, {in.n}, in.weight, in.bias); }},
      {"rms_norm", "rms_norm f32 over dim 1", norm_f32, {.atol = 1e-5, .rtol = 1e-4},
       [](Inputs& in) { return F::rms_norm(in.x, {in.n}, in.weight); }},
      {"cross_entropy", "cross_entropy f32 [n, n] (mean)", logits_f32, kSums,
       [](Inputs& in) { return F::cross_entropy(in.x, in.target); }},
      {"sum", "sum f32 over dim 1", reduce_f32, kSums, [](Inputs& in) { return sum(in.x, {1}); }},
      {"mean", "mean f32 over dim 1", reduce_f32, kSums, [](Inputs& in) { return mean(in.x, {1}); }},
      {"amax", "amax f32 over dim 1", reduce_f32, {}, [](Inputs& in) { return amax(in.x, {1}); }},
      {"var", "var f32 over dim 1", reduce_f32, kSums, [](Inputs& in) { return var(in.x, {1}); }},
      {"sum_dim0", "sum f32 over dim 0", reduce_f32, kSums, [](Inputs& in) { return sum(in.x, {0}); }},
      {"cast_bf16", "cast f32 -> bf16 (copy_ into an output)", cast_f32_bf16, {},
       [](Inputs& in) { return in.cast_out.copy_(in.x); }},
      {"mm", "mm f32", gemm, {.atol = 1e-3, .rtol = 1e-4}, [](Inputs& in) { return mm(in.a, in.b); }},
      // bfloat16 products of sums of mm_n terms: one bfloat16 ulp apart, more near zero.
      {"mm_bf16", "mm bf16", gemm, {.atol = 0.1, .rtol = 1.0 / 64}, [](Inputs& in) { return mm(in.a_bf16, in.b_bf16); }},
  };
  return specs;
}

std::vector<std::string> op_ids() {
  std::vector<std::string> ids;
  for (const OpSpec& s : op_specs()) ids.push_back(s.id);
  return ids;
}

std::pair<Times, Times> time_alternately(const std::function<void()>& a, const std::function<void()>& b, int rounds) {
  a();
  b();
  std::vector<double> ta, tb;
  auto seconds = [](const std::function<void()>& f) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  for (int r = 0; r < rounds; ++r) {
    ta.push_back(seconds(a));
    tb.push_back(seconds(b));
  }
  auto summary = [](std::vector<double>& t) {
    std::sort(t.begin(), t.end());
    return Times{.best = t.front(), .median = t[t.size() / 2]};
  };
  return {summary(ta), summary(tb)};
}

double copy_rate(int64_t bytes, int rounds) {
  std::vector<char> src(static_cast<size_t>(bytes), 1), dst(static_cast<size_t>(bytes));
  const auto copy = [&] { parallel_memcpy(dst.data(), src.data(), bytes); };
  return 2.0 * static_cast<double>(bytes) / time_alternately(copy, copy, rounds).first.best;
}

Agreement agreement(std::span<const float> a, std::span<const float> b, Tolerance tolerance) {
  Agreement r;
  if (a.size() != b.size()) {
    r.max_abs = r.max_rel = std::numeric_limits<double>::infinity();
    r.mismatched = static_cast<int64_t>(std::max(a.size(), b.size()));
    return r;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i], y = b[i];
    if (std::isnan(x) || std::isnan(y)) {
      r.mismatched += std::isnan(x) != std::isnan(y);
      continue;
    }
    if (x == y) continue;  // equal, infinities included
    const double d = std::abs(x - y);
    r.max_abs = std::max(r.max_abs, d);
    if (y != 0) r.max_rel = std::max(r.max_rel, d / std::abs(y));
    // An infinity matches only itself; the tolerance would admit anything against one.
    r.mismatched += std::isinf(x) || std::isinf(y) || d > tolerance.atol + tolerance.rtol * std::abs(y);
  }
  return r;
}

std::vector<float> values_of(const Tensor& t) {
  const Tensor c = t.to(kFloat32).contiguous();
  const float* p = c.data_ptr<float>();
  return std::vector<float>(p, p + c.numel());
}

double copy_share(const Work& work, double seconds, double copy_bytes_per_second) {
  if (work.bytes <= 0 || seconds <= 0 || copy_bytes_per_second <= 0) return 0;
  return work.bytes / seconds / copy_bytes_per_second;
}

std::string format_table(std::span<const Row> rows, const std::string& peer_name, double copy_bps) {
  // The peer's short name ("LibTorch") heads the ratio column.
  const std::string peer_short = peer_name.substr(0, peer_name.find(' '));
  std::string out = fmt::format("| {:<40} | {:>19} | {:>19} | {:>15} | {:>14} | {:>14} | {:>5} |\n", "op",
                                "mixt ms best / med", peer_short + " ms", "mixt / " + peer_short, "mixt rate",
                                peer_short + " rate", "agree");
  out += fmt::format("|{:-<42}|{:-<21}|{:-<21}|{:-<17}|{:-<16}|{:-<16}|{:-<7}|\n", "", "", "", "", "", "", "");
  std::string notes;
  for (const Row& r : rows) {
    if (!r.skipped.empty()) {
      out += fmt::format("| {:<40} | {:>19} | {:>19} | {:>15} | {:>14} | {:>14} | {:>5} |\n", r.label, ms_text(r.mixt),
                         "-", "-", rate_text(r.work, r.mixt.best, copy_bps), "-", "-");
      notes += fmt::format("NOTE: {}: not compared: {}\n", r.id, r.skipped);
      continue;
    }
    out += fmt::format("| {:<40} | {:>19} | {:>19} | {:>15.2f} | {:>14} | {:>14} | {:>5} |\n", r.label, ms_text(r.mixt),
                       ms_text(r.peer), r.mixt.best / r.peer.best, rate_text(r.work, r.mixt.best, copy_bps),
                       rate_text(r.work, r.peer.best, copy_bps), r.agreement.agree() ? "yes" : "NO");
    if (!r.agreement.agree())
      notes += fmt::format(
          "NOTE: {}: the results differ: {} elements beyond atol {:g} + rtol {:g} (max abs diff {:.3g}, max rel diff "
          "{:.3g}); the two times may not be of equal work\n",
          r.id, r.agreement.mismatched, r.tolerance.atol, r.tolerance.rtol, r.agreement.max_abs, r.agreement.max_rel);
  }
  return out + notes;
}

Json rows_json(std::span<const Row> rows, double copy_bps) {
  Json list = Json::array();
  for (const Row& r : rows) {
    Json j = {{"op", r.id}, {"label", r.label}, {"bytes", r.work.bytes}, {"flops", r.work.flops},
              {"mixt_best_ms", r.mixt.best * 1e3}, {"mixt_median_ms", r.mixt.median * 1e3},
              {"mixt_x_copy", copy_share(r.work, r.mixt.best, copy_bps)}};
    if (r.skipped.empty()) {
      j.update({{"peer_best_ms", r.peer.best * 1e3}, {"peer_median_ms", r.peer.median * 1e3},
                {"peer_x_copy", copy_share(r.work, r.peer.best, copy_bps)}, {"ratio", r.mixt.best / r.peer.best},
                {"agree", r.agreement.agree()}, {"max_abs_diff", r.agreement.max_abs},
                {"max_rel_diff", r.agreement.max_rel}});
    } else {
      j["skipped"] = r.skipped;
    }
    list.push_back(j);
  }
  return list;
}

int run(const cli::Args& args, const Peer& peer) {
  const int64_t n = args.integer("--size"), mm_n = args.integer("--mm-size");
  const int threads = static_cast<int>(args.integer("--threads")), rounds = static_cast<int>(args.integer("--reps"));
  const std::vector<std::string> only = args.list("--only");
  omp_set_num_threads(threads);
  peer.set_threads(threads);
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  const std::string thp = first_line("/sys/kernel/mm/transparent_hugepage/enabled");
  std::printf("mixt vs %s on the CPU: [%lld, %lld] float32 inputs, GEMMs [%lld, %lld]; best / median of %d "
              "alternating rounds\n", peer.name.c_str(), static_cast<long long>(n), static_cast<long long>(n),
              static_cast<long long>(mm_n), static_cast<long long>(mm_n), rounds);
  std::printf("threads: mixt %d (OpenMP); %s\n", omp_get_max_threads(), peer.describe_threads().c_str());
  std::printf("GLIBC_TUNABLES=%s; transparent huge pages: %s\n", tunables ? tunables : "(not set)",
              thp.empty() ? "(unknown)" : thp.c_str());
  std::printf("Both sides allocate their outputs (mixt has no out= variants) except the cast, which copies into a\n"
              "preallocated tensor; mixt reuses freed blocks, %s calls malloc.\n\n", peer.name.c_str());

  Inputs in = make_inputs(n, mm_n);
  const double copy_before = copy_rate(4 * n * n, rounds);
  std::vector<Row> rows;
  for (const OpSpec& spec : op_specs()) {
    if (std::find(only.begin(), only.end(), spec.id) == only.end()) continue;
    Row row{.id = spec.id, .label = spec.label, .work = spec.work(in), .tolerance = spec.tolerance};
    const PeerSide side = peer.side(spec, in);
    const std::function<void()> mixt_call = [&] { (void)spec.mixt(in); };
    if (!side.skipped.empty()) {
      row.skipped = side.skipped;
      row.mixt = time_alternately(mixt_call, [] {}, rounds).first;
    } else {
      std::tie(row.mixt, row.peer) = time_alternately(mixt_call, side.call, rounds);
      row.agreement = agreement(values_of(spec.mixt(in)), side.values(), spec.tolerance);
    }
    rows.push_back(row);
  }
  // The copy rate: the better of a measurement before the ops and one after, like the ops' best calls.
  const double copy_after = copy_rate(4 * n * n, rounds), copy_bps = std::max(copy_before, copy_after);
  std::printf("memcpy over the OpenMP threads (the copy rate): %.1f GB/s (before the ops %.1f, after %.1f)\n\n",
              copy_bps / 1e9, copy_before / 1e9, copy_after / 1e9);
  std::fputs(format_table(rows, peer.name, copy_bps).c_str(), stdout);
  std::printf("ms: best / median per call; mixt / %s: best over best; rate: bytes read and written once per call\n"
              "over the copy rate (xcopy), or GFLOP/s for GEMMs.\n", peer.name.c_str());
  write_figures(args.text("--json"), {{"command", "torch-compare"},
                                      {"peer", peer.name},
                                      {"size", n},
                                      {"mm_size", mm_n},
                                      {"threads", threads},
                                      {"rounds", rounds},
                                      {"glibc_tunables", tunables ? Json(tunables) : Json(nullptr)},
                                      {"transparent_hugepages", thp},
                                      {"copy_gbs", copy_bps / 1e9},
                                      {"rows", rows_json(rows, copy_bps)}});
  return 0;
}

cli::Command command(std::string program, Peer peer) {
  const std::vector<std::string> ids = op_ids();
  std::string all = ids.front();
  for (size_t i = 1; i < ids.size(); ++i) all += "," + ids[i];
  return {.name = std::move(program),
          .summary = "mixt's CPU kernels side by side with " + peer.name + "'s, timed alternately in one process",
          .options = {{.name = "--size", .kind = cli::Kind::Int, .metavar = "N",
                       .help = "the [N, N] float32 inputs of the memory-bound ops", .default_value = "4096",
                       .max = 32768},
                      {.name = "--mm-size", .kind = cli::Kind::Int, .metavar = "M",
                       .help = "the [M, M] operands of the GEMMs", .default_value = "1024", .max = 16384},
                      {.name = "--threads", .kind = cli::Kind::Int, .metavar = "T",
                       .help = "threads of both libraries", .default_value = "2", .max = 1024},
                      {.name = "--reps", .kind = cli::Kind::Int, .metavar = "R",
                       .help = "alternating rounds per op: the best and the median are shown", .default_value = "5",
                       .max = 10'000},
                      {.name = "--only", .kind = cli::Kind::List, .metavar = "OPS", .help = "the ops to compare",
                       .default_value = all, .choices = ids},
                      cli::json_option()},
          .run = [peer = std::move(peer)](const cli::Args& args) { return run(args, peer); },
          .standalone = true};
}

}  // namespace mixt::bench::compare
