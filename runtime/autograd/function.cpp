#include <mixt/runtime/autograd/function.h>

#include <mixt/runtime/autograd/autograd.h>
#include <mixt/runtime/autograd/derivatives.h>

#include <mutex>

#include <mixt/runtime/check.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::autograd {

// ---- saved tensors ---------------------------------------------------------

SavedTensor::SavedTensor(const Tensor& t, bool) {
  if (!t.defined()) return;
  data_ = make_view(t, t.sizes(), t.strides(), t.storage_offset());
  version_ = t.version();
}

Tensor SavedTensor::unpack(std::string_view op) const {
  MIXT_CHECK(data_.defined(), op, "a tensor saved for backward was freed: backward ran through this graph before "
             "(pass retain_graph=true to the first backward to run it twice)");
  MIXT_CHECK(data_.version() == version_, op,
             "a tensor saved for backward ({}) was modified by an in-place operation: version {} when saved, {} "
             "now. Clone it before modifying it, or modify a copy",
             data_.describe(), version_, data_.version());
  return data_;
}

// ---- the derivative registry -------------------------------------------------

namespace {
std::vector<Derivative>& registry() {
  static std::vector<Derivative> r(kMaxOps);
  return r;
}
std::once_flag g_builtins_once;
}  // namespace

void define_derivative(OpId id, Derivative d) { registry().at(static_cast<size_t>(id)) = d; }

void register_derivative(OpId id, Derivative d) {
  std::call_once(g_builtins_once, register_builtin_derivatives);
  MIXT_CHECK(d.fn != nullptr, "register_derivative", "no backward formula given for {}", op_name(id));
  define_derivative(id, d);
  // A custom op records itself through the generic Autograd kernel.
  if (static_cast<int>(id) >= kNumBuiltinOps) register_kernel(id, DispatchKey::Autograd, autograd_kernel);
}

void register_builtin_derivatives() {
  register_shape_derivatives();
  register_elementwise_derivatives();
  register_reduction_derivatives();
  register_nn_derivatives();
}

const Derivative* derivative_for(OpId id) {
  std::call_once(g_builtins_once, register_builtin_derivatives);
  const Derivative& d = registry().at(static_cast<size_t>(id));
  return d.fn ? &d : nullptr;
}

// ---- BackwardContext ---------------------------------------------------------

Tensor BackwardContext::input(int i) const {
  const auto idx = static_cast<size_t>(i);
  if (idx >= inputs_meta.size()) return Tensor();  // an optional trailing input that was absent
  if (idx >= saved_inputs.size() || !saved_inputs[idx].defined()) {
    MIXT_CHECK(inputs_meta[idx].dtype == ScalarType::Undefined, op_name(op_),
               "backward formula reads input {} but the derivative does not save it", i);
    return Tensor();  // an optional input that was absent
  }
  return saved_inputs[idx].unpack(op_name(op_));
}

Tensor BackwardContext::output(int i) const {
  const auto idx = static_cast<size_t>(i);
  MIXT_CHECK(idx < saved_outputs.size() && saved_outputs[idx].defined(), op_name(op_),
             "backward formula reads output {} but the derivative does not save it", i);
  return saved_outputs[idx].unpack(op_name(op_));
}

std::vector<Tensor> BackwardContext::list() const {
  std::vector<Tensor> out;
  for (const SavedTensor& s : saved_list) out.push_back(s.unpack(op_name(op_)));
  return out;
}

// ---- OpNode --------------------------------------------------------------------

OpNode::OpNode(const OpCall& call, const Derivative& d, std::vector<Edge> edges) : derivative_(d) {
  next_edges = std::move(edges);
  ctx_.op_ = call.op;
  ctx_.attrs_ = call.attrs;
  ctx_.attrs_.generator = nullptr;
  const bool inplace = op_entry(call.op).has(op_flags::Inplace);
  ctx_.saved_inputs.resize(call.n_in);
  for (int i = 0; i < call.n_in; ++i) {
    const Tensor& t = call.in[i];
    ctx_.inputs_meta.push_back(t.defined() ? TensorMeta::of(t) : TensorMeta{});
    if (!t.defined() || !((d.save_inputs >> i) & 1u)) continue;
    // An in-place op overwrites self (and whatever shares its memory): keep the original values.
    const bool overwritten = inplace && (i == 0 || t.shares_storage(call.in[0]));
    ctx_.saved_inputs[static_cast<size_t>(i)] = SavedTensor(overwritten ? clone(t) : t, false);
  }
  for (const Tensor& t : call.list) {
    ctx_.list_meta_.push_back(TensorMeta::of(t));
    if (d.save_list) ctx_.saved_list.emplace_back(t, false);
  }
  for (const Edge& e : next_edges) ctx_.needs.push_back(e.valid());
}

void OpNode::save_outputs(const OpCall& call) {
  const int n_out = op_entry(call.op).schema.outputs;
  ctx_.saved_outputs.resize(static_cast<size_t>(n_out));
  for (int i = 0; i < n_out; ++i) {
    const Tensor& t = call.out[static_cast<size_t>(i)];
    output_meta.push_back(t.defined() ? TensorMeta::of(t) : TensorMeta{});
    if (t.defined() && ((derivative_.save_outputs >> i) & 1u)) ctx_.saved_outputs[static_cast<size_t>(i)] = SavedTensor(t, true);
  }
}

std::vector<Tensor> OpNode::apply(std::vector<Tensor>&& grads) {
  MIXT_CHECK(!released, name(),
             "backward through a graph whose saved tensors were already freed (call backward with "
             "retain_graph=true the first time to run it again)");
  // Undefined output gradients are zeros.
  for (size_t i = 0; i < grads.size() && i < output_meta.size(); ++i) {
    const TensorMeta& m = output_meta[i];
    if (!grads[i].defined() && is_floating(m.dtype)) grads[i] = zeros(m.sizes, {.dtype = m.dtype, .device = m.device});
  }
  std::vector<Tensor> out = derivative_.fn(ctx_, grads);
  out.resize(next_edges.size());
  for (size_t i = 0; i < out.size(); ++i) {
    if (!ctx_.needs[i] || !out[i].defined()) {
      out[i] = Tensor();
      continue;
    }
    const TensorMeta& m = i < ctx_.inputs_meta.size() ? ctx_.inputs_meta[i] : ctx_.list_meta_[i - ctx_.inputs_meta.size()];
    MIXT_CHECK(out[i].sizes() == m.sizes, name(), "the formula returned a gradient of shape {} for input {} of shape {}",
               out[i].sizes(), i, m.sizes);
    if (out[i].dtype() != m.dtype || out[i].device() != m.device) out[i] = to(out[i], m.device, m.dtype);
  }
  return out;
}

std::string OpNode::name() const { return std::string(op_name(ctx_.op_)) + "Backward"; }

void OpNode::release_saved() {
  for (auto& s : ctx_.saved_inputs) s.reset();
  for (auto& s : ctx_.saved_outputs) s.reset();
  for (auto& s : ctx_.saved_list) s.reset();
  released = true;
}

// ---- helpers -------------------------------------------------------------------

Tensor sum_to(const Tensor& grad, const Shape& sizes) {
  if (grad.sizes() == sizes) return grad;
  const int lead = static_cast<int>(grad.dim()) - sizes.size();
  MIXT_CHECK(lead >= 0, "sum_to", "cannot reduce shape {} to {}", grad.sizes(), sizes);
  Shape dims;
  for (int d = 0; d < lead; ++d) dims.push_back(d);
  for (int d = 0; d < sizes.size(); ++d)
    if (sizes[d] == 1 && grad.sizes()[d + lead] != 1) dims.push_back(d + lead);
  Tensor r = dims.empty() ? grad : sum(grad, dims, /*keepdim=*/true);
  return r.sizes() == sizes ? r : reshape(r, sizes);
}

}  // namespace mixt::autograd
