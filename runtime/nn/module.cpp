// nn::Module: registration, traversal, conversion, modes and state dicts.
#include <mixt/runtime/nn/module.h>

#include <ostream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include <mixt/runtime/autograd/grad_mode.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::nn {

void zero_grad_of(const std::vector<Tensor>& params, bool set_to_none) {
  autograd::NoGradGuard no_grad;
  for (const Tensor& p : params) {
    if (!p.grad().defined()) continue;
    if (set_to_none) {
      Tensor(p).set_grad(Tensor());
    } else {
      Tensor g = p.grad();
      g.zero_();
    }
  }
}

// ---- registration ----------------------------------------------------------------

void Module::check_new_name(const std::string& name, const char* what) const {
  MIXT_CHECK(!name.empty() && name.find('.') == std::string::npos, what,
             "{}: invalid name '{}' (names are non-empty and contain no '.')", this->name(), name);
  bool dup = false;
  for (const auto& [n, c] : children_) dup = dup || n == name;
  for (const auto* list : {&parameters_, &buffers_})
    for (const Entry& e : *list) dup = dup || e.name == name;
  MIXT_CHECK(!dup, what, "{} already has a member named '{}'", this->name(), name);
}

Tensor Module::register_parameter(const std::string& name, Tensor t) {
  check_new_name(name, "Module.register_parameter");
  MIXT_CHECK(t.defined(), "Module.register_parameter", "{}: parameter '{}' is undefined", this->name(), name);
  MIXT_CHECK(t.is_floating_point(), "Module.register_parameter", "{}: parameter '{}' must be floating point, got {}",
             this->name(), name, t.describe());
  if (!t.is_leaf()) t = t.detach();
  t.set_requires_grad(true);
  parameters_.push_back({name, t, true});
  return t;
}

Tensor Module::register_buffer(const std::string& name, Tensor t, bool persistent) {
  check_new_name(name, "Module.register_buffer");
  MIXT_CHECK(t.defined(), "Module.register_buffer", "{}: buffer '{}' is undefined", this->name(), name);
  buffers_.push_back({name, t, persistent});
  return t;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> module) {
  check_new_name(name, "Module.register_module");
  MIXT_CHECK(module != nullptr, "Module.register_module", "{}: child '{}' is null", this->name(), name);
  MIXT_CHECK(module.get() != this, "Module.register_module", "{}: a module cannot be its own child", this->name());
  children_.emplace_back(name, std::move(module));
}

// ---- traversal -----------------------------------------------------------------

template <class F>
void Module::visit(bool params, bool recurse, const std::string& prefix, F&& fn) const {
  for (const Entry& e : params ? parameters_ : buffers_) fn(prefix + e.name, e);
  if (!recurse) return;
  for (const auto& [name, child] : children_) child->visit(params, true, prefix + name + ".", fn);
}

Module::NamedTensors Module::collect(bool params, bool recurse) const {
  NamedTensors out;
  std::unordered_set<const TensorImpl*> seen;
  visit(params, recurse, "", [&](const std::string& name, const Entry& e) {
    if (seen.insert(e.tensor.impl()).second) out.emplace_back(name, e.tensor);
  });
  return out;
}

namespace {
std::vector<Tensor> tensors_of(const Module::NamedTensors& named) {
  std::vector<Tensor> out;
  out.reserve(named.size());
  for (const auto& [n, t] : named) out.push_back(t);
  return out;
}
}  // namespace

std::vector<Tensor> Module::parameters(bool recurse) const { return tensors_of(collect(true, recurse)); }
Module::NamedTensors Module::named_parameters(bool recurse) const { return collect(true, recurse); }
std::vector<Tensor> Module::buffers(bool recurse) const { return tensors_of(collect(false, recurse)); }
Module::NamedTensors Module::named_buffers(bool recurse) const { return collect(false, recurse); }

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [n, c] : children_) out.push_back(c);
  return out;
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) n += p.numel();
  return n;
}

// ---- conversion and modes ------------------------------------------------------

void Module::apply_conversion(std::optional<Device> device, ScalarType dtype) {
  MIXT_CHECK(dtype == ScalarType::Undefined || is_floating(dtype), "Module.to",
             "{}: modules convert to floating dtypes only, got {}", name(), dtype);
  autograd::NoGradGuard no_grad;
  std::vector<Tensor> all = parameters();
  for (const Tensor& b : buffers()) all.push_back(b);
  for (Tensor& t : all) {
    const ScalarType dt = dtype != ScalarType::Undefined && t.is_floating_point() ? dtype : t.dtype();
    const Device dev = device.value_or(t.device());
    if (dt == t.dtype() && dev == t.device()) continue;
    const Tensor grad = t.grad();
    t.set_data(t.to(dev, dt));
    if (grad.defined()) t.set_grad(grad.to(dev, dt));
  }
}

Module& Module::to(Device device) {
  apply_conversion(device, ScalarType::Undefined);
  return *this;
}

Module& Module::to(ScalarType dtype) {
  MIXT_CHECK(dtype != ScalarType::Undefined, "Module.to", "{}: the dtype is undefined", name());
  apply_conversion(std::nullopt, dtype);
  return *this;
}

Module& Module::to(Device device, ScalarType dtype) {
  apply_conversion(device, dtype);
  return *this;
}

Module& Module::train(bool mode) {
  training_ = mode;
  for (const auto& [n, c] : children_) c->train(mode);
  return *this;
}

void Module::zero_grad(bool set_to_none) { zero_grad_of(parameters(), set_to_none); }

// ---- state ---------------------------------------------------------------------

io::StateDict Module::state_dict() const {
  io::StateDict sd;
  // Per module: its parameters, its buffers, then its children (PyTorch's order).
  auto add = [&](auto& self, const Module& m, const std::string& prefix) -> void {
    for (const Entry& e : m.parameters_) sd.tensors.emplace_back(prefix + e.name, e.tensor.detach());
    for (const Entry& e : m.buffers_)
      if (e.persistent) sd.tensors.emplace_back(prefix + e.name, e.tensor.detach());
    for (const auto& [n, c] : m.children_) self(self, *c, prefix + n + ".");
  };
  add(add, *this, "");
  return sd;
}

void Module::load_state_dict(const io::StateDict& sd, bool strict) { stage_state_dict(sd, strict).commit(); }

io::StagedLoad Module::stage_state_dict(const io::StateDict& sd, bool strict) {
  const io::StateDict mine = state_dict();
  std::string errors;
  auto problem = [&](const std::string& text) { errors += "\n  " + text; };
  std::unordered_map<std::string_view, const Tensor*> given;
  for (const auto& [key, t] : sd.tensors)
    if (!given.emplace(key, &t).second) problem(fmt::format("duplicate key '{}'", key));
  std::vector<std::pair<Tensor, Tensor>> copies;  // (destination, source)
  std::unordered_set<std::string_view> expected;
  for (const auto& [key, t] : mine.tensors) {
    expected.insert(key);
    auto it = given.find(key);
    if (it == given.end()) {
      if (strict) problem(fmt::format("missing key '{}' (expected {})", key, t.describe()));
      continue;
    }
    const Tensor& src = *it->second;
    if (!src.defined()) {
      problem(fmt::format("key '{}' holds an undefined tensor (expected {})", key, t.describe()));
    } else if (src.sizes() != t.sizes() || src.dtype() != t.dtype()) {
      problem(fmt::format("size/dtype mismatch for '{}': {}{} in the state dict, {}{} in the model", key, src.dtype(),
                          src.sizes(), t.dtype(), t.sizes()));
    } else {
      copies.emplace_back(t, src);
    }
  }
  if (strict)
    for (const auto& [key, t] : sd.tensors)
      if (!expected.count(key)) problem(fmt::format("unexpected key '{}' ({})", key, t.defined() ? t.describe() : "undefined"));
  MIXT_CHECK(errors.empty(), "Module.load_state_dict", "error(s) in loading the state dict of {}:{}", name(), errors);
  return io::StagedLoad([copies = std::move(copies)] {
    autograd::NoGradGuard no_grad;
    for (const auto& [dst, src] : copies) Tensor(dst).copy_(src);
  });
}

// ---- forward and printing ------------------------------------------------------

Tensor Module::forward(const Tensor&) {
  MIXT_FAIL("Module.forward", "{} does not define forward(const Tensor&)", name());
}

void Module::append_str(std::string& out, int indent) const {
  out += name();
  out += '(';
  const std::string extra = extra_repr();
  if (children_.empty()) {
    out += extra;
    out += ')';
    return;
  }
  const auto newline = [&](int width) {
    out += '\n';
    out.append(static_cast<size_t>(width), ' ');
  };
  if (!extra.empty()) {
    newline(indent + 2);
    out += extra;
  }
  for (const auto& [n, c] : children_) {
    newline(indent + 2);
    out += fmt::format("({}): ", n);
    c->append_str(out, indent + 2);
  }
  newline(indent);
  out += ')';
}

std::string Module::str() const {
  std::string out;
  append_str(out, 0);
  return out;
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.str(); }

}  // namespace mixt::nn
