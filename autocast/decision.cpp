// decide(): scopes first (innermost wins), then the device's policy table.
// See Note [Autocast decisions].
#include <mixt/autocast/decision.h>

#include <ostream>

#include <fmt/format.h>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::autocast {
namespace {

template <class Input>
bool eligible(const Input& in, DeviceType device) {
  return in.defined && is_floating(in.dtype) && in.dtype != kFloat64 && in.device == device;
}

// A meta tensor (or, for a Scalar operand, a CPU wrapped number) standing for one input.
Tensor stand_in(const InputInfo& in) {
  if (!in.defined) return Tensor();
  if (in.kind == OperandKind::WrappedScalar) {
    Tensor t = scalar_tensor(0, {.dtype = in.dtype, .device = Device::cpu()});
    t.impl()->wrapped_number = true;
    return t;
  }
  Tensor t = empty(in.sizes, {.dtype = in.dtype, .device = Device::meta()});
  t.impl()->autocast_sensitive = in.sensitive;
  return t;
}

// Note [Predicted output dtypes]: the op itself runs on meta tensors of the inputs'
// shapes and dtypes, under `st` with `device`'s policy rehearsed on meta — the same
// decision, the op's meta rule (or its composite, whose inner ops autocast decides
// again), no data. So the prediction never keeps op lists of its own. A call that raises
// predicts nothing (Undefined); `why` gets its message.
ScalarType predict_output(DeviceType device, OpId op, std::span<const InputInfo> inputs,
                          std::span<const InputInfo> list, const Attrs& attrs, const State& st, std::string* why) {
  OpCall c(op);
  if (&attrs.schema() == &c.attrs.schema()) c.attrs = attrs;  // else: the op's defaults
  c.attrs.dtype = attrs.dtype;
  c.attrs.device = Device::meta();
  c.attrs.generator = nullptr;
  std::vector<Tensor> list_tensors;
  try {
    for (const InputInfo& in : inputs) c.push(stand_in(in));
    for (const InputInfo& in : list) list_tensors.push_back(stand_in(in));
    c.list = list_tensors;
    State rehearsed = st;
    const auto m = static_cast<size_t>(DeviceType::Meta), d = static_cast<size_t>(device);
    rehearsed.enabled[m] = st.enabled[d];
    rehearsed.dtype[m] = st.dtype[d];
    rehearsed.table[m] = device;
    detail::StateSwap swap(rehearsed);
    if (op_entry(op).has(op_flags::Inplace)) c.out[0] = c.in[0];
    dispatch(c);
  } catch (const Error& e) {
    *why = e.message();
    return ScalarType::Undefined;  // the call itself raises; decide() predicts nothing
  }
  return c.out[0].defined() ? c.out[0].dtype() : ScalarType::Undefined;
}

// "normalized_shape, eps": the attribute names of `s`.
std::string field_names(const AttrSchema& s) {
  std::string names;
  for (int i = 0; i < s.num_fields; ++i) names += (i ? ", " : "") + std::string(s.fields[i].name);
  return names;
}

// Widest eligible dtype for `promote`: lower unless any is float32; mixing two different
// low dtypes is an error (as in PyTorch): false, and `*mixed` (when given) names the dtype.
template <class Inputs, class List>
bool promote_target(const Inputs& inputs, const List& list, DeviceType device, ScalarType lower, ScalarType* out,
                    ScalarType* mixed = nullptr) {
  ScalarType r = lower;
  auto fold = [&](const auto& in) {
    if (!eligible(in, device)) return true;
    if (in.dtype == kFloat32 || r == kFloat32) {
      r = kFloat32;
      return true;
    }
    if (in.dtype == r) return true;
    if (mixed) *mixed = in.dtype;
    return false;
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!fold(inputs[i])) return false;
  for (size_t i = 0; i < list.size(); ++i)
    if (!fold(list[i])) return false;
  *out = r;
  return true;
}

// The message of a call the rules make raise (a promote that mixes low dtypes, a banned op).
std::string error_message(DeviceType device, OpId op, std::span<const InputInfo> inputs,
                          std::span<const InputInfo> list, const State& st) {
  if (policy_of(device, op) == Policy::Banned) return std::string(banned_message(device, op));
  const ScalarType lower = st.dtype[static_cast<size_t>(device)];
  ScalarType target = lower, mixed = ScalarType::Undefined;
  promote_target(inputs, list, device, lower, &target, &mixed);
  return fmt::format("promote: cannot combine {} with the autocast dtype {}", mixed, lower);
}

}  // namespace

InputInfo InputInfo::of(const Tensor& t, bool with_sizes) {
  InputInfo i;
  if (!t.defined()) return i;
  i.defined = true;
  i.dtype = t.dtype();
  i.device = t.device().type();
  if (with_sizes) i.sizes = t.sizes();
  i.sensitive = t.impl()->autocast_sensitive;
  i.kind = t.impl()->wrapped_number ? OperandKind::WrappedScalar : t.dim() == 0 ? OperandKind::ZeroDim : OperandKind::Dim;
  return i;
}

std::string_view rule_name(Rule r) {
  switch (r) {
    case Rule::PassThrough: return "pass-through";
    case Rule::Table: return "table";
    case Rule::Island: return "island";
    case Rule::Region: return "region";
    case Rule::Disabled: return "disabled";
    case Rule::Custom: return "custom";
    case Rule::SensitiveParam: return "sensitive-param";
    case Rule::Banned: return "banned";
  }
  return "?";
}

std::ostream& operator<<(std::ostream& os, Rule r) { return os << rule_name(r); }

namespace detail {

// The rules of Note [Autocast decisions], written once for both callers: decide() (inputs
// as InputInfo) and the autocast kernel (the call's tensors, read in place). `Inputs` and
// `List` index like arrays and yield something with defined, dtype, device and sensitive.
template <class Inputs, class List>
MIXT_ALWAYS_INLINE CastPlan plan_casts(DeviceType device, OpId op, Policy table, const Inputs& inputs, const List& list,
                    std::span<ScalarType> list_cast_to, ScalarType attrs_dtype, const State& st) {
  CastPlan d;
  const OpEntry& entry = op_entry(op);
  const bool custom = entry.has(op_flags::Custom);
  auto cast_all = [&](ScalarType to) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (eligible(inputs[i], device) && inputs[i].dtype != to) d.cast_to[i] = to;
    for (size_t i = 0; i < list.size(); ++i)
      if (eligible(list[i], device) && list[i].dtype != to) list_cast_to[i] = to;
  };
  const Scope* top = st.top();
  // In-place and multi-tensor ops, factories, views, explicit conversions and ops whose dtypes are
  // their contract (scaled_mm) are never cast (PyTorch: only out-of-place ops are eligible; a view
  // must stay a view, a cast must keep its target, PyTorch's autocast never touches _scaled_mm).
  if (entry.has(op_flags::Inplace | op_flags::Mutates | op_flags::Factory | op_flags::View | op_flags::Conversion |
                op_flags::KeepsDtypes)) {
    d.rule = Rule::PassThrough;
  } else if (table == Policy::DisabledInside) {
    d.rule = custom ? Rule::Custom : Rule::Table;
    d.policy = table;
    d.run_without_autocast = true;
  } else if (top && top->kind == ScopeKind::Disabled) {
    d.rule = Rule::Disabled;
  } else if (top && top->kind == ScopeKind::Island) {
    d.rule = Rule::Island;
    cast_all(kFloat32);
  } else if (top && top->kind == ScopeKind::Region) {
    d.rule = Rule::Region;
    cast_all(top->dtype);
  } else if (!st.enabled[static_cast<size_t>(device)] || table == Policy::PassThrough) {
    d.rule = Rule::PassThrough;
  } else {
    d.rule = custom ? Rule::Custom : Rule::Table;
    d.policy = table;
    const ScalarType lower = st.dtype[static_cast<size_t>(device)];
    switch (table) {
      case Policy::Lower:
      case Policy::LowerF32Out: {
        bool sensitive = false;
        for (size_t i = 0; i < inputs.size(); ++i) sensitive = sensitive || (inputs[i].sensitive && eligible(inputs[i], device));
        if (sensitive) {  // a sensitive parameter keeps the whole op in float32
          d.rule = Rule::SensitiveParam;
          cast_all(kFloat32);
        } else {
          cast_all(lower);
          if (table == Policy::LowerF32Out && attrs_dtype == ScalarType::Undefined) d.set_dtype = kFloat32;
        }
        break;
      }
      case Policy::Fp32: cast_all(kFloat32); break;
      case Policy::Fp32OptDtype:
        if (inputs.size() > 0 && eligible(inputs[0], device) && attrs_dtype == ScalarType::Undefined)
          d.set_dtype = kFloat32;
        break;
      case Policy::Promote: {
        ScalarType target = lower;
        d.raises = !promote_target(inputs, list, device, lower, &target);
        if (!d.raises) cast_all(target);
        break;
      }
      case Policy::Banned:
        d.rule = Rule::Banned;
        d.raises = true;
        break;
      case Policy::PassThrough:
      case Policy::DisabledInside: break;
    }
  }
  return d;
}

// An input of the kernel's call as the rules read it, its eligibility worked out once.
struct TensorTraits {
  bool defined, sensitive, eligible;
  ScalarType dtype;
};
bool eligible(const TensorTraits& in, DeviceType) { return in.eligible; }

namespace {
// The rules for the kernel's call, read from its tensors.
CastPlan rules_on_tensors(DeviceType device, OpId op, Policy table, std::span<const Tensor> inputs,
                          DeviceType tensors_device, ScalarType attrs_dtype, const State& st) {
  std::array<TensorTraits, kMaxInputs> traits;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined()) {
      traits[i] = {false, false, false, ScalarType::Undefined};
      continue;
    }
    const DeviceType on = t.device().type();
    const ScalarType dtype = t.dtype();
    const bool ok = is_floating(dtype) && dtype != kFloat64 && (on == tensors_device ? device : on) == device;
    traits[i] = {true, t.impl()->autocast_sensitive, ok, dtype};
  }
  const std::span<const TensorTraits> view(traits.data(), inputs.size());
  return plan_casts(device, op, table, view, std::span<const TensorTraits>(), {}, attrs_dtype, st);
}

// Note [Plan memo]: a training loop calls the same ops with the same kinds of inputs under
// the same autocast state, step after step. The rules read nothing but the op, its policy,
// the attribute dtype, the three facts of each input (dtype, device, sensitive), the
// device's flag and dtype and the innermost scope: packed into three words, they key the
// last plan of this thread, which a repeated call reuses without running the rules. The key
// holds every value the plan depends on (no generation counter to keep in step), so a
// stale plan can never be served: a different state, policy or input gives another key.
struct PlanKey {
  uint64_t call = ~uint64_t{0};  // device, tensors' device, op, policy, attrs dtype, input count
  uint64_t inputs = 0;           // one byte per input: dtype + 1 (5 bits), device (2), sensitive (1)
  uint64_t state = 0;            // the device's flag and dtype, whether a scope is open, its kind and dtype
  bool operator==(const PlanKey&) const = default;
};
static_assert(kMaxInputs <= 8 && kNumDtypes < 31 && kNumDeviceTypes <= 4);

struct PlanMemo {
  PlanKey key;
  CastPlan plan;
};
constinit thread_local PlanMemo t_plan_memo;

uint64_t byte(auto v) { return static_cast<uint8_t>(v); }

PlanKey plan_key(DeviceType device, OpId op, Policy table, std::span<const Tensor> inputs, DeviceType tensors_device,
                 ScalarType attrs_dtype, const State& st) {
  PlanKey k;
  k.call = byte(device) | byte(tensors_device) << 8 | uint64_t{static_cast<uint16_t>(op)} << 16 | byte(table) << 32 |
           byte(attrs_dtype) << 40 | byte(inputs.size()) << 48;
  k.inputs = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorImpl* t = inputs[i].impl();
    if (!t) continue;  // undefined: byte 0
    const uint64_t b = byte(static_cast<int>(t->dtype) + 1) | byte(t->device.type()) << 5 |
                       uint64_t{t->autocast_sensitive} << 7;
    k.inputs |= b << (8 * i);
  }
  const Scope* top = st.top();
  k.state = byte(st.enabled[static_cast<size_t>(device)]) | byte(st.dtype[static_cast<size_t>(device)]) << 8 |
            (top ? 1 | byte(top->kind) << 8 | byte(top->dtype) << 16 : 0) << 16;
  return k;
}
}  // namespace

CastPlan plan_casts(DeviceType device, OpId op, Policy table, std::span<const Tensor> inputs,
                    DeviceType tensors_device, ScalarType attrs_dtype, const State& st) {
  PlanMemo& memo = t_plan_memo;
  const PlanKey key = plan_key(device, op, table, inputs, tensors_device, attrs_dtype, st);
  if (key == memo.key) return memo.plan;
  memo.plan = rules_on_tensors(device, op, table, inputs, tensors_device, attrs_dtype, st);
  memo.key = key;
  return memo.plan;
}

}  // namespace detail

Decision decide(DeviceType device, OpId op, std::span<const InputInfo> inputs, std::span<const InputInfo> list,
                const Attrs& attrs, const State& st, bool predict) {
  const OpEntry& entry = op_entry(op);
  // The call's named attributes, or none (Attrs{}: the op's defaults stand in), never another op's.
  const AttrSchema& named = *entry.schema.attrs;
  const bool attrs_given = &attrs.schema() == &named;
  MIXT_CHECK(attrs_given || attrs.schema().num_fields == 0, op_name(op),
             "autocast::decide was given {} attributes, but {} takes {} ({})", attrs.schema().name, op_name(op),
             named.name, field_names(named));
  Decision d;
  d.list_cast_to.assign(list.size(), ScalarType::Undefined);
  const detail::CastPlan plan =
      detail::plan_casts(device, op, policy_of(device, op), inputs, list, d.list_cast_to, attrs.dtype, st);
  d.rule = plan.rule;
  d.policy = plan.policy;
  d.cast_to = plan.cast_to;
  d.set_dtype = plan.set_dtype;
  d.run_without_autocast = plan.run_without_autocast;
  if (plan.raises) d.error = error_message(device, op, inputs, list, st);
  if (predict && d.error.empty()) {
    std::string why;
    d.output_dtype = predict_output(device, op, inputs, list, attrs, st, &why);
    // Without the call's attributes the defaults stood in: say which one the call needs
    // (the meta rule's message names it) rather than predict nothing.
    MIXT_CHECK(d.output_dtype != ScalarType::Undefined || attrs_given || named.num_fields == 0 || why.empty(),
               op_name(op),
               "autocast::decide needs the call's attributes to predict its output dtype: with {}'s defaults ({}) "
               "the call raises: {}. Pass them (attrs::{}{{...}}, or an Attrs holding them)",
               named.name, OpCall(op).attrs.describe(), why, named.name);
  }
  return d;
}

Decision decide(DeviceType device, OpId op, std::initializer_list<TypedInput> inputs, const Attrs& attrs,
                const State& st) {
  std::vector<InputInfo> infos;
  for (const TypedInput& t : inputs) {
    InputInfo i;
    i.defined = t.dtype != ScalarType::Undefined;
    i.dtype = t.dtype;
    i.sizes = t.sizes;
    i.kind = t.sizes.empty() ? OperandKind::ZeroDim : OperandKind::Dim;
    i.device = device;
    infos.push_back(i);
  }
  if (op_entry(op).has(op_flags::List)) return decide(device, op, {}, infos, attrs, st);
  return decide(device, op, infos, {}, attrs, st);
}


}  // namespace mixt::autocast
