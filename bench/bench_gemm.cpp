// GEMM throughput (docs/gemm-benchmarking.md). On the CPU: mixt's mm (dispatcher, checks,
// output allocation, dtype handling) against OpenBLAS called directly on the same data in
// the same run. On CUDA: the GEMM engine per dtype (fp32, tf32, fp16, bf16, fp64, fp8 e4m3
// with and without fast accumulation) with the heuristic's algorithm and autotuned,
// CUDA-event timing, and PyTorch's torch.mm / torch._scaled_mm on the same shapes in the
// same run (--torch, bench/torch_gemm.py). Per shape and dtype: the rate, the spread, the
// relative error against a float64 reference. Inputs are drawn fresh per shape (never
// zeros) and several input sets are rotated so the caches do not flatter small shapes;
// each figure is the median of the timed runs, with the spread (min..max). Table on stdout,
// JSON, CSV, and a gnuplot plot.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>

#include <cblas.h>
#include <omp.h>
#include <unistd.h>

#include <mixt/mixt.h>

#include "bench_gemm.h"
#include "bench_json.h"

namespace mixt::bench {
namespace {

struct GemmShape {
  int64_t m, n, k;
};

// Dtype names: the CPU's (f32, f64, bf16, f16), their fp* spellings, tf32 and fp8 (CUDA only).
const std::vector<std::string> kDtypes = {"auto", "f32", "fp32", "tf32", "f64", "fp64", "bf16", "f16", "fp16",
                                          "fp8", "fp8-fast"};
const char* kCpuDefaultDtypes = "f32,f64,bf16,f16";
const char* kCudaDefaultDtypes = "fp32,tf32,fp16,bf16,fp8,fp8-fast";
const char* kCpuDefaultShapes =
    "64x64x64,128x128x128,256x256x256,512x512x512,1024x1024x1024,16x1024x1024,128x1024x1024,16x4096x1024";
// Square 1024..16384, LLM shapes, skinny M = 16 and 128.
const char* kCudaDefaultShapes =
    "1024x1024x1024,2048x2048x2048,4096x4096x4096,8192x8192x8192,16384x16384x16384,8192x28672x8192,"
    "16384x8192x1024,8192x8192x28672,16x8192x8192,128x8192x8192,16x28672x8192,128x28672x8192";

ScalarType dtype_of(const std::string& name) {
  if (name == "f64" || name == "fp64") return kFloat64;
  if (name == "bf16") return kBFloat16;
  if (name == "f16" || name == "fp16") return kFloat16;
  if (name == "fp8" || name == "fp8-fast") return kFloat8_e4m3fn;
  return kFloat32;
}

// The dtype list with "auto" replaced by the device's defaults.
std::vector<std::string> dtypes_for(const cli::Args& args, bool cuda) {
  std::vector<std::string> out;
  for (const std::string& d : args.list("--dtypes")) {
    if (d != "auto") {
      out.push_back(d);
      continue;
    }
    std::stringstream ss(cuda ? kCudaDefaultDtypes : kCpuDefaultDtypes);
    for (std::string x; std::getline(ss, x, ',');) out.push_back(x);
  }
  return out;
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
    if (static_cast<double>(m) * static_cast<double>(k) + static_cast<double>(k) * static_cast<double>(n) +
            static_cast<double>(m) * static_cast<double>(n) >
        double(int64_t{1} << 33))
      throw cli::UsageError("--shapes: '" + w + "' needs more than 2^33 elements");
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

std::string shape_label(const GemmShape& s) {
  return std::to_string(s.m) + "x" + std::to_string(s.n) + "x" + std::to_string(s.k);
}

// One bar of the plot: a series (dtype and who), a shape, a rate.
struct PlotPoint {
  std::string series, shape;
  double rate;
};

// Writes FILE.dat and FILE.gp beside `path` (an .svg or .png) and runs gnuplot when it is installed.
void write_plot(const std::string& path, const std::vector<PlotPoint>& points, const std::string& unit) {
  if (path.empty()) return;
  std::vector<std::string> series, shapes;
  for (const PlotPoint& p : points) {
    if (std::find(series.begin(), series.end(), p.series) == series.end()) series.push_back(p.series);
    if (std::find(shapes.begin(), shapes.end(), p.shape) == shapes.end()) shapes.push_back(p.shape);
  }
  std::string dat = "shape";
  for (const std::string& s : series) dat += " \"" + s + "\"";
  dat += "\n";
  for (const std::string& sh : shapes) {
    dat += sh;
    for (const std::string& se : series) {
      double v = NAN;
      for (const PlotPoint& p : points)
        if (p.series == se && p.shape == sh) v = p.rate;
      dat += ' ';
      dat += std::isnan(v) ? std::string("-") : std::to_string(v);
    }
    dat += "\n";
  }
  const bool png = path.size() > 4 && path.substr(path.size() - 4) == ".png";
  const std::string dat_path = path + ".dat", gp_path = path + ".gp";
  std::string gp = std::string("set terminal ") + (png ? "pngcairo size 1400,700" : "svg size 1400,700") +
                   "\nset output '" + path + "'\nset style data histograms\nset style histogram clustered gap 1\n"
                   "set style fill solid 0.8 border -1\nset datafile missing '-'\nset key outside right\n"
                   "set xtics rotate by -35\nset ylabel '" + unit + "'\nset grid ytics\n"
                   "set title 'mixt-bench gemm'\nplot for [i=2:" + std::to_string(series.size() + 1) + "] '" +
                   dat_path + "' using i:xtic(1) title columnhead\n";
  io::write_file_atomic(dat_path, dat);
  io::write_file_atomic(gp_path, gp);
  if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
    std::printf("gnuplot is not installed: the plot's data and script are in %s and %s\n", dat_path.c_str(),
                gp_path.c_str());
    return;
  }
  const std::string cmd = "gnuplot '" + gp_path + "'";
  if (std::system(cmd.c_str()) == 0) std::printf("plot written to %s\n", path.c_str());
  else std::printf("gnuplot failed on %s\n", gp_path.c_str());
}

// bench/torch_gemm.py: beside the executable (the GPU bundle), else in the source tree.
std::string torch_script() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  const std::vector<std::filesystem::path> where = {exe.parent_path() / "torch_gemm.py",
                                                    std::filesystem::path(MIXT_BENCH_SOURCE_DIR) / "torch_gemm.py"};
  for (const auto& p : where)
    if (std::filesystem::exists(p, ec)) return p.string();
  return "";
}

// PyTorch's rates (TFLOP/s) keyed by "dtype MxNxK", from one run of torch_gemm.py; empty when it fails.
std::map<std::string, double> run_torch(const std::vector<std::string>& dtypes, const std::vector<GemmShape>& shapes,
                                        int runs, int64_t rotate_mb) {
  std::map<std::string, double> out;
  const std::string script = torch_script();
  if (script.empty()) {
    std::printf("--torch: bench/torch_gemm.py not found next to mixt-bench or in the source tree\n");
    return out;
  }
  std::string dl, sl;
  for (const std::string& d : dtypes) {
    if (!dl.empty()) dl += ',';
    dl += d;
  }
  for (const GemmShape& s : shapes) {
    if (!sl.empty()) sl += ',';
    sl += shape_label(s);
  }
  char tmpl[] = "/tmp/mixt-torch-gemm-XXXXXX";
  const int fd = mkstemp(tmpl);
  if (fd < 0) return out;
  close(fd);
  const std::string cmd = "python3 '" + script + "' --dtypes " + dl + " --shapes " + sl + " --runs " +
                          std::to_string(runs) + " --rotate-mb " + std::to_string(rotate_mb) + " --json '" + tmpl + "'";
  std::printf("running %s\n", cmd.c_str());
  std::fflush(stdout);
  if (std::system(cmd.c_str()) != 0) {
    std::printf("--torch: torch_gemm.py failed; no PyTorch column\n");
    std::remove(tmpl);
    return out;
  }
  try {
    std::ifstream in(tmpl);
    const Json j = Json::parse(in);
    for (const auto& r : j.at("rows"))
      out[r.at("dtype").get<std::string>() + " " + r.at("shape").get<std::string>()] = r.at("tflops").get<double>();
  } catch (const std::exception& e) {
    std::printf("--torch: cannot read torch_gemm.py's output: %s\n", e.what());
  }
  std::remove(tmpl);
  return out;
}

// Times f(i) (queued on the current stream) with CUDA events: one warm-up call, calls per run
// enough for ~5 ms, then `runs` runs; seconds per call.
template <class F>
Timing time_cuda(int runs, Device dev, F&& f) {
  const cuda::Stream stream = cuda::current_stream(dev);
  f(0);
  auto measure = [&](int64_t calls) {
    cuda::Event start(true), stop(true);
    start.record(stream);
    for (int64_t i = 0; i < calls; ++i) f(i);
    stop.record(stream);
    stop.synchronize();
    return static_cast<double>(start.elapsed_ms(stop)) / 1e3;
  };
  int64_t calls = 1;
  double first = 0;
  while (calls < 4096 && (first = measure(calls)) < 5e-3) calls *= 2;
  if (first > 20e-3) runs = std::min(runs, 5);  // long calls: 5 runs are enough and keep the sweep short
  std::vector<double> per_call;
  for (int r = 0; r < runs; ++r) per_call.push_back(measure(calls) / static_cast<double>(calls));
  std::sort(per_call.begin(), per_call.end());
  return {per_call[per_call.size() / 2], per_call.front(), per_call.back()};
}

int run_gemm_cuda(const cli::Args& args) {
  const Device dev = args.device();
  const std::vector<std::string> dtypes = dtypes_for(args, true);
  const std::string& shape_text = args.text("--shapes");
  const std::vector<GemmShape> shapes = parse_shapes(shape_text == "auto" ? kCudaDefaultShapes : shape_text);
  const int runs = static_cast<int>(args.integer("--runs"));
  // H200's L2 is 50 MB: rotate over at least 128 MB.
  const int64_t rotate_bytes = std::max<int64_t>(args.integer("--rotate-mb"), 128) * 1024 * 1024;
  std::map<std::string, double> torch;
  if (args.flag("--torch")) torch = run_torch(dtypes, shapes, runs, rotate_bytes >> 20);

  std::printf("gemm on %s: the GEMM engine with the heuristic's algorithm and autotuned (best of 8 timed), CUDA "
              "events, median of %d runs (spread min..max of the tuned), inputs rotated over >= %lld MB\n\n",
              dev.str().c_str(), runs, static_cast<long long>(rotate_bytes >> 20));
  std::printf("| %-8s | %-17s | %9s | %9s | %6s | %19s | %9s | %9s | %6s |\n", "dtype", "M x N x K", "heur TF/s",
              "tuned TF/s", "heur %", "tuned spread (us)", "rel err", "torch TF/s", "ratio");
  std::printf("|----------|-------------------|-----------|-----------|--------|---------------------|-----------|"
              "-----------|--------|\n");
  Json rows = Json::array();
  std::string csv = "dtype,m,n,k,heuristic_tflops,tuned_tflops,best_tflops,tuned_median_us,tuned_min_us,tuned_max_us,"
                    "rel_err,torch_tflops,ratio_vs_torch\n";
  std::vector<PlotPoint> points;
  std::vector<double> ratios;
  for (const GemmShape& s : shapes) {
    // Fresh inputs per shape (normal draws, never zeros), drawn once in float32 and converted on
    // the device per dtype; enough sets to span rotate_bytes at 2 bytes per element.
    Generator gen;
    gen.manual_seed(2026 + static_cast<uint64_t>(s.m * 31 + s.n * 7 + s.k));
    const int64_t set_bytes = (s.m * s.k + s.k * s.n) * 2;
    const int64_t sets = std::clamp<int64_t>(rotate_bytes / std::max<int64_t>(set_bytes, 1), 1, 32);
    std::vector<std::pair<Tensor, Tensor>> drawn;
    for (int64_t i = 0; i < sets; ++i) {
      const Tensor a = randn({s.m, s.k}, {.dtype = kFloat32}, &gen).to(dev);
      const Tensor w = randn({s.n, s.k}, {.dtype = kFloat32}, &gen).to(dev);  // b = w^T: K-major, as linear
      drawn.emplace_back(a, w);
    }
    for (const std::string& dname : dtypes) {
      const ScalarType dt = dtype_of(dname);
      const bool fp8 = dt == kFloat8_e4m3fn, fast = dname == "fp8-fast";
      if (fp8 && (s.k % 16 != 0 || s.n % 16 != 0)) {
        std::printf("| %-8s | %-17s | skipped: fp8 needs K and N multiples of 16\n", dname.c_str(),
                    shape_label(s).c_str());
        continue;
      }
      set_float32_matmul_precision(dname == "tf32" ? Float32MatmulPrecision::High : Float32MatmulPrecision::Highest);
      std::vector<std::pair<Tensor, Tensor>> in;
      for (const auto& [a, w] : drawn) in.emplace_back(a.to(dt), w.to(dt).t());
      const Tensor one = full({}, 1.0, {.dtype = kFloat32}).to(dev);
      ScaledMmOptions so;
      so.out_dtype = kBFloat16;
      so.use_fast_accum = fast;
      Tensor result;
      auto call = [&](int64_t i) {
        const auto& [a, b] = in[static_cast<size_t>(i) % in.size()];
        result = fp8 ? scaled_mm(a, b, one, one, so).out : mm(a, b);
      };
      gemm::set_algo_selection(gemm::AlgoSelection::Heuristic);
      const Timing heur = time_cuda(runs, dev, call);
      gemm::set_algo_selection(gemm::AlgoSelection::Autotune);
      const Timing tuned = time_cuda(runs, dev, call);
      gemm::set_algo_selection(gemm::AlgoSelection::Heuristic);
      // The error on the first rows (at most 256) against float64 on the device.
      const int64_t err_rows = std::min<int64_t>(s.m, 256);
      const Tensor a0 = narrow(in[0].first, 0, 0, err_rows);
      const Tensor got = fp8 ? scaled_mm(a0, in[0].second, one, one, so).out : mm(a0, in[0].second);
      const double err = relative_error(got.cpu(), mm(a0.to(kFloat64), in[0].second.to(kFloat64)).cpu());
      set_float32_matmul_precision(Float32MatmulPrecision::Highest);

      const double flop = 2.0 * double(s.m) * double(s.n) * double(s.k);
      const double heur_tf = flop / heur.median / 1e12, tuned_tf = flop / tuned.median / 1e12;
      const double best = std::max(heur_tf, tuned_tf);
      const std::string key = dname + " " + shape_label(s);
      const auto t = torch.find(key);
      const double torch_tf = t == torch.end() ? NAN : t->second;
      const double ratio = std::isnan(torch_tf) ? NAN : best / torch_tf;
      if (!std::isnan(ratio) && dname != "fp32" && dname != "tf32") ratios.push_back(ratio);
      std::printf("| %-8s | %-17s | %9.1f | %9.1f | %5.1f%% | %8.1f..%-9.1f | %9.2e | %9.1f | %6.3f |\n",
                  dname.c_str(), shape_label(s).c_str(), heur_tf, tuned_tf, 100 * heur_tf / best, tuned.min * 1e6,
                  tuned.max * 1e6, err, torch_tf, ratio);
      std::fflush(stdout);
      Json row = {{"dtype", dname},
                  {"m", s.m},
                  {"n", s.n},
                  {"k", s.k},
                  {"heuristic_tflops", heur_tf},
                  {"tuned_tflops", tuned_tf},
                  {"heuristic_share_of_best", heur_tf / best},
                  {"heuristic_us", {{"median", heur.median * 1e6}, {"min", heur.min * 1e6}, {"max", heur.max * 1e6}}},
                  {"tuned_us", {{"median", tuned.median * 1e6}, {"min", tuned.min * 1e6}, {"max", tuned.max * 1e6}}},
                  {"relative_error_vs_f64", err}};
      if (!std::isnan(torch_tf)) {
        row["torch_tflops"] = torch_tf;
        row["ratio_vs_torch"] = ratio;
      }
      rows.push_back(row);
      char line[320];
      std::snprintf(line, sizeof line, "%s,%lld,%lld,%lld,%.3f,%.3f,%.3f,%.3f,%.3f,%.3f,%.3e,%.3f,%.4f\n",
                    dname.c_str(), static_cast<long long>(s.m), static_cast<long long>(s.n),
                    static_cast<long long>(s.k), heur_tf, tuned_tf, best, tuned.median * 1e6, tuned.min * 1e6,
                    tuned.max * 1e6, err, torch_tf, ratio);
      csv += line;
      points.push_back({dname + " mixt", shape_label(s), best});
      if (!std::isnan(torch_tf)) points.push_back({dname + " torch", shape_label(s), torch_tf});
    }
  }
  double log_sum = 0;
  for (double r : ratios) log_sum += std::log(r);
  const double geomean = ratios.empty() ? NAN : std::exp(log_sum / static_cast<double>(ratios.size()));
  if (!ratios.empty())
    std::printf("\ngeomean of mixt / torch over the fp16, bf16 and fp8 rows: %.3f (%zu rows)\n", geomean,
                ratios.size());
  const gemm::PlanCacheStats st = gemm::plan_cache_stats();
  Json figures = {{"command", "gemm"}, {"device", dev.str()}, {"runs", runs}, {"rows", rows},
                  {"plans", st.plans},  {"autotuned", st.autotuned}};
  if (!ratios.empty()) figures["geomean_ratio_vs_torch"] = geomean;
  write_figures(args.text("--json"), figures);
  if (const std::string& path = args.text("--csv"); !path.empty()) {
    io::write_file_atomic(path, csv);
    std::printf("CSV written to %s\n", path.c_str());
  }
  write_plot(args.text("--plot"), points, "TFLOP/s");
  return 0;
}

}  // namespace

int run_gemm(const cli::Args& args) {
  if (args.device().is_cuda()) return run_gemm_cuda(args);
  const std::vector<std::string> dtypes = dtypes_for(args, false);
  for (const std::string& d : dtypes)
    if (d == "tf32" || d == "fp8" || d == "fp8-fast")
      throw cli::UsageError("--dtypes: " + d + " is measured on CUDA only (--device cuda)");
  const std::string& shape_text = args.text("--shapes");
  const std::vector<GemmShape> shapes = parse_shapes(shape_text == "auto" ? kCpuDefaultShapes : shape_text);
  const int runs = static_cast<int>(args.integer("--runs"));
  const int64_t rotate_bytes = args.integer("--rotate-mb") * 1024 * 1024;

  std::printf("gemm on the CPU: mixt mm vs OpenBLAS called directly (on %d threads each), median of %d runs "
              "(spread min..max), inputs rotated over >= %lld MB\n\n",
              omp_get_max_threads(), runs, static_cast<long long>(rotate_bytes >> 20));
  // OpenBLAS picks its kernels by CPU unless OPENBLAS_CORETYPE names them: say which ran (its
  // Haswell kernels run sgemm at about 0.57 of its AVX-512 ones on an AVX-512 machine).
  const char* forced_core = std::getenv("OPENBLAS_CORETYPE");
  std::printf("OpenBLAS kernels: %s (%s)\n\n", openblas_get_corename(),
              forced_core ? ("OPENBLAS_CORETYPE=" + std::string(forced_core)).c_str() : "its own choice for this CPU");
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
  std::vector<PlotPoint> points;
  for (size_t i = 0; i < cases.size(); ++i)
    points.push_back({cases[i].dtype_name + " mixt", shape_label(cases[i].shape),
                      2.0 * double(cases[i].shape.m) * double(cases[i].shape.n) * double(cases[i].shape.k) /
                          mixt_times[i].median / 1e9});
  write_plot(args.text("--plot"), points, "GFLOP/s");
  return 0;
}

cli::Command gemm_command() {
  return {.name = "gemm",
          .summary = "GEMM rate per shape and dtype: vs the BLAS (CPU), heuristic vs autotuned and vs PyTorch (CUDA)",
          .options = {cli::device_option("where to run: cpu (mixt vs OpenBLAS) or cuda (the GEMM engine)", true),
                      {.name = "--dtypes", .kind = cli::Kind::List, .metavar = "LIST",
                       .help = "dtypes to measure (auto: f32,f64,bf16,f16 on the CPU; fp32,tf32,fp16,bf16,fp8,fp8-fast "
                               "on CUDA)",
                       .default_value = "auto", .choices = kDtypes},
                      {.name = "--shapes", .kind = cli::Kind::Text, .metavar = "MxNxK,...",
                       .help = "shapes (auto: CPU square 64..1024 and skinny; CUDA square 1024..16384, LLM shapes, "
                               "skinny M = 16 and 128)",
                       .default_value = "auto"},
                      {.name = "--runs", .kind = cli::Kind::Int, .metavar = "R", .help = "timed runs per figure",
                       .default_value = "15", .max = 10000},
                      {.name = "--rotate-mb", .kind = cli::Kind::Int, .metavar = "MB",
                       .help = "input sets rotated so that they span at least this much memory",
                       .default_value = "64", .max = 4096},
                      cli::json_option(),
                      {.name = "--csv", .kind = cli::Kind::Text, .metavar = "FILE",
                       .help = "also write the figures as CSV to FILE"},
                      {.name = "--plot", .kind = cli::Kind::Text, .metavar = "FILE.svg|FILE.png",
                       .help = "also plot the rate by shape and dtype (gnuplot; the script is kept beside FILE)"},
                      {.name = "--torch", .kind = cli::Kind::Flag,
                       .help = "CUDA: also time torch.mm / torch._scaled_mm on the same shapes (bench/torch_gemm.py)"}},
          .run = run_gemm};
}

}  // namespace mixt::bench
