// Op cases of the grad scaler's ops and the fused optimizer steps.
#include "op_case_builder.h"
#include "reference_nn.h"

namespace mixt::testing {
namespace {

constexpr uint32_t kGradDtypes = dtypes::kStandardFloat;

Tensor flag(double v, const Device& d) { return full({}, v, {.dtype = kFloat32, .device = d}); }

// Runs `n` steps of a fused step on clones of (param, grad) and returns the parameter.
Tensor run_steps(const std::vector<Tensor>& in, int n, bool skip, const std::function<void(
    const Tensor& p, const Tensor& g, const std::vector<Tensor>& states, const Tensor& step, const Tensor& found)>& f,
                 int n_states) {
  const Tensor p = in[0].clone(), g = in[1];
  const ScalarType work = p.dtype() == kFloat64 ? kFloat64 : kFloat32;
  std::vector<Tensor> states;
  for (int i = 0; i < n_states; ++i) states.push_back(zeros(p.sizes(), {.dtype = work, .device = p.device()}));
  const Tensor step = zeros({}, {.dtype = kFloat32, .device = p.device()});
  for (int i = 0; i < n; ++i) f(p, g, states, step, flag(skip ? 1 : 0, p.device()));
  return p;
}

}  // namespace

void add_amp_cases(Builder& b) {
  // Unscale: a dense and a strided gradient, all finite; then Inf and NaN injected.
  auto grads = [](bool poison) {
    return [=](ScalarType dt) {
      Tensor a = data(dt, {3, 40}, -4, 4, 30), s = data(dt, {40, 3}, -4, 4, 31).t();
      if (poison) {
        a.select(0, 1).select(0, 5).fill_(std::numeric_limits<double>::infinity());
        a.select(0, 2).select(0, 7).fill_(std::numeric_limits<double>::quiet_NaN());
      }
      return CaseInputs{{a, s}, 0b11};
    };
  };
  auto unscale = [](const std::vector<Tensor>& in, ScalarType dt, Device dev) {
    Tensor a = in[0].clone(), s = in[1].clone().t().contiguous().t();  // s stays strided
    Tensor found = flag(0, dev);
    amp::unscale_check_({{a, s}}, found, flag(0.25, dev));
    return cat({found.to(a.dtype()).reshape({1}), a.reshape({-1}), s.reshape({-1})});
  };
  // found_inf (0 or 1), then every gradient times 1/4: exact (a power of two, no subnormals here).
  auto unscale_ref = [](const Refs& in, ScalarType) {
    ref::Ref out{{1 + static_cast<int64_t>(in[0].v.size() + in[1].v.size())}, {0.0}};
    for (const ref::Ref& g : in)
      for (double x : g.v) {
        if (!std::isfinite(x)) out.v[0] = 1;
        out.v.push_back(x * 0.25);
      }
    return out;
  };
  b.add("amp_unscale_check_", OpId::amp_unscale_check_, kGradDtypes, kGradDtypes, grads(false), unscale)
      .with(unscale_ref, kExact);
  b.add("amp_unscale_check_/non-finite", OpId::amp_unscale_check_, kGradDtypes, kGradDtypes, grads(true), unscale)
      .with(unscale_ref, kExact);

  // The scale update: a scripted run of finite and overflowing steps, checked step by step.
  b.add("amp_update_scale_/trajectory", OpId::amp_update_scale_, dtypes::bit(kFloat32), dtypes::bit(kFloat32),
        [](ScalarType) { return CaseInputs{{}, 0}; },
        [](const std::vector<Tensor>&, ScalarType dt, Device dev) {
          Tensor scale = full({}, 1024.0, {.dtype = dt, .device = dev});
          Tensor growth = zeros({}, {.dtype = kInt32, .device = dev}), hyst = full({}, 2, {.dtype = kInt32, .device = dev});
          Tensor skipped = zeros({}, {.dtype = kInt64, .device = dev}), floor = zeros({}, {.dtype = kInt64, .device = dev});
          const amp::ScaleRule rule{.growth_factor = 3.0, .backoff_factor = 0.25, .min_scale = 64.0,
                                    .max_scale = 4096.0, .growth_interval = 2, .hysteresis = 2};
          std::vector<double> trace;
          for (int f : {0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1, 1}) {
            amp::update_scale_(scale, growth, hyst, flag(f, dev), skipped, floor, rule);
            for (const Tensor* t : {&scale, &growth, &hyst, &skipped, &floor}) trace.push_back(t->item<double>());
          }
          return from_vector(trace).to(dev, kFloat32);
        })
      .check = [](const Tensor& r, ScalarType) {
    // scale, growth_tracker, hysteresis_tracker, skipped, floor hits after each step.
    const std::vector<double> want = {
        1024, 1, 2, 0, 0,  3072, 0, 2, 0, 0,  // finite, finite: growth at the interval (x3)
        3072, 0, 1, 1, 0,                      // overflow tolerated by hysteresis
        768, 0, 0, 2, 0,  192, 0, 0, 3, 0,     // backoffs (x0.25)
        192, 1, 0, 3, 0,  576, 0, 2, 3, 0,     // growth refills the hysteresis budget
        576, 1, 2, 3, 0,  1728, 0, 2, 3, 0,
        1728, 0, 1, 4, 0,  432, 0, 0, 5, 0,  108, 0, 0, 6, 0,
        64, 0, 0, 7, 0,                        // clamped at min_scale
        64, 0, 0, 8, 1};                       // an overflow at the floor
    const std::vector<double> got = r.to_vector<double>();
    if (got != want) {
      std::string s;
      for (double v : got) s += std::to_string(static_cast<int64_t>(v)) + " ";
      throw Error("amp_update_scale_", "trajectory differs: " + s);
    }
  };

  // Fused optimizer steps against torch.optim's rules in double (reference_nn.h), two steps with the
  // same gradient. The reference rounds the parameter to its dtype after each step, as the kernel
  // stores it, and allows one ulp of the dtype at the first step's value (the kernel's float32
  // update may round a near-tie to the other neighbour; the second step carries it). Tolerance:
  // half an ulp for the last rounding plus the float32 (float64) work of the update, about a dozen
  // operations at the size |p| <= 1 of the parameter. For bfloat16 near 1 that is at most
  // 1.5 * 2^-7 = 0.012, against an update of about 2 * lr = 0.1 (Adam moves each element by about
  // lr per step): an update off by 12% or more fails.
  auto param_grad = [](ScalarType dt) {
    return CaseInputs{{data(dt, {4, 33}, -1, 1, 32), data(dt, {4, 33}, -1, 1, 33)}, 0b11};
  };
  const Tolerance step_tol{0.5, 12, 1};
  auto adam = [](bool amsgrad, bool decoupled, bool skip) {
    return [=](const std::vector<Tensor>& in, ScalarType, Device) {
      return run_steps(in, 2, skip, [&](const Tensor& p, const Tensor& g, const std::vector<Tensor>& st, const Tensor& step,
                                        const Tensor& found) {
        optim::fused::adam_step_({{p}}, {{g}}, {{st[0]}}, {{st[1]}}, amsgrad ? std::vector<Tensor>{st[2]} : std::vector<Tensor>{},
                                 {{step}}, found,
                                 {.lr = 0.05, .weight_decay = 0.1, .amsgrad = amsgrad, .decoupled = decoupled});
      }, amsgrad ? 3 : 2);
    };
  };
  auto adam_ref = [](bool amsgrad, bool decoupled, int steps) {
    return [=](const Refs& in, ScalarType dt) {
      const ref::AdamState s{{.lr = 0.05, .weight_decay = 0.1, .amsgrad = amsgrad, .decoupled = decoupled}};
      return ref::steps_in_dtype(s, in[0], in[1].v, steps, [dt](double x) { return round_to(dt, x); },
                                 [dt](double x) { return ulp_of(dt, x); });
    };
  };
  b.add("adam_step_", OpId::adam_step_, kGradDtypes, kGradDtypes, param_grad, adam(false, false, false))
      .with(adam_ref(false, false, 2), step_tol);
  b.add("adam_step_/adamw-amsgrad", OpId::adam_step_, kGradDtypes, kGradDtypes, param_grad, adam(true, true, false))
      .with(adam_ref(true, true, 2), step_tol);
  b.add("adam_step_/skipped", OpId::adam_step_, kGradDtypes, kGradDtypes, param_grad, adam(false, false, true))
      .with(adam_ref(false, false, 0), kExact);
  auto sgd = [](bool nesterov) {
    return [=](const std::vector<Tensor>& in, ScalarType, Device) {
      return run_steps(in, 2, false, [&](const Tensor& p, const Tensor& g, const std::vector<Tensor>& st, const Tensor& step,
                                         const Tensor& found) {
        optim::fused::sgd_step_({{p}}, {{g}}, {{st[0]}}, {{step}}, found,
                                {.lr = 0.1, .momentum = 0.9, .dampening = nesterov ? 0.0 : 0.5, .weight_decay = 0.1,
                                 .nesterov = nesterov});
      }, 1);
    };
  };
  auto sgd_ref = [](bool nesterov) {
    return [=](const Refs& in, ScalarType dt) {
      const ref::SgdState s{{.lr = 0.1, .momentum = 0.9, .dampening = nesterov ? 0.0 : 0.5, .weight_decay = 0.1,
                             .nesterov = nesterov}};
      return ref::steps_in_dtype(s, in[0], in[1].v, 2, [dt](double x) { return round_to(dt, x); },
                                 [dt](double x) { return ulp_of(dt, x); });
    };
  };
  b.add("sgd_step_", OpId::sgd_step_, kGradDtypes, kGradDtypes, param_grad, sgd(false)).with(sgd_ref(false), step_tol);
  b.add("sgd_step_/nesterov", OpId::sgd_step_, kGradDtypes, kGradDtypes, param_grad, sgd(true)).with(sgd_ref(true), step_tol);
}

}  // namespace mixt::testing
