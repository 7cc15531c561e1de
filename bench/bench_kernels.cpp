// mixt-bench kernels: the memory-bound kernels of the issue's speed targets — casts,
// plain elementwise ops, softmax / log_softmax / layer_norm / rms_norm / gelu (and the
// fused backward ops of softmax, the norms and gelu/silu; cross_entropy forward and
// backward, fused and as separate ops), the
// fused unscale + check and the fused AdamW step — in GB/s and as a ratio to the
// device's copy rate measured in the same run (on the CPU: memcpy split over the
// OpenMP threads; on CUDA: mixt's device-to-device copy_). Every figure is the
// median of --reps timed runs; CUDA runs are timed with events on the current stream.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <mixt/mixt.h>
#include <mixt/runtime/cuda.h>
#include <mixt/runtime/cuda_stream.h>

#include "bench_json.h"
#include "bench_kernels.h"
#include "bench_util.h"

namespace mixt::bench {
namespace {

// Problem sizes: the issue's on CUDA, scaled down on the CPU (where the full sizes take minutes).
struct Sizes {
  int64_t elementwise_bytes;   // float32 bytes of the cast / elementwise source
  int64_t rows, cols;          // the [rows, cols] bfloat16 activation of the row kernels
  int64_t unscale_large;       // float32 elements in 200 tensors
  int64_t unscale_small;       // float32 elements in 2000 tensors
  int64_t adam_params;         // float32 parameters in 200 tensors
};

Sizes sizes_for(const Device& device, bool small) {
  if (small) return {16 << 20, 256, 4096, 2'000'000, 2'000'000, 1'000'000};
  if (device.is_cuda()) return {int64_t{1} << 30, 16384, 4096, 1'000'000'000, 100'000'000, 134'217'728};
  return {256 << 20, 2048, 4096, 50'000'000, 10'000'000, 16'777'216};
}

// Times `f` on `device`: `reps` runs after one warm-up, each the mean over `inner` calls; the median run in seconds.
template <class F>
double median_seconds(const Device& device, int reps, int inner, F&& f) {
  f();
  if (device.is_cuda()) cuda::synchronize();
  std::vector<double> runs;
  for (int r = 0; r < reps; ++r) {
    if (device.is_cuda()) {
      const cuda::Stream stream = cuda::current_stream(device);
      cuda::Event start(true), end(true);
      start.record(stream);
      for (int i = 0; i < inner; ++i) f();
      end.record(stream);
      end.synchronize();
      runs.push_back(start.elapsed_ms(end) / 1e3 / inner);
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < inner; ++i) f();
      runs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / inner);
    }
  }
  std::sort(runs.begin(), runs.end());
  return runs[runs.size() / 2];
}

// `total` elements of `dtype` split into `count` equal tensors on `device`, all `value`.
std::vector<Tensor> tensor_list(int64_t total, int64_t count, double value, const Device& device) {
  std::vector<Tensor> list;
  for (int64_t i = 0; i < count; ++i) list.push_back(full({total / count}, value, {.dtype = kFloat32, .device = device}));
  return list;
}

// The CPU's copy rate: memcpy of `bytes`, split over the OpenMP threads (r + w bytes per second).
double cpu_copy_rate(int64_t bytes, int reps) {
  std::vector<char> src(static_cast<size_t>(bytes), 1), dst(static_cast<size_t>(bytes));
  const double s = median_seconds(Device::cpu(), reps, 1, [&] { parallel_memcpy(dst.data(), src.data(), bytes); });
  return 2.0 * static_cast<double>(bytes) / s;
}

}  // namespace

int run_kernels(const cli::Args& args) {
  const Device device = args.device();
  const int reps = static_cast<int>(args.integer("--reps"));
  const Sizes z = sizes_for(device, args.flag("--small"));
  const int inner = device.is_cuda() ? 3 : 1;
  const TensorOptions f32{.dtype = kFloat32, .device = device};
  const TensorOptions bf16{.dtype = kBFloat16, .device = device};

  Json rows = Json::array();
  double copy_rate = 0;
  std::printf("mixt-bench kernels on %s: median of %d runs\n\n", device.str().c_str(), reps);
  std::printf("| %-54s | %9s | %8s | %6s | %6s |\n", "kernel (bytes it must move)", "ms", "GB/s", "xcopy", "target");
  std::printf("|%s|%s|%s|%s|%s|\n", std::string(56, '-').c_str(), std::string(11, '-').c_str(),
              std::string(10, '-').c_str(), std::string(8, '-').c_str(), std::string(8, '-').c_str());
  // One table row: `target` is the issue's lowest acceptable xcopy on CUDA (0: none).
  auto row = [&](const std::string& what, double bytes, double seconds, double target) {
    const double rate = bytes / seconds;
    const double x = copy_rate > 0 ? rate / copy_rate : 1.0;
    char t[16] = "";
    if (target > 0) std::snprintf(t, sizeof t, "%.2f", target);
    std::printf("| %-54s | %9.3f | %8.1f | %6.2f | %6s |\n", what.c_str(), seconds * 1e3, rate / 1e9, x, t);
    Json r = {{"kernel", what}, {"bytes", bytes}, {"ms", seconds * 1e3}, {"gbs", rate / 1e9}, {"x_copy", x}};
    if (target > 0) r["target_x_copy"] = target;
    rows.push_back(r);
  };

  // ---- the copy rate, then casts and plain elementwise ops over the same bytes ----
  const int64_t n = z.elementwise_bytes / 4;
  const double nb = static_cast<double>(n);
  {
    Tensor a = full({n}, 0.75, f32), b = full({n}, 1.25, f32), out = empty({n}, f32);
    Tensor h = empty({n}, bf16), h2 = full({n}, 0.5, bf16);
    if (device.is_cuda()) {
      const double s = median_seconds(device, reps, inner, [&] { out.copy_(a); });
      copy_rate = 8 * nb / s;
      row("copy_ float32 -> float32 (the copy rate)", 8 * nb, s, 0);
    } else {
      copy_rate = cpu_copy_rate(4 * n, reps);
      row("memcpy over the OpenMP threads (the copy rate)", 8 * nb, 8 * nb / copy_rate, 0);
      row("copy_ float32 -> float32", 8 * nb, median_seconds(device, reps, inner, [&] { out.copy_(a); }), 0);
    }
    row("cast float32 -> bfloat16", 6 * nb, median_seconds(device, reps, inner, [&] { h.copy_(a); }), 0.9);
    row("cast bfloat16 -> float32", 6 * nb, median_seconds(device, reps, inner, [&] { out.copy_(h); }), 0.9);
    row("add float32 (a + b)", 12 * nb, median_seconds(device, reps, inner, [&] { (void)add(a, b); }), 0.9);
    row("mul_ bfloat16 in place (x *= y)", 6 * nb, median_seconds(device, reps, inner, [&] { h.mul_(h2); }), 0.9);
    // A random condition (a branch per element would mispredict half the time), and a
    // transposing copy (a cache line per element read if done naively).
    const Tensor cond = gt(rand({n}, f32), 0.5);
    row("where float32 (random condition)", 13 * nb,
        median_seconds(device, reps, inner, [&] { (void)where(cond, a, b); }), 0);
    const Tensor grid = a.view({1024, n / 1024});
    row("contiguous() of a transposed float32 matrix", 8 * nb,
        median_seconds(device, reps, inner, [&] { (void)grid.t().contiguous(); }), 0);
  }

  // ---- the row kernels over [rows, cols] bfloat16 (read once, write once) ----
  {
    const Shape shape{z.rows, z.cols};
    Tensor x = randn(shape, {.dtype = kFloat32}).to(kBFloat16).to(device);
    Tensor w = full({z.cols}, 1.0, bf16), bias = full({z.cols}, 0.0, bf16);
    const double bytes = 4.0 * static_cast<double>(z.rows * z.cols);
    char shape_text[48];
    std::snprintf(shape_text, sizeof shape_text, " [%lld, %lld] bf16", static_cast<long long>(z.rows),
                  static_cast<long long>(z.cols));
    const std::string s = shape_text;
    row("softmax" + s, bytes, median_seconds(device, reps, inner, [&] { (void)nn::functional::softmax(x, 1); }), 0.8);
    row("log_softmax" + s, bytes,
        median_seconds(device, reps, inner, [&] { (void)nn::functional::log_softmax(x, 1); }), 0.8);
    row("layer_norm" + s, bytes,
        median_seconds(device, reps, inner, [&] { (void)nn::functional::layer_norm(x, {z.cols}, w, bias); }), 0.8);
    row("rms_norm" + s, bytes,
        median_seconds(device, reps, inner, [&] { (void)nn::functional::rms_norm(x, {z.cols}, w); }), 0.8);
    row("gelu" + s, bytes, median_seconds(device, reps, inner, [&] { (void)nn::functional::gelu(x); }), 0.8);
    // The fused backward ops (read the gradient and y or x, write the input's gradient; the norms also
    // write the float32 weight and bias gradients, negligible here). No target: the issue sets none.
    namespace F = nn::functional;
    const Tensor g = randn(shape, {.dtype = kFloat32}).to(kBFloat16).to(device), y = F::softmax(x, 1);
    const Tensor xf = x.to(kFloat32), mean = xf.mean({1}), rstd = rsqrt(var(xf, {1}, 0) + 1e-5);
    auto mean_of = [](const Tensor& t) { return t.mean({1}, true); };
    row("softmax_backward" + s, 1.5 * bytes, median_seconds(device, reps, inner, [&] { (void)F::softmax_backward(g, y, 1); }), 0);
    // The same gradients as separate ops (autograd's formulas before the fused ops), for the ratio.
    row("softmax_backward as separate ops" + s, 1.5 * bytes, median_seconds(device, reps, inner, [&] {
          const Tensor yf = y.to(kFloat32), gf = g.to(kFloat32);
          (void)mul(yf, sub(gf, sum(mul(gf, yf), {1}, true))).to(kBFloat16);
        }), 0);
    row("layer_norm_backward" + s, 1.5 * bytes, median_seconds(device, reps, inner, [&] {
          (void)F::layer_norm_backward(g, x, {z.cols}, mean, rstd, w);
        }), 0);
    row("layer_norm_backward as separate ops" + s, 1.5 * bytes, median_seconds(device, reps, inner, [&] {
          const Tensor m = mean.unsqueeze(1), r = rstd.unsqueeze(1), gf = g.to(kFloat32);
          const Tensor xhat = mul(sub(xf, m), r), gw = mul(gf, w.to(kFloat32));
          const Tensor inner_g = sub(sub(gw, mul(xhat, mean_of(mul(gw, xhat)))), mean_of(gw));
          (void)mul(r, inner_g).to(kBFloat16);
          (void)sum(mul(gf, xhat), {0});
          (void)sum(gf, {0});
        }), 0);
    row("rms_norm_backward" + s, 1.5 * bytes, median_seconds(device, reps, inner, [&] {
          (void)F::rms_norm_backward(g, x, {z.cols}, rstd, w);
        }), 0);
    // gelu's and silu's (read the gradient and x, write x's gradient), and gelu's former autograd
    // composite (its elementwise ops in x's dtype), for the ratio.
    row("gelu_backward" + s, 1.5 * bytes, median_seconds(device, reps, inner, [&] { (void)F::gelu_backward(g, x); }), 0);
    row("gelu_backward as separate ops" + s, 1.5 * bytes, median_seconds(device, reps, inner, [&] {
          const Tensor cdf = mul(add(erf(mul(x, 0.70710678118654752)), 1), 0.5);
          const Tensor pdf = mul(exp(mul(mul(x, x), -0.5)), 0.39894228040143267794);
          (void)mul(g, add(cdf, mul(x, pdf)));
        }), 0);
    row("silu_backward" + s, 1.5 * bytes, median_seconds(device, reps, inner, [&] { (void)F::silu_backward(g, x); }), 0);
    // cross_entropy's forward and backward through autograd (read the logits twice forward, once
    // backward, write their gradient once: counted as three passes), fused (cross_entropy_rows)
    // and as the separate ops a user would write (log_softmax, then nll_loss), for the ratio.
    {
      std::vector<int64_t> tv(static_cast<size_t>(z.rows));
      for (size_t i = 0; i < tv.size(); ++i) tv[i] = static_cast<int64_t>((i * 7919) % static_cast<size_t>(z.cols));
      const Tensor target = from_vector(tv, {z.rows}).to(device);
      Tensor xg = x.detach();
      xg.requires_grad_(true);
      auto fwd_bwd = [&](auto&& loss_of) { (void)autograd::grad({loss_of()}, {xg}); };
      row("cross_entropy fwd+bwd" + s, 1.5 * bytes, median_seconds(device, reps, inner, [&] {
            fwd_bwd([&] { return F::cross_entropy(xg, target); });
          }), 0);
      row("cross_entropy fwd+bwd as separate ops" + s, 1.5 * bytes, median_seconds(device, reps, inner, [&] {
            fwd_bwd([&] { return F::nll_loss(F::log_softmax(xg, 1), target); });
          }), 0);
    }
  }

  // ---- the fused multi-tensor ops ----
  {
    const Tensor inv = full({}, 1.0 - 1.0 / 128, f32);  // keeps repeatedly unscaled values normal
    Tensor found = full({}, 0.0, f32);
    for (auto [total, count, target] : {std::tuple{z.unscale_large, int64_t{200}, 0.9},
                                        std::tuple{z.unscale_small, int64_t{2000}, 0.75}}) {
      std::vector<Tensor> g = tensor_list(total, count, 0.5, device);
      char label[80];
      std::snprintf(label, sizeof label, "unscale+check %.0e f32 in %lld tensors", static_cast<double>(total),
                    static_cast<long long>(count));
      row(label, 8.0 * static_cast<double>(total),
          median_seconds(device, reps, inner, [&] { amp::unscale_check_(g, found, inv); }), target);
    }
    const int64_t count = 200;
    std::vector<Tensor> p = tensor_list(z.adam_params, count, 0.1, device);
    std::vector<Tensor> g = tensor_list(z.adam_params, count, 0.01, device);
    std::vector<Tensor> m = tensor_list(z.adam_params, count, 0.0, device);
    std::vector<Tensor> v = tensor_list(z.adam_params, count, 0.0, device);
    std::vector<Tensor> steps;
    for (int64_t i = 0; i < count; ++i) steps.push_back(full({}, 0.0, f32));
    const Tensor no_inf;
    const optim::fused::AdamHyper h{.lr = 1e-3, .weight_decay = 0.01, .decoupled = true};
    char label[80];
    std::snprintf(label, sizeof label, "fused AdamW over %.3g f32 parameters", static_cast<double>(z.adam_params));
    // param r+w, grad r, exp_avg r+w, exp_avg_sq r+w: 7 x 4 bytes per parameter.
    row(label, 28.0 * static_cast<double>(z.adam_params),
        median_seconds(device, reps, inner, [&] { optim::fused::adam_step_(p, g, m, v, {}, steps, no_inf, h); }), 0.85);
  }

  // ---- the host cost of one dispatched small op (queued, never waited for) ----
  double small_op_us = 0, bare_launch_us = 0;
  {
    Tensor a = full({16}, 1.0, f32), b = full({16}, 2.0, f32);
    const int64_t calls = 20000;
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < calls; ++i) (void)add(a, b);
    small_op_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / calls;
    if (device.is_cuda()) cuda::synchronize();
    std::printf("\nhost cost of one dispatched add of 16 float32 elements: %.2f us per call\n", small_op_us);
    if (device.is_cuda()) {
      // The yardstick of the speed target (within 1.5 us of a bare launch): an empty kernel, queued the same way.
      const auto t1 = std::chrono::steady_clock::now();
      for (int64_t i = 0; i < calls; ++i) cuda::launch_empty_kernel(device);  // the device the adds ran on
      bare_launch_us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t1).count() / calls;
      cuda::synchronize();
      std::printf("host cost of one bare launch of an empty kernel: %.2f us per call (dispatch overhead %.2f us; "
                  "target: at most 1.5)\n", bare_launch_us, small_op_us - bare_launch_us);
    }
  }
  std::printf("GB/s counts the bytes a kernel must move; xcopy = its rate / the copy rate of the first row;\n"
              "target = the lowest xcopy the CUDA kernels aim for (see the CUDA backend's speed targets).\n");
  write_figures(args.text("--json"), {{"command", "kernels"},
                                      {"device", device.str()},
                                      {"reps", reps},
                                      {"copy_gbs", copy_rate / 1e9},
                                      {"small_op_host_us", small_op_us},
                                      {"bare_launch_host_us", device.is_cuda() ? Json(bare_launch_us) : Json(nullptr)},
                                      {"rows", rows}});
  return 0;
}

cli::Command kernels_command() {
  return {.name = "kernels",
          .summary = "casts, elementwise, softmax/norm rows and the fused AMP/AdamW ops in GB/s against the copy rate",
          .options = {cli::device_option("where the kernels run", /*needs_usable=*/true),
                      {.name = "--small", .kind = cli::Kind::Flag,
                       .help = "small problem sizes (a quick check of the command, not a measurement)"},
                      {.name = "--reps", .kind = cli::Kind::Int, .metavar = "R",
                       .help = "timed runs per kernel, the median is shown", .default_value = "5", .max = 10'000},
                      cli::json_option()},
          .run = run_kernels};
}

}  // namespace mixt::bench
