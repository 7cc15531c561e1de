// Optimizers: the Optimizer base (parameter groups, per-parameter state, state
// dicts) and SGD, Adam and AdamW with PyTorch's update rules. Updates run under
// NoGradGuard, in place on the parameter tensors. Parameters of any floating
// dtype are accepted; float16/bfloat16/float8 parameters are updated through a
// float32 working copy and keep their optimizer state in float32.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include <mixt/runtime/io/state_dict.h>
#include <mixt/runtime/io/state_load.h>
#include <mixt/runtime/tensor.h>

namespace mixt::optim {

// Parameters sharing a learning rate and weight decay (unset: the optimizer's defaults).
struct ParamGroup {
  std::vector<Tensor> params = {};
  std::optional<double> lr = std::nullopt;
  std::optional<double> weight_decay = std::nullopt;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Updates every parameter that has a gradient, then counts the step.
  void step();
  // The grad scaler's sync-free step: every update is predicated on `found_inf`
  // (a one-element float32 tensor on the parameters' device; nonzero: no
  // parameter, state or step counter changes). Fused updates (SGD, Adam, AdamW on
  // a backend with the fused kernels) read the flag on the device; others read it
  // once on the host. The call is counted either way.
  void step_predicated(const Tensor& found_inf);
  // Clears (set_to_none) or zeroes the gradients of every parameter.
  void zero_grad(bool set_to_none = true);
  // Appends a group (its unset settings take the optimizer's defaults).
  void add_param_group(ParamGroup group);

  // The groups, with every setting resolved.
  const std::vector<ParamGroup>& param_groups() const { return groups_; }
  // The learning rate of `group`.
  double lr(size_t group = 0) const;
  // Sets the learning rate of every group.
  void set_lr(double lr);
  // Sets the learning rate of one group.
  void set_lr(size_t group, double lr);
  // Number of step() calls so far.
  int64_t step_count() const { return step_count_; }
  // "SGD", "Adam", "AdamW".
  const std::string& name() const { return name_; }

  // Per-parameter state tensors ("state.<index>.<name>", the index counting
  // parameters across groups in order) and, in metadata, the type, step counts,
  // group settings and hyperparameters. The tensors alias the live state.
  io::StateDict state_dict() const;
  // Restores a state_dict() of the same optimizer type over the same parameter
  // counts and shapes; the state is copied. Everything is checked before anything
  // changes (Note [State loads]): every hyperparameter and group setting by the
  // constructor's rules, step counts (integers in [0, 2^53]), state names (unknown or
  // missing ones raise), state tensors (floating, of their parameter's shape; moved to
  // its device and working dtype). A refused load changes nothing.
  void load_state_dict(const io::StateDict& sd);
  // Checks `sd` as load_state_dict does and prepares its restoration; nothing changes
  // until the result is committed (before this optimizer is changed otherwise).
  io::StagedLoad stage_state_dict(const io::StateDict& sd);

  // The rules of learning rates and weight decays (finite, >= 0) for constructors,
  // set_lr, schedules and loads; `op` names the caller in the error.
  static void check_lr(const std::string& op, double lr);
  static void check_weight_decay(const std::string& op, double weight_decay);

 protected:
  // Per-parameter state: named tensors (the optimizer's buffers and its "step"
  // counter, a one-element tensor on the parameter's device so fused steps can
  // advance it without a host round trip).
  struct ParamState {
    std::map<std::string, Tensor> tensors;
  };
  // A hyperparameter field saved in the state dict, and the list of an optimizer's.
  using OptionRef = std::variant<double*, bool*>;
  using OptionFields = std::vector<std::pair<std::string, OptionRef>>;
  // Hyperparameters read from a state dict and checked, ready to install.
  struct StagedOptions {
    std::function<void()> install;         // makes them the optimizer's (cannot fail)
    std::vector<std::string> state_names;  // the state tensors of a parameter updated under them
  };

  Optimizer(std::string name, std::vector<ParamGroup> groups, double default_lr, double default_weight_decay);
  // One group holding every parameter (how the constructors taking a parameter list start).
  static std::vector<ParamGroup> single_group(std::vector<Tensor> params) {
    return {ParamGroup{.params = std::move(params)}};
  }
  // Updates `param` in place from `grad`: both float32 or float64, with the same shape and device.
  virtual void update(const ParamGroup& group, ParamState& state, Tensor& param, const Tensor& grad) = 0;
  // Updates a group's parameters on one device in one fused op, predicated on
  // `found_inf` when it is defined. Parameters are contiguous float16/bfloat16/
  // float32/float64, gradients contiguous, of the parameters' dtypes and shapes. Returns
  // false when there is no fused kernel for them (the base then calls update()
  // per parameter).
  virtual bool fused_update(const ParamGroup& /*group*/, std::span<ParamState* const> /*states*/,
                            std::span<const Tensor> /*params*/, std::span<const Tensor> /*grads*/,
                            const Tensor& /*found_inf*/) {
    return false;
  }
  // The optimizer's own hyperparameters (name, field of the live options), saved by state_dict().
  virtual OptionFields hyperparameters() = 0;
  // Reads the hyperparameters of `sd` into a copy of the options (read_options), checks
  // them with the constructor's rules (raising as `op`) and names the state they imply.
  // Changes nothing.
  virtual StagedOptions stage_options(const io::StateDict& sd, const std::string& op) = 0;
  // Parses `sd`'s "options.<name>" entries into `fields` (each must be present).
  static void read_options(const io::StateDict& sd, const OptionFields& fields, const std::string& op);
  // State tensor `key` converted to `like`'s dtype and device, or nullptr when absent.
  static Tensor* find_state(ParamState& state, const std::string& key, const Tensor& like);
  // State tensor `key`, created as zeros like `like` on first use.
  static Tensor& zeros_state(ParamState& state, const std::string& key, const Tensor& like);
  // State tensor `key` in `param`'s working dtype (float32, or float64 for float64
  // parameters) and device, created as zeros on first use.
  static Tensor& working_state(ParamState& state, const std::string& key, const Tensor& param);
  // The parameter's update counter ("step": one float64 element on `param`'s device, exact to 2^53).
  static Tensor& step_state(ParamState& state, const Tensor& param);

 private:
  void run_step(const Tensor& found_inf);

  std::string name_;
  double default_lr_, default_weight_decay_;
  std::vector<ParamGroup> groups_;
  std::vector<ParamState> state_;  // one per parameter, in group order
  int64_t step_count_ = 0;
};

// ---- SGD -------------------------------------------------------------------------

struct SGDOptions {
  double lr = 1e-3;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;
  bool nesterov = false;
};

// Stochastic gradient descent with momentum, dampening, weight decay (added to the
// gradient) and Nesterov momentum, as torch.optim.SGD.
class SGD : public Optimizer {
 public:
  // Optimizes `params` as one group.
  SGD(std::vector<Tensor> params, SGDOptions options = {});
  // Optimizes `groups`; their unset lr / weight_decay come from `options`.
  SGD(std::vector<ParamGroup> groups, SGDOptions options = {});
  // The hyperparameters (lr and weight_decay: the defaults of new groups).
  const SGDOptions& options() const { return options_; }

 protected:
  void update(const ParamGroup& group, ParamState& state, Tensor& param, const Tensor& grad) override;
  bool fused_update(const ParamGroup& group, std::span<ParamState* const> states, std::span<const Tensor> params,
                    std::span<const Tensor> grads, const Tensor& found_inf) override;
  OptionFields hyperparameters() override;
  StagedOptions stage_options(const io::StateDict& sd, const std::string& op) override;

 private:
  // The saved fields of `o`.
  static OptionFields fields(SGDOptions& o);
  SGDOptions options_;
};

// ---- Adam / AdamW ----------------------------------------------------------------

struct AdamOptions {
  double lr = 1e-3;
  std::array<double, 2> betas = {0.9, 0.999};
  double eps = 1e-8;
  std::optional<double> weight_decay = std::nullopt;  // unset: 0 for Adam, 1e-2 for AdamW
  bool amsgrad = false;
};
using AdamWOptions = AdamOptions;

// Adam with bias correction; weight decay is added to the gradient (L2). amsgrad
// keeps the running maximum of the second moment.
class Adam : public Optimizer {
 public:
  // Optimizes `params` as one group.
  Adam(std::vector<Tensor> params, AdamOptions options = {});
  // Optimizes `groups`; their unset lr / weight_decay come from `options`.
  Adam(std::vector<ParamGroup> groups, AdamOptions options = {});
  // The hyperparameters (lr and weight_decay: the defaults of new groups).
  const AdamOptions& options() const { return options_; }

 protected:
  Adam(std::string name, std::vector<ParamGroup> groups, AdamOptions options, double default_weight_decay,
       bool decoupled);
  void update(const ParamGroup& group, ParamState& state, Tensor& param, const Tensor& grad) override;
  bool fused_update(const ParamGroup& group, std::span<ParamState* const> states, std::span<const Tensor> params,
                    std::span<const Tensor> grads, const Tensor& found_inf) override;
  OptionFields hyperparameters() override;
  StagedOptions stage_options(const io::StateDict& sd, const std::string& op) override;

 private:
  // The saved fields of `o`.
  static OptionFields fields(AdamOptions& o);
  AdamOptions options_;
  bool decoupled_;
};

// Adam with decoupled weight decay: param *= 1 - lr * weight_decay before the Adam step.
class AdamW : public Adam {
 public:
  // Optimizes `params` as one group.
  AdamW(std::vector<Tensor> params, AdamWOptions options = {});
  // Optimizes `groups`; their unset lr / weight_decay come from `options`.
  AdamW(std::vector<ParamGroup> groups, AdamWOptions options = {});
};

}  // namespace mixt::optim
