// Per-element math of the fused optimizer steps (adam_step_, sgd_step_), shared by the
// CPU loops (kernels/cpu/optim_step.cpp) and the CUDA multi-tensor kernels
// (kernels/cuda/optim_step.cu), so both backends do the same operations in the same
// precision: a parameter is read into its opmath type M (float, or double for float64
// parameters), updated with float32 (float64) state, and rounded once on store.
// See Note [Fused optimizer steps]. Device code is compiled with --fmad=false, so the
// products and sums round as on the CPU; sqrt and division are IEEE on both.
#pragma once

#include <cmath>
#include <cstdint>
#include <type_traits>

#include <mixt/runtime/dtype.h>

namespace mixt::optim_math {

// A gradient element in the compute type M (through float for the 16-bit types).
template <class M, class G>
MIXT_HD inline M load_grad(const G& g) {
  if constexpr (std::is_same_v<G, double> || std::is_same_v<G, float>) return static_cast<M>(g);
  else return static_cast<M>(static_cast<float>(g));
}

// Per-parameter constants of one Adam step at (already advanced) step count `step`:
// lr / (1 - beta1^step) and sqrt(1 - beta2^step), in double. On CUDA the device's pow
// may differ from the host's by an ulp (CUDA's double pow is within 2 ulp, glibc's
// within 1), so the step size of the two backends can differ in its last bit.
struct AdamStepScalars {
  double step_size, bias_correction2_sqrt;
};
MIXT_HD inline AdamStepScalars adam_step_scalars(double lr, double beta1, double beta2, double step) {
  return {lr / (1.0 - std::pow(beta1, step)), std::sqrt(1.0 - std::pow(beta2, step))};
}

// The hyperparameters of one Adam step in the compute type M.
template <class M>
struct AdamConsts {
  M step_size, bc2, one_minus_beta1, beta2, one_minus_beta2, decay, weight_decay, eps;
};
// AdamW decays the parameter by 1 - lr * wd (a multiplication by exactly 1 for Adam,
// which adds the L2 term to the gradient instead).
template <class M>
MIXT_HD inline AdamConsts<M> adam_consts(const AdamStepScalars& s, double lr, double beta1, double beta2, double eps,
                                         double weight_decay, bool decoupled) {
  return {static_cast<M>(s.step_size),  static_cast<M>(s.bias_correction2_sqrt),
          static_cast<M>(1.0 - beta1),  static_cast<M>(beta2),
          static_cast<M>(1.0 - beta2),  static_cast<M>(decoupled ? 1.0 - lr * weight_decay : 1.0),
          static_cast<M>(weight_decay), static_cast<M>(eps)};
}

// One Adam element: parameter p[i] (storage P), gradient g[i], moments m[i], v[i] and,
// with Ams, the running maximum vmax[i]. L2: add weight_decay * param to the gradient.
template <bool L2, bool Ams, class P, class M>
MIXT_HD inline void adam_update(P* p, const P* g, M* m, M* v, M* vmax, int64_t i, const AdamConsts<M>& k) {
  const M param = static_cast<M>(p[i]) * k.decay;
  M grad = load_grad<M>(g[i]);
  if constexpr (L2) grad += k.weight_decay * param;
  m[i] += k.one_minus_beta1 * (grad - m[i]);
  v[i] = v[i] * k.beta2 + k.one_minus_beta2 * grad * grad;
  M second = v[i];
  if constexpr (Ams) second = vmax[i] = vmax[i] > v[i] ? vmax[i] : v[i];
  const M denom = std::sqrt(second) / k.bc2 + k.eps;
  p[i] = static_cast<P>(param - k.step_size * m[i] / denom);
}

// The hyperparameters of one SGD step in the compute type M.
template <class M>
struct SgdConsts {
  M lr, momentum, one_minus_dampening, weight_decay;
};
template <class M>
MIXT_HD inline SgdConsts<M> sgd_consts(double lr, double momentum, double dampening, double weight_decay) {
  return {static_cast<M>(lr), static_cast<M>(momentum), static_cast<M>(1.0 - dampening),
          static_cast<M>(weight_decay)};
}

// One SGD element: with Momentum, buf[i] is the momentum buffer, which the first step
// (`init`) sets to the gradient; Nesterov looks ahead along it.
template <bool L2, bool Momentum, bool Nesterov, class P, class M>
MIXT_HD inline void sgd_update(P* p, const P* g, M* buf, int64_t i, bool init, const SgdConsts<M>& k) {
  const M param = static_cast<M>(p[i]);
  M d = load_grad<M>(g[i]);
  if constexpr (L2) d += k.weight_decay * param;
  if constexpr (Momentum) {
    buf[i] = init ? d : buf[i] * k.momentum + k.one_minus_dampening * d;
    d = Nesterov ? d + k.momentum * buf[i] : buf[i];
  }
  p[i] = static_cast<P>(param - k.lr * d);
}

}  // namespace mixt::optim_math
