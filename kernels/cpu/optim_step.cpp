// CPU kernels of the fused optimizer steps (adam_step_, sgd_step_): one
// multi-tensor pass over a parameter group, predicated on the grad scaler's
// found_inf flag. The rules are torch.optim's; the composite updates in
// runtime/optim are their reference. See Note [Fused optimizer steps].
#include <cmath>
#include <span>
#include <vector>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/cpu/loops.h>
#include <mixt/kernels/cpu/multi_tensor.h>
#include <mixt/kernels/cpu/register.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::cpu {
namespace {

constexpr uint32_t kParamDtypes = dtypes::kStandardFloat;

// The list of one fused step, cut into its named parts and checked.
struct StepLists {
  std::span<const Tensor> params, grads;
  std::vector<std::span<const Tensor>> states;  // each like the params, in the working dtype
  std::span<const Tensor> steps;                // one-element float32/float64 counters (may be empty)
};

// The working dtype of a parameter: float64 for float64, else float32.
ScalarType working(ScalarType t) { return t == kFloat64 ? kFloat64 : kFloat32; }

StepLists split_lists(const OpCall& c, int64_t n, int n_states, bool with_steps) {
  const int64_t parts = 2 + n_states + (with_steps ? 1 : 0);
  MIXT_CHECK_OP(n >= 0 && static_cast<int64_t>(c.list.size()) == n * parts, c,
                "expects {} lists of {} tensors ({} in all), got {} tensors", parts, n, n * parts, c.list.size());
  const auto un = static_cast<size_t>(n);
  StepLists l;
  l.params = c.list.subspan(0, un);
  l.grads = c.list.subspan(un, un);
  for (int s = 0; s < n_states; ++s) l.states.push_back(c.list.subspan(un * static_cast<size_t>(2 + s), un));
  if (with_steps) l.steps = c.list.subspan(un * static_cast<size_t>(2 + n_states), un);
  for (size_t i = 0; i < un; ++i) {
    const Tensor& p = l.params[i];
    check_step_parameter(c, i, p, Device::cpu());
    const Tensor& g = l.grads[i];
    MIXT_CHECK_OP(g.device().is_cpu() && g.dtype() == p.dtype() && g.is_contiguous() && g.sizes() == p.sizes(), c,
                  "gradient {} is {}, parameter {} (a contiguous gradient of the parameter's dtype and shape)", i,
                  g.describe(), p.describe());
    for (const auto& st : l.states)
      MIXT_CHECK_OP(st[i].device().is_cpu() && st[i].dtype() == working(p.dtype()) && st[i].is_contiguous() &&
                        st[i].sizes() == p.sizes(),
                    c, "state tensor {} is {}, expected {} like parameter {}", i, st[i].describe(),
                    working(p.dtype()), p.describe());
    if (with_steps)
      MIXT_CHECK_OP(l.steps[i].numel() == 1 && l.steps[i].device().is_cpu() &&
                        (l.steps[i].dtype() == kFloat32 || l.steps[i].dtype() == kFloat64),
                    c, "step counter {} must be a one-element float CPU tensor, got {}", i, l.steps[i].describe());
  }
  return l;
}

// True when the optional found_inf input says to skip the step.
bool skip_step(const OpCall& c) {
  if (c.n_in == 0 || !c.in[0].defined()) return false;
  const Tensor& f = c.in[0];
  MIXT_CHECK_OP(f.dtype() == kFloat32 && f.numel() == 1 && f.device().is_cpu(), c,
                "found_inf must be a one-element float32 CPU tensor, got {}", f.describe());
  return *f.data_ptr<float>() != 0.0f;
}

double read_step(const Tensor& t) {
  return t.dtype() == kFloat64 ? *t.data_ptr<double>() : static_cast<double>(*t.data_ptr<float>());
}
void write_step(const Tensor& t, double v) {
  if (t.dtype() == kFloat64) *t.data_ptr<double>() = v;
  else *t.data_ptr<float>() = static_cast<float>(v);
}

// Runs body.template operator()<P>(tensor, begin, end) over every chunk of the
// parameters, with P the storage type of the parameter (and its gradient).
template <class Body>
void for_each_chunk(const StepLists& l, const char* op, Body&& body) {
  const std::vector<Chunk> chunks = make_chunks(l.params);
  const int nt = threads_for(total_elements(chunks));
#pragma omp parallel for num_threads(nt) schedule(static)
  for (int64_t k = 0; k < static_cast<int64_t>(chunks.size()); ++k) {
    const Chunk& ch = chunks[static_cast<size_t>(k)];
    visit_dtype<kParamDtypes>(l.params[ch.tensor].dtype(), op, [&](auto tag) {
      body.template operator()<typename decltype(tag)::type>(ch.tensor, ch.begin, ch.end);
    });
  }
}

// Calls f.template operator()<Flags...>() with the runtime bools as template
// arguments, so the element loops have no branches and vectorize.
template <bool... Done, class F>
void with_flags(F&& f) {
  f.template operator()<Done...>();
}
template <bool... Done, class F, class... Rest>
void with_flags(F&& f, bool first, Rest... rest) {
  if (first) with_flags<Done..., true>(f, rest...);
  else with_flags<Done..., false>(f, rest...);
}

// A gradient element in the compute type M (through float for the 16-bit types).
template <class M, class G>
inline M load_grad(const G& g) {
  if constexpr (std::is_same_v<G, double> || std::is_same_v<G, float>) return static_cast<M>(g);
  else return static_cast<M>(static_cast<float>(g));
}

// Per-parameter constants of one Adam step.
struct AdamStep {
  double step_size, bias_correction2_sqrt;
};

void adam_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::AdamStep>();
  const bool amsgrad = a.amsgrad, decoupled = a.decoupled_weight_decay;
  const StepLists l = split_lists(c, a.num_params, amsgrad ? 3 : 2, true);
  if (skip_step(c)) return;
  const double lr = a.lr, beta1 = a.beta1, beta2 = a.beta2, eps = a.eps, wd = a.weight_decay;
  std::vector<AdamStep> consts(l.params.size());
  for (size_t i = 0; i < l.params.size(); ++i) {
    const double step = read_step(l.steps[i]) + 1.0;
    write_step(l.steps[i], step);
    consts[i] = {lr / (1.0 - std::pow(beta1, step)), std::sqrt(1.0 - std::pow(beta2, step))};
  }
  // AdamW decays the parameter (a multiplication by exactly 1 when it does not);
  // Adam adds the L2 term to the gradient.
  const double decay = decoupled ? 1.0 - lr * wd : 1.0;
  const bool l2 = !decoupled && wd != 0.0;
  for_each_chunk(l, "adam_step_", [&]<class P>(size_t t, int64_t b, int64_t e) {
    using M = opmath_t<P>;  // float, or double for float64 parameters
    P* p = l.params[t].data_ptr<P>();
    const P* g = l.grads[t].data_ptr<P>();
    M* m = l.states[0][t].data_ptr<M>();
    M* v = l.states[1][t].data_ptr<M>();
    M* vmax = amsgrad ? l.states[2][t].data_ptr<M>() : nullptr;
    const M step_size = static_cast<M>(consts[t].step_size), bc2 = static_cast<M>(consts[t].bias_correction2_sqrt);
    const M b1 = static_cast<M>(1.0 - beta1), b2 = static_cast<M>(beta2), one_b2 = static_cast<M>(1.0 - beta2);
    const M decay_ = static_cast<M>(decay), wd_ = static_cast<M>(wd), eps_ = static_cast<M>(eps);
    with_flags([&]<bool L2, bool Ams>() {
      for (int64_t i = b; i < e; ++i) {
        const M param = static_cast<M>(p[i]) * decay_;
        M grad = load_grad<M>(g[i]);
        if constexpr (L2) grad += wd_ * param;
        m[i] += b1 * (grad - m[i]);
        v[i] = v[i] * b2 + one_b2 * grad * grad;
        M second = v[i];
        if constexpr (Ams) second = vmax[i] = vmax[i] > v[i] ? vmax[i] : v[i];
        const M denom = std::sqrt(second) / bc2 + eps_;
        p[i] = static_cast<P>(param - step_size * m[i] / denom);
      }
    }, l2, amsgrad);
  });
}

void sgd_kernel(OpCall& c, DispatchKeySet) {
  const auto& a = c.attrs.get<attrs::SgdStep>();
  const double lr = a.lr, momentum = a.momentum, dampening = a.dampening, wd = a.weight_decay;
  const bool nesterov = a.nesterov, with_momentum = momentum != 0.0;
  const StepLists l = split_lists(c, a.num_params, with_momentum ? 1 : 0, with_momentum);
  if (skip_step(c)) return;
  std::vector<char> first(l.params.size(), 0);
  for (size_t i = 0; i < l.steps.size(); ++i) {
    const double step = read_step(l.steps[i]);
    first[i] = step == 0.0;
    write_step(l.steps[i], step + 1.0);
  }
  for_each_chunk(l, "sgd_step_", [&]<class P>(size_t t, int64_t b, int64_t e) {
    using M = opmath_t<P>;
    P* p = l.params[t].data_ptr<P>();
    const P* g = l.grads[t].data_ptr<P>();
    M* buf = with_momentum ? l.states[0][t].data_ptr<M>() : nullptr;
    const M lr_ = static_cast<M>(lr), mom = static_cast<M>(momentum), damp = static_cast<M>(1.0 - dampening);
    const M wd_ = static_cast<M>(wd);
    const bool init = with_momentum && first[t];  // the first step copies the gradient into the buffer
    with_flags([&]<bool L2, bool Momentum, bool Nesterov>() {
      for (int64_t i = b; i < e; ++i) {
        const M param = static_cast<M>(p[i]);
        M d = load_grad<M>(g[i]);
        if constexpr (L2) d += wd_ * param;
        if constexpr (Momentum) {
          buf[i] = init ? d : buf[i] * mom + damp * d;
          d = Nesterov ? d + mom * buf[i] : buf[i];
        }
        p[i] = static_cast<P>(param - lr_ * d);
      }
    }, wd != 0.0, with_momentum, nesterov);
  });
}

}  // namespace

void register_optim_step_kernels() {
  register_kernel(OpId::adam_step_, DispatchKey::CPU, adam_kernel);
  register_kernel(OpId::sgd_step_, DispatchKey::CPU, sgd_kernel);
}

}  // namespace mixt::cpu
