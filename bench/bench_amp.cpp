// The grad scaler's hot paths on the CPU: the fused unscale + non-finite check
// over 1e8 float32 gradient elements split into 200 and 2000 tensors, against
// this machine's memory copy rate and the unfused per-tensor ops, measured in
// the same run; and a full scaler step (unscale, check, fused AdamW, update).
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <vector>

#include <omp.h>

#include <mixt/mixt.h>

#include "bench_amp.h"
#include "bench_json.h"

namespace mixt::bench {
namespace {

// Seconds of the best of `reps` runs of f.
template <class F>
double best_seconds(int reps, F&& f) {
  f();  // warm up (first touch)
  double best = 1e300;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s < best) best = s;
  }
  return best;
}

std::vector<Tensor> gradients(int64_t total, int64_t count) {
  std::vector<Tensor> g;
  const int64_t each = total / count;
  for (int64_t i = 0; i < count; ++i) g.push_back(full({each}, 0.5, {.dtype = kFloat32}));
  return g;
}

// AdamW without its fused kernel: the composite per-parameter update (the reference path).
struct CompositeAdamW : optim::AdamW {
  using optim::AdamW::AdamW;

 protected:
  bool fused_update(const optim::ParamGroup&, std::span<ParamState* const>, std::span<const Tensor>,
                    std::span<const Tensor>, const Tensor&) override {
    return false;
  }
};

}  // namespace

int run_amp(const cli::Args& args) {
  const int64_t total = args.integer("--elements");
  const int reps = static_cast<int>(args.integer("--reps"));
  const double bytes = static_cast<double>(total) * 4;

  // The peer: memcpy of the same number of bytes (read + write), on one thread and
  // split over the OpenMP threads; the faster is this machine's copy rate.
  std::vector<float> src(static_cast<size_t>(total), 1.0f), dst(static_cast<size_t>(total));
  const double copy1_s = best_seconds(reps, [&] { std::memcpy(dst.data(), src.data(), static_cast<size_t>(bytes)); });
  const double copyn_s = best_seconds(reps, [&] {
#pragma omp parallel
    {
      const int64_t t = omp_get_thread_num(), n = omp_get_num_threads();
      const int64_t b = total * t / n, e = total * (t + 1) / n;
      std::memcpy(dst.data() + b, src.data() + b, static_cast<size_t>(e - b) * 4);
    }
  });
  const double copy_gbs = 2 * bytes / std::min(copy1_s, copyn_s) / 1e9;
  Json rows = Json::array();
  // Prints one table row and keeps it for the JSON figures.
  auto row = [&](const char* what, double moved, double seconds, double copy) {
    const double gbs = moved / seconds / 1e9;
    std::printf("| %-44s | %9.2f | %7.1f | %5.2f |\n", what, seconds * 1e3, gbs, gbs / copy);
    rows.push_back({{"operation", what}, {"bytes", moved}, {"ms", seconds * 1e3}, {"gbs", gbs}, {"x_copy", gbs / copy}});
  };
  src = {};
  dst = {};

  std::printf("amp: %lld float32 gradient elements (%.0f MB), best of %d, %d OpenMP threads\n\n",
              static_cast<long long>(total), bytes / 1e6, reps, omp_get_max_threads());
  std::printf("| %-44s | %9s | %7s | %5s |\n", "operation (bytes moved)", "ms", "GB/s", "xcopy");
  std::printf("|%s|%s|%s|%s|\n", std::string(46, '-').c_str(), std::string(11, '-').c_str(),
              std::string(9, '-').c_str(), std::string(7, '-').c_str());
  row("memcpy, one thread (r+w)", 2 * bytes, copy1_s, copy_gbs);
  row("memcpy, split over the threads (r+w)", 2 * bytes, copyn_s, copy_gbs);

  // An inverse scale just below 1 keeps the repeatedly unscaled gradients normal
  // numbers (1/65536 would make them subnormal after a few runs, which is slow).
  const Tensor inv = full({}, 1.0 - 1.0 / 128, {.dtype = kFloat32});
  const Tensor one = full({}, 1.0, {.dtype = kFloat32});
  for (int64_t count : {int64_t{200}, int64_t{2000}}) {
    std::vector<Tensor> g = gradients(total, count);
    Tensor found = zeros({}, {.dtype = kFloat32});
    const double fused = best_seconds(reps, [&] { amp::unscale_check_(g, found, inv); });
    const double check = best_seconds(reps, [&] { amp::unscale_check_(g, found, one); });
    const double unfused = best_seconds(reps, [&] {
      Tensor bad = zeros({}, {.dtype = kBool});
      for (Tensor& t : g) {
        bad = logical_or(bad, any(logical_not(isfinite(t))));
        t.mul_(inv);
      }
      (void)bad.item<bool>();
    });
    char label[96];
    std::snprintf(label, sizeof label, "unscale+check fused, %lld tensors (r+w)", static_cast<long long>(count));
    row(label, 2 * bytes, fused, copy_gbs);
    std::snprintf(label, sizeof label, "check only (scale 1), %lld tensors (r)", static_cast<long long>(count));
    row(label, bytes, check, copy_gbs);
    std::snprintf(label, sizeof label, "unfused isfinite/any + mul_, %lld tensors", static_cast<long long>(count));
    row(label, 2 * bytes, unfused, copy_gbs);
  }

  // A full scaler step: unscale + check, the host read, fused AdamW, the scale update.
  {
    std::vector<Tensor> params;
    for (int64_t i = 0; i < 200; ++i)
      params.push_back(full({total / 200}, 0.1, {.dtype = kFloat32, .requires_grad = true}));
    optim::AdamW opt(params, {.lr = 1e-3});
    amp::GradScaler scaler({.initial_scale = 1.0 + 1.0 / 128});  // see `inv` above
    scaler.scale(one);
    auto set_grads = [&] {
      for (Tensor& p : params) p.set_grad(full(p.sizes(), 1.0, {.dtype = kFloat32}));
    };
    set_grads();
    const double step_s = best_seconds(reps, [&] {
      scaler.step(opt);
      scaler.update();
    });
    // unscale r+w of grads, AdamW: param r+w, grad r, exp_avg r+w, exp_avg_sq r+w.
    row("scaler step + AdamW + update (9 x 4 B/elem)", 9 * bytes, step_s, copy_gbs);
    const double sync_free_s = best_seconds(reps, [&] {
      scaler.step_sync_free(opt);
      scaler.update();
    });
    row("sync-free step + AdamW + update", 9 * bytes, sync_free_s, copy_gbs);
    const double plain_s = best_seconds(reps, [&] { opt.step(); });
    row("AdamW step alone (7 x 4 B/elem)", 7 * bytes, plain_s, copy_gbs);
    CompositeAdamW composite(params, {.lr = 1e-3});
    const double composite_s = best_seconds(reps, [&] { composite.step(); });
    row("AdamW step, composite ops (reference path)", 7 * bytes, composite_s, copy_gbs);
  }
  std::printf("\nGB/s counts the bytes each operation must move; xcopy = its rate / the faster memcpy's rate.\n");
  write_figures(args.text("--json"), {{"command", "amp"},
                                      {"elements", total},
                                      {"reps", reps},
                                      {"omp_threads", omp_get_max_threads()},
                                      {"copy_gbs", copy_gbs},
                                      {"rows", rows}});
  return 0;
}

cli::Command amp_command() {
  return {.name = "amp",
          .summary = "the grad scaler's unscale + check and a full scaler step, in GB/s against memcpy",
          .options = {{.name = "--elements", .kind = cli::Kind::Int, .metavar = "N",
                       .help = "float32 gradient elements in all, split into 200 and into 2000 tensors",
                       .default_value = "100000000", .min = 2000},
                      {.name = "--reps", .kind = cli::Kind::Int, .metavar = "R", .help = "timed runs, the best is shown",
                       .default_value = "5", .max = 1'000'000},
                      cli::json_option()},
          .run = run_amp};
}

}  // namespace mixt::bench
