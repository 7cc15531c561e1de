// Host cost of the dispatcher: the same op on 4x4 CPU tensors called through
// its front end (OpCall + key computation + table lookup + kernel) and by
// calling the registered CPU kernel directly with a prepared OpCall.
#include <cstdio>

#include <mixt/mixt.h>

#include "bench_dispatch.h"
#include "bench_json.h"
#include "bench_util.h"

namespace mixt::bench {
namespace {

// A kernel that does nothing: isolates the dispatcher's own cost.
void noop_kernel(OpCall& c, DispatchKeySet) { c.out[0] = c.in[0]; }

struct Row {
  const char* name;
  double dispatched, direct;
};

void print_row(const Row& r) {
  std::printf("%-28s %12.1f %12.1f %12.1f %8.3f\n", r.name, r.dispatched, r.direct, r.dispatched - r.direct,
              r.dispatched / r.direct);
}

}  // namespace

int run_dispatch(const cli::Args& args) {
  const int64_t iters = args.integer("--iters");
  Tensor a = randn({4, 4}), b = randn({4, 4});
  volatile int64_t sink = 0;

  const KernelFn add_kernel = op_entry(OpId::add).kernels[static_cast<int>(DispatchKey::CPU)];
  const KernelFn mm_kernel = op_entry(OpId::mm).kernels[static_cast<int>(DispatchKey::CPU)];
  const DispatchKeySet cpu_keys(DispatchKey::CPU);
  static const OpId noop = [] {
    OpId id = register_op({.name = "bench::noop", .min_inputs = 1, .max_inputs = 1, .outputs = 1});
    register_kernel(id, DispatchKey::CPU, noop_kernel);
    return id;
  }();

  Row rows[3];
  rows[0].name = "add 4x4 f32";
  rows[0].dispatched = ns_per_call([&] { sink = sink + add(a, b).numel(); }, iters);
  rows[0].direct = ns_per_call(
      [&] {
        OpCall c(OpId::add);
        c.push(a);
        c.push(b);
        add_kernel(c, cpu_keys);
        sink = sink + c.out[0].numel();
      },
      iters);
  rows[1].name = "mm 4x4 f32";
  rows[1].dispatched = ns_per_call([&] { sink = sink + mm(a, b).numel(); }, iters);
  rows[1].direct = ns_per_call(
      [&] {
        OpCall c(OpId::mm);
        c.push(a);
        c.push(b);
        mm_kernel(c, cpu_keys);
        sink = sink + c.out[0].numel();
      },
      iters);
  rows[2].name = "no-op custom op";
  rows[2].dispatched = ns_per_call(
      [&] {
        OpCall c(noop);
        c.push(a);
        sink = sink + call_op(c).numel();
      },
      iters);
  rows[2].direct = ns_per_call(
      [&] {
        OpCall c(noop);
        c.push(a);
        noop_kernel(c, cpu_keys);
        sink = sink + c.out[0].numel();
      },
      iters);

  // Autocast: the weight is a float32 parameter (its bf16 cast comes from the cache);
  // the activation is already bf16, as between layers of a bf16 model. Each pair is
  // timed alternately (off, on, off, on, ...) so both figures see the same machine.
  Tensor w = randn({4, 4}).set_requires_grad(true);
  Tensor x16 = randn({4, 4}).to(kBFloat16), w16 = w.detach().to(kBFloat16);
  // The no-op op under a `lower` policy, reading the parameter: only autocast's own
  // work (decision, cast-cache lookup, redispatch) separates the two figures.
  autocast::set_policy(DeviceType::CPU, noop, autocast::Policy::Lower);
  auto noop_call = [&](const Tensor& t) {
    OpCall c(noop);
    c.push(t);
    sink = sink + call_op(c).numel();
  };
  autograd::NoGradGuard no_grad;
  auto autocast_on = [](auto&& f) {
    return [f](int64_t n) {
      autocast::Guard g({.device = DeviceType::CPU, .dtype = kBFloat16});
      for (int64_t i = 0; i < n; ++i) f();
    };
  };
  auto plain = [](auto&& f) {
    return [f](int64_t n) {
      for (int64_t i = 0; i < n; ++i) f();
    };
  };
  const auto [mm_low, mm_autocast] = ns_per_call_pair(plain([&] { sink = sink + mm(x16, w16).numel(); }),
                                                      autocast_on([&] { sink = sink + mm(x16, w).numel(); }), iters);
  const auto [add_off, add_autocast] = ns_per_call_pair(plain([&] { sink = sink + add(x16, x16).numel(); }),
                                                        autocast_on([&] { sink = sink + add(x16, x16).numel(); }), iters);
  const auto [noop_off, noop_on] =
      ns_per_call_pair(plain([&] { noop_call(w16); }), autocast_on([&] { noop_call(w); }), iters);
  const auto [mm_f32, mm_autocast_f32_input] = ns_per_call_pair(
      plain([&] { sink = sink + mm(a, w).numel(); }), autocast_on([&] { sink = sink + mm(a, w).numel(); }), iters);

  std::printf("mixt-bench dispatch: host ns per op, best of 7 x %lld calls, 1 thread of the caller\n",
              static_cast<long long>(iters));
  std::printf("%-28s %12s %12s %12s %8s\n", "op", "dispatched", "direct", "overhead", "ratio");
  for (const Row& r : rows) print_row(r);
  std::printf("target: overhead < 60 ns/op (LibTorch on the H200 host: add 4x4 569 ns, mm 4x4 1343 ns per call)\n\n");
  std::printf("autocast (CPU, bfloat16, no_grad), ns per op\n");
  std::printf("%-44s %10.1f\n", "mm bf16 x bf16, autocast off", mm_low);
  std::printf("%-44s %10.1f\n", "mm bf16 x f32 param (cached cast), autocast on", mm_autocast);
  std::printf("%-44s %10.1f   (+%.1f ns)\n", "  = autocast overhead", mm_autocast - mm_low, mm_autocast - mm_low);
  std::printf("%-44s %10.1f / %.1f\n", "mm f32 x f32 param, off / on (casts x)", mm_f32, mm_autocast_f32_input);
  std::printf("%-44s %10.1f / %.1f   (+%.1f ns)\n", "add (pass-through), autocast off / on", add_off, add_autocast,
              add_autocast - add_off);
  std::printf("%-44s %10.1f / %.1f   (+%.1f ns)\n", "no-op op, lower policy, off / on (cached w)", noop_off, noop_on,
              noop_on - noop_off);
  std::printf("target: autocast adds < 100 ns per op (LibTorch: mm 1343 ns -> 2829 ns under autocast)\n");

  Json ops = Json::array();
  for (const Row& r : rows)
    ops.push_back({{"op", r.name}, {"dispatched_ns", r.dispatched}, {"direct_ns", r.direct},
                   {"overhead_ns", r.dispatched - r.direct}, {"ratio", r.dispatched / r.direct}});
  const auto pair = [](double off, double on) { return Json{{"off_ns", off}, {"on_ns", on}}; };
  write_figures(args.text("--json"),
                {{"command", "dispatch"},
                 {"iters", iters},
                 {"ops", ops},
                 {"autocast",
                  {{"device", "cpu"},
                   {"dtype", "bfloat16"},
                   {"mm_bf16_param_cached_cast", pair(mm_low, mm_autocast)},
                   {"mm_f32_param", pair(mm_f32, mm_autocast_f32_input)},
                   {"add_pass_through", pair(add_off, add_autocast)},
                   {"noop_lower_policy", pair(noop_off, noop_on)}}}});
  return 0;
}

cli::Command dispatch_command() {
  return {.name = "dispatch",
          .summary = "ns/op of add and mm on 4x4 CPU tensors, dispatched vs direct, and autocast's cost",
          .options = {{.name = "--iters", .kind = cli::Kind::Int, .metavar = "N",
                       .help = "calls per timed run, best of 7 runs", .default_value = "200000"},
                      cli::json_option()},
          .run = run_dispatch};
}

}  // namespace mixt::bench
