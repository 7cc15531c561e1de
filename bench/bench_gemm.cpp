// GEMM throughput: mixt's mm (dispatcher, checks, output allocation, dtype
// handling) against OpenBLAS called directly on the same data in the same run,
// per shape and dtype, with the relative error of each result against a float64
// reference. Inputs are drawn fresh per shape (never zeros) and several input
// sets are rotated so the caches do not flatter small shapes; each figure is the
// median of the timed runs, with the spread (min..max).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <cblas.h>
#include <omp.h>

#include <mixt/mixt.h>

#include "bench_gemm.h"
#include "bench_json.h"

namespace mixt::bench {
namespace {

struct GemmShape {
  int64_t m, n, k;
};

const std::vector<std::string> kDtypes = {"f32", "f64", "bf16", "f16"};

ScalarType dtype_of(const std::string& name) {
  if (name == "f64") return kFloat64;
  if (name == "bf16") return kBFloat16;
  if (name == "f16") return kFloat16;
  return kFloat32;
}

std::vector<GemmShape> parse_shapes(const std::string& text) {
  std::vector<GemmShape> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string w = text.substr(start, comma - start);
    start = comma + 1;
    long long m = 0, n = 0, k = 0;
    char tail = 0;
    if (std::sscanf(w.c_str(), "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3 || m <= 0 || n <= 0 || k <= 0 ||
        m > 65536 || n > 65536 || k > 65536)
      throw cli::UsageError("--shapes: '" + w + "' is not MxNxK with sizes in [1, 65536]");
    out.push_back({m, n, k});
  }
  if (out.empty()) throw cli::UsageError("--shapes: no shape given");
  return out;
}

// Timing statistics of one measured loop, in seconds per call.
struct Timing {
  double median = 0, min = 0, max = 0;
};

// Runs f(i) for i = 0, 1, ... in timed runs of at least ~2 ms each; `runs` of them.
template <class F>
Timing time_calls(int runs, F&& f) {
  f(0);  // warm up
  int64_t calls = 1;
  for (;;) {  // calls per run: enough for ~2 ms
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < calls; ++i) f(i);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 2e-3 || calls >= (int64_t{1} << 20)) break;
    calls *= 2;
  }
  std::vector<double> per_call;
  for (int r = 0; r < runs; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < calls; ++i) f(i);
    per_call.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                       static_cast<double>(calls));
  }
  std::sort(per_call.begin(), per_call.end());
  return {per_call[per_call.size() / 2], per_call.front(), per_call.back()};
}

// max |got - want| / max |want| over the elements.
double relative_error(const Tensor& got, const Tensor& want) {
  const auto g = got.to(kFloat64).contiguous().to_vector<double>();
  const auto w = want.contiguous().to_vector<double>();
  double diff = 0, scale = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    diff = std::max(diff, std::abs(g[i] - w[i]));
    scale = std::max(scale, std::abs(w[i]));
  }
  return scale > 0 ? diff / scale : diff;
}

// The peer: one direct BLAS call on buffers prepared beforehand (float32 copies of
// float16/bfloat16 inputs: the peer is the GEMM alone, without mixt's widening).
void blas_gemm(ScalarType dt, const GemmShape& s, const void* a, const void* b, void* c) {
  const auto m = static_cast<int>(s.m), n = static_cast<int>(s.n), k = static_cast<int>(s.k);
  if (dt == kFloat64) {
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0, static_cast<const double*>(a), k,
                static_cast<const double*>(b), n, 0.0, static_cast<double*>(c), n);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f, static_cast<const float*>(a), k,
                static_cast<const float*>(b), n, 0.0f, static_cast<float*>(c), n);
  }
}

}  // namespace

int run_gemm(const cli::Args& args) {
  MIXT_CHECK(args.device().is_cpu(), "mixt-bench gemm",
             "the CUDA GEMM engine is not built yet: `mixt-bench gemm` measures the CPU only for now");
  const std::vector<std::string> dtypes = args.list("--dtypes");
  const std::vector<GemmShape> shapes = parse_shapes(args.text("--shapes"));
  const int runs = static_cast<int>(args.integer("--runs"));
  const int64_t rotate_bytes = args.integer("--rotate-mb") * 1024 * 1024;

  std::printf("gemm on the CPU: mixt mm vs OpenBLAS called directly (on %d threads each), median of %d runs "
              "(spread min..max), inputs rotated over >= %lld MB\n\n",
              omp_get_max_threads(), runs, static_cast<long long>(rotate_bytes >> 20));
  std::printf("| %-5s | %-17s | %9s | %9s | %17s | %6s | %9s |\n", "dtype", "M x N x K", "mixt GF/s", "BLAS GF/s",
              "mixt spread (us)", "ratio", "rel err");
  std::printf("|-------|-------------------|-----------|-----------|-------------------|--------|-----------|\n");
  // Every case's inputs: fresh draws per shape, enough sets to span rotate_bytes so
  // each call finds cold operands; the same seed gives the same data in both passes.
  struct Case {
    std::string dtype_name;
    ScalarType dtype;
    GemmShape shape;
    uint64_t seed;
  };
  std::vector<Case> cases;
  for (const std::string& dname : dtypes)
    for (const GemmShape& s : shapes) cases.push_back({dname, dtype_of(dname), s, 2026 + cases.size()});
  auto inputs = [&](const Case& c, ScalarType as_dtype) {
    Generator gen;
    gen.manual_seed(c.seed);
    const GemmShape& s = c.shape;
    const int64_t set_bytes = (s.m * s.k + s.k * s.n) * element_size(c.dtype);
    const int64_t sets = std::clamp<int64_t>(rotate_bytes / std::max<int64_t>(set_bytes, 1), 1, 64);
    std::vector<std::pair<Tensor, Tensor>> out;
    for (int64_t i = 0; i < sets; ++i) {
      Tensor a = randn({s.m, s.k}, {.dtype = kFloat32}, &gen).to(c.dtype);
      Tensor b = randn({s.k, s.n}, {.dtype = kFloat32}, &gen).to(c.dtype);
      out.emplace_back(a.to(as_dtype).contiguous(), b.to(as_dtype).contiguous());
    }
    return out;
  };

  // Pass 1: mixt, with OpenBLAS as mixt configures it (single-threaded: its worker
  // threads must not be spinning from the peer's calls while mixt is timed).
  std::vector<Timing> mixt_times;
  std::vector<double> errors;
  for (const Case& c : cases) {
    const auto sets = inputs(c, c.dtype);
    Tensor result;
    mixt_times.push_back(time_calls(runs, [&](int64_t i) {
      const auto& [a, b] = sets[static_cast<size_t>(i) % sets.size()];
      result = mm(a, b);
    }));
    errors.push_back(relative_error(mm(sets[0].first, sets[0].second),
                                    mm(sets[0].first.to(kFloat64), sets[0].second.to(kFloat64))));
  }
  // Pass 2: the peer, one direct BLAS call on OpenBLAS's own threads (as many as
  // mixt's; float32 copies of float16/bfloat16 inputs, prepared beforehand).
  std::vector<Timing> blas_times;
  const int mixt_blas_threads = openblas_get_num_threads();
  openblas_set_num_threads(omp_get_max_threads());
  for (const Case& c : cases) {
    const ScalarType peer_dt = c.dtype == kFloat64 ? kFloat64 : kFloat32;
    const auto sets = inputs(c, peer_dt);
    Tensor peer_c = empty({c.shape.m, c.shape.n}, {.dtype = peer_dt});
    blas_times.push_back(time_calls(runs, [&](int64_t i) {
      const auto& [a, b] = sets[static_cast<size_t>(i) % sets.size()];
      blas_gemm(peer_dt, c.shape, a.data_ptr(), b.data_ptr(), peer_c.data_ptr());
    }));
  }
  openblas_set_num_threads(mixt_blas_threads);

  Json rows = Json::array();
  std::string csv = "dtype,m,n,k,mixt_gflops,blas_gflops,ratio,mixt_median_us,mixt_min_us,mixt_max_us,rel_err\n";
  std::vector<double> ratios;
  for (size_t i = 0; i < cases.size(); ++i) {
    const Case& c = cases[i];
    const GemmShape& s = c.shape;
    const Timing& mixt_t = mixt_times[i];
    const Timing& blas_t = blas_times[i];
    const double err = errors[i];
    const double flop = 2.0 * static_cast<double>(s.m) * static_cast<double>(s.n) * static_cast<double>(s.k);
    const double mixt_gf = flop / mixt_t.median / 1e9, blas_gf = flop / blas_t.median / 1e9;
    const double ratio = blas_t.median / mixt_t.median;  // > 1: mixt is faster
    ratios.push_back(ratio);
    char shape[32];
    std::snprintf(shape, sizeof shape, "%lldx%lldx%lld", static_cast<long long>(s.m), static_cast<long long>(s.n),
                  static_cast<long long>(s.k));
    std::printf("| %-5s | %-17s | %9.1f | %9.1f | %7.1f..%-9.1f | %6.3f | %9.2e |\n", c.dtype_name.c_str(), shape,
                mixt_gf, blas_gf, mixt_t.min * 1e6, mixt_t.max * 1e6, ratio, err);
    rows.push_back({{"dtype", c.dtype_name},
                    {"m", s.m},
                    {"n", s.n},
                    {"k", s.k},
                    {"mixt_gflops", mixt_gf},
                    {"blas_gflops", blas_gf},
                    {"ratio_blas_time_over_mixt_time", ratio},
                    {"mixt_us", {{"median", mixt_t.median * 1e6}, {"min", mixt_t.min * 1e6}, {"max", mixt_t.max * 1e6}}},
                    {"blas_us", {{"median", blas_t.median * 1e6}, {"min", blas_t.min * 1e6}, {"max", blas_t.max * 1e6}}},
                    {"relative_error_vs_f64", err}});
    char line[256];
    std::snprintf(line, sizeof line, "%s,%lld,%lld,%lld,%.3f,%.3f,%.4f,%.3f,%.3f,%.3f,%.3e\n", c.dtype_name.c_str(),
                  static_cast<long long>(s.m), static_cast<long long>(s.n), static_cast<long long>(s.k), mixt_gf,
                  blas_gf, ratio, mixt_t.median * 1e6, mixt_t.min * 1e6, mixt_t.max * 1e6, err);
    csv += line;
  }
  double log_sum = 0;
  for (double r : ratios) log_sum += std::log(r);
  const double geomean = ratios.empty() ? 0 : std::exp(log_sum / static_cast<double>(ratios.size()));
  std::printf("\ngeometric mean of BLAS time / mixt time: %.3f (1.0 = parity; float16/bfloat16 rows include "
              "mixt's widening to float32, which the BLAS peer is given for free)\n",
              geomean);
  write_figures(args.text("--json"), {{"command", "gemm"}, {"device", "cpu"}, {"threads", omp_get_max_threads()},
                                      {"runs", runs}, {"rows", rows}, {"geomean_ratio", geomean}});
  if (const std::string& path = args.text("--csv"); !path.empty()) {
    io::write_file_atomic(path, csv);
    std::printf("CSV written to %s\n", path.c_str());
  }
  return 0;
}

cli::Command gemm_command() {
  return {.name = "gemm",
          .summary = "GEMM GFLOP/s per shape and dtype against the BLAS called directly, with the error vs float64",
          .options = {cli::device_option("where to run (the CUDA engine is not built yet: cpu)", true),
                      {.name = "--dtypes", .kind = cli::Kind::List, .metavar = "LIST", .help = "dtypes to measure",
                       .default_value = "f32,f64,bf16,f16", .choices = kDtypes},
                      {.name = "--shapes", .kind = cli::Kind::Text, .metavar = "MxNxK,...",
                       .help = "shapes (default: square 64..1024, skinny M = 16 and 128)",
                       .default_value = "64x64x64,128x128x128,256x256x256,512x512x512,1024x1024x1024,"
                                        "16x1024x1024,128x1024x1024,16x4096x1024"},
                      {.name = "--runs", .kind = cli::Kind::Int, .metavar = "R", .help = "timed runs per figure",
                       .default_value = "15", .max = 10000},
                      {.name = "--rotate-mb", .kind = cli::Kind::Int, .metavar = "MB",
                       .help = "input sets rotated so that they span at least this much memory",
                       .default_value = "64", .max = 4096},
                      cli::json_option(),
                      {.name = "--csv", .kind = cli::Kind::Text, .metavar = "FILE",
                       .help = "also write the figures as CSV to FILE"}},
          .run = run_gemm};
}

}  // namespace mixt::bench
