#include <mixt/runtime/op_definition.h>

#include <mixt/runtime/check.h>

namespace mixt {
namespace {

bool is_backend(DispatchKey k) { return static_cast<int>(k) < kNumBackendKeys; }

}  // namespace

OpDefinition::OpDefinition(std::string name) : name_(std::move(name)) {
  schema_.min_inputs = schema_.max_inputs = 0;
  schema_.outputs = 1;
}

OpDefinition& OpDefinition::inputs(int min, int max) {
  if (min < 0 || min > max || max > kMaxInputs)
    problems_.push_back(fmt::format("inputs must satisfy 0 <= min <= max <= {} (got {}..{})", kMaxInputs, min, max));
  else
    schema_.min_inputs = static_cast<uint8_t>(min), schema_.max_inputs = static_cast<uint8_t>(max);
  return *this;
}

OpDefinition& OpDefinition::outputs(int n) {
  if (n < 1 || n > kMaxOutputs)
    problems_.push_back(fmt::format("1..{} outputs are supported (got {})", kMaxOutputs, n));
  else
    schema_.outputs = static_cast<uint8_t>(n);
  return *this;
}

OpDefinition& OpDefinition::takes_list() {
  schema_.flags |= op_flags::List;
  return *this;
}

OpDefinition& OpDefinition::meta(MetaFn fn) {
  if (fn == nullptr) problems_.push_back("meta() was given no function");
  schema_.meta = fn;
  return *this;
}

OpDefinition& OpDefinition::kernel(DispatchKey backend, KernelFn fn) {
  if (!is_backend(backend))
    problems_.push_back(fmt::format("kernel(): {} is not a backend key (CPU, CUDA or Meta)", dispatch_key_name(backend)));
  else if (fn == nullptr)
    problems_.push_back(fmt::format("kernel(): no function given for {}", dispatch_key_name(backend)));
  else
    kernels_.emplace_back(backend, fn);
  return *this;
}

OpDefinition& OpDefinition::backend_kernel(KernelFn fn) {
  for (DispatchKey k : {DispatchKey::CPU, DispatchKey::CUDA, DispatchKey::Meta}) kernel(k, fn);
  return *this;
}

OpDefinition& OpDefinition::composite(KernelFn fn) {
  if (fn == nullptr) problems_.push_back("composite() was given no function");
  composite_ = fn;
  schema_.flags |= op_flags::Composite;
  return *this;
}

OpDefinition& OpDefinition::derivative(Derivative d) {
  if (d.fn == nullptr) problems_.push_back("derivative() was given no backward function");
  derivative_ = d;
  return *this;
}

OpDefinition& OpDefinition::not_differentiable() {
  not_differentiable_ = true;
  return *this;
}

OpDefinition& OpDefinition::autocast(DeviceType device, autocast::Policy policy) {
  if (device != DeviceType::CPU && device != DeviceType::CUDA)
    problems_.push_back(fmt::format("autocast(): {} has no casting policy table (cpu or cuda)", device_type_name(device)));
  else
    policies_.emplace_back(device, policy);
  return *this;
}

OpId OpDefinition::define() const {
  std::vector<std::string> problems = problems_;
  if (kernels_.empty() && composite_ == nullptr) problems.push_back("it has no kernel and no composite");
  if (derivative_ && not_differentiable_) problems.push_back("it has a derivative and is declared not differentiable");
  if (composite_ && not_differentiable_)
    problems.push_back("a composite is differentiated through its decomposition: not_differentiable() does not apply");
  if (!kernels_.empty() && !derivative_ && !not_differentiable_)
    problems.push_back(
        "its backend kernels need a derivative() (or not_differentiable(), when no output carries a gradient)");
  if (!problems.empty()) {
    std::string all;
    for (const std::string& p : problems) all += (all.empty() ? "" : "; ") + p;
    MIXT_FAIL("OpDefinition", "op '{}' is not defined: {}", name_, all);
  }
  // Validated: register (register_op refuses a duplicate name before anything is bound).
  OpSchema schema = schema_;
  schema.name = name_;
  if (!not_differentiable_) schema.flags |= op_flags::Diff;
  const OpId id = register_op(schema);
  for (const auto& [key, fn] : kernels_) register_kernel(id, key, fn);
  if (composite_) register_composite(id, composite_);
  if (derivative_) autograd::register_derivative(id, *derivative_);
  if (not_differentiable_) register_kernel(id, DispatchKey::Autograd, fallthrough_kernel);
  for (const auto& [device, policy] : policies_) autocast::set_policy(device, id, policy);
  return id;
}

}  // namespace mixt
