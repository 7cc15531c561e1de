// nn::Module: the base of every layer. A module owns named parameters (leaf
// tensors that require grad), named buffers (state such as running statistics)
// and named child modules; the recursive views of them use dotted names
// ("layers.0.weight"), as PyTorch does. Modules are movable values; children are
// held by shared_ptr so a layer can be shared or reached after registration.
#pragma once

#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <mixt/runtime/io/state_dict.h>
#include <mixt/runtime/io/state_load.h>
#include <mixt/runtime/tensor.h>

namespace mixt::nn {

class Module;

// A module passed by value (an rvalue: it is moved into a shared_ptr).
template <class M>
concept ModuleValue = std::is_base_of_v<Module, std::remove_cvref_t<M>> && !std::is_lvalue_reference_v<M>;

class Module {
 public:
  using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
  using NamedModules = std::vector<std::pair<std::string, std::shared_ptr<Module>>>;

  Module() = default;
  virtual ~Module() = default;
  Module(Module&&) = default;
  Module& operator=(Module&&) = default;
  // Copies would share the parameters silently: move modules, or hold them by shared_ptr.
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // ---- registration ----
  // Registers `t` as parameter `name` and marks it as requiring grad (a non-leaf is
  // detached first); returns the registered handle. Floating dtypes only.
  Tensor register_parameter(const std::string& name, Tensor t);
  // Registers a buffer (any dtype); `persistent` buffers are part of state_dict().
  Tensor register_buffer(const std::string& name, Tensor t, bool persistent = true);
  // Registers `module` as child `name` and returns it.
  template <class M>
  std::shared_ptr<M> register_module(const std::string& name, std::shared_ptr<M> module) {
    add_child(name, module);
    return module;
  }
  // Moves `module` into a new shared_ptr, registers it as child `name` and returns it.
  template <ModuleValue M>
  std::shared_ptr<std::remove_cvref_t<M>> register_module(const std::string& name, M&& module) {
    return register_module(name, std::make_shared<std::remove_cvref_t<M>>(std::move(module)));
  }

  // ---- traversal (recursive views use dotted names; shared tensors appear once) ----
  // Parameters of this module (and of its descendants when `recurse`).
  std::vector<Tensor> parameters(bool recurse = true) const;
  // (dotted name, parameter) pairs.
  NamedTensors named_parameters(bool recurse = true) const;
  // Buffers of this module (and of its descendants when `recurse`).
  std::vector<Tensor> buffers(bool recurse = true) const;
  // (dotted name, buffer) pairs.
  NamedTensors named_buffers(bool recurse = true) const;
  // Direct children.
  std::vector<std::shared_ptr<Module>> children() const;
  // (name, child) pairs of the direct children.
  const NamedModules& named_children() const { return children_; }
  // Total number of parameter elements.
  int64_t num_parameters() const;

  // ---- conversion and modes ----
  // Moves every parameter and buffer to `device`, in place (handles keep their identity).
  Module& to(Device device);
  // Converts floating parameters and buffers to the floating `dtype`, in place.
  Module& to(ScalarType dtype);
  // Both at once.
  Module& to(Device device, ScalarType dtype);
  // Sets training mode on this module and its descendants.
  Module& train(bool mode = true);
  // train(false).
  Module& eval() { return train(false); }
  // True in training mode (the default).
  bool is_training() const { return training_; }
  // Clears (set_to_none) or zeroes every parameter's gradient.
  void zero_grad(bool set_to_none = true);

  // ---- state ----
  // Parameters then persistent buffers of each module, children after their parent,
  // under dotted names. The tensors alias the module's (detached).
  io::StateDict state_dict() const;
  // Copies `sd` into the existing tensors (no autograd). Nothing is copied when an
  // entry mismatches in shape or dtype, a key appears twice, or (strict) a key is
  // missing or unexpected: the error lists every problem.
  void load_state_dict(const io::StateDict& sd, bool strict = true);
  // Checks `sd` as load_state_dict does; nothing changes until the result is committed.
  io::StagedLoad stage_state_dict(const io::StateDict& sd, bool strict = true);

  // ---- forward and printing ----
  // The computation of the module (raises unless the module defines one).
  virtual Tensor forward(const Tensor& x);
  // forward(x).
  Tensor operator()(const Tensor& x) { return forward(x); }
  // The module's type name ("Linear").
  virtual std::string name() const { return "Module"; }
  // The module's settings, shown between parentheses ("in_features=2, ...").
  virtual std::string extra_repr() const { return ""; }
  // A PyTorch-style tree of the module and its children.
  std::string str() const;

 private:
  struct Entry {
    std::string name;
    Tensor tensor;
    bool persistent = true;
  };
  void check_new_name(const std::string& name, const char* what) const;
  void add_child(const std::string& name, std::shared_ptr<Module> module);
  // Calls fn(dotted name, entry) for every parameter (params) or buffer (!params).
  template <class F>
  void visit(bool params, bool recurse, const std::string& prefix, F&& fn) const;
  NamedTensors collect(bool params, bool recurse) const;
  void apply_conversion(std::optional<Device> device, ScalarType dtype);
  void append_str(std::string& out, int indent) const;

  std::vector<Entry> parameters_;
  std::vector<Entry> buffers_;
  NamedModules children_;
  bool training_ = true;
};

std::ostream& operator<<(std::ostream& os, const Module& m);

// Clears (set_to_none) or zeroes the gradients of `params` (shared by modules and optimizers).
void zero_grad_of(const std::vector<Tensor>& params, bool set_to_none);

}  // namespace mixt::nn
