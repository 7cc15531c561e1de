// decide(): scopes first (innermost wins), then the device's policy table.
// See Note [Autocast decisions].
#include <mixt/autocast/decision.h>

#include <mutex>
#include <unordered_map>

#include <fmt/format.h>

#include <mixt/runtime/check.h>

namespace mixt::autocast {
namespace {

std::mutex g_fn_mutex;
std::unordered_map<int, OutputDtypeFn>& output_fns() {
  static std::unordered_map<int, OutputDtypeFn> m;
  return m;
}

bool eligible(const InputInfo& in, DeviceType device) {
  return in.defined && is_floating(in.dtype) && in.dtype != kFloat64 && in.device == device;
}

// Ops whose output is bool or int64 whatever their inputs (for the prediction).
ScalarType fixed_output_dtype(OpId op) {
  switch (op) {
    case OpId::eq: case OpId::ne: case OpId::lt: case OpId::le: case OpId::gt: case OpId::ge:
    case OpId::logical_and: case OpId::logical_or: case OpId::logical_xor: case OpId::logical_not:
    case OpId::isfinite: case OpId::isnan: case OpId::isinf: case OpId::all: case OpId::any:
      return kBool;
    case OpId::argmax: case OpId::argmin:
      return kInt64;
    default:
      return ScalarType::Undefined;
  }
}

// Ops whose dtype attribute sets their output dtype.
bool dtype_attr_is_output(OpId op) {
  switch (op) {
    case OpId::sum: case OpId::mean: case OpId::prod: case OpId::norm: case OpId::cumsum: case OpId::cumprod:
    case OpId::softmax: case OpId::log_softmax: case OpId::mm: case OpId::bmm: case OpId::addmm:
    case OpId::baddbmm: case OpId::matmul: case OpId::linear: case OpId::to:
      return true;
    default:
      return false;
  }
}

ScalarType predict_output(DeviceType device, OpId op, std::span<const InputInfo> inputs,
                          std::span<const InputInfo> list, const Decision& d, const Attrs& attrs, const State& st) {
  std::vector<ScalarType> dts;
  ResultTypeState promoted;
  auto add = [&](const InputInfo& in, ScalarType cast) {
    const ScalarType t = cast != ScalarType::Undefined ? cast : in.dtype;
    dts.push_back(t);
    update_result_type(promoted, t, in.kind);
  };
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i].defined) add(inputs[i], d.cast_to[i]);
  for (size_t i = 0; i < list.size(); ++i) add(list[i], d.list_cast_to[i]);
  {
    std::lock_guard lock(g_fn_mutex);
    auto it = output_fns().find(static_cast<int>(op));
    if (it != output_fns().end()) return it->second(dts, attrs);
  }
  if (const ScalarType fixed = fixed_output_dtype(op); fixed != ScalarType::Undefined) return fixed;
  const ScalarType attr = d.set_dtype != ScalarType::Undefined ? d.set_dtype : attrs.dtype;
  if (attr != ScalarType::Undefined && dtype_attr_is_output(op)) return attr;
  if (dts.empty()) return ScalarType::Undefined;
  if (op == OpId::embedding || op == OpId::index_select || op == OpId::gather || op == OpId::scatter ||
      op == OpId::scatter_add || op == OpId::masked_fill)
    return dts[0];
  if (op == OpId::where) return promote_types_or_undefined(dts[1], dts[2]);
  // An op whose decomposition autocast sees (Note [Autocast kernel]): cross_entropy's
  // log_softmax and nll_loss both produce float32 under CUDA autocast.
  if (decomposes_under_autocast(op) && d.rule == Rule::PassThrough && st.enabled[static_cast<size_t>(device)] &&
      !inputs.empty() && eligible(inputs[0], device) && device == DeviceType::CUDA)
    return kFloat32;
  try {
    return result_type(promoted);
  } catch (const Error&) {
    return ScalarType::Undefined;
  }
}

// Widest eligible dtype for `promote`: lower unless any is float32; mixing two
// different low dtypes is an error (as in PyTorch).
std::string promote_target(std::span<const InputInfo> inputs, std::span<const InputInfo> list, DeviceType device,
                           ScalarType lower, ScalarType* out) {
  ScalarType r = lower;
  auto fold = [&](const InputInfo& in) -> std::string {
    if (!eligible(in, device)) return "";
    if (in.dtype == kFloat32 || r == kFloat32) {
      r = kFloat32;
      return "";
    }
    if (in.dtype == r) return "";
    return fmt::format("promote: cannot combine {} with the autocast dtype {}", in.dtype, lower);
  };
  for (const InputInfo& in : inputs)
    if (auto e = fold(in); !e.empty()) return e;
  for (const InputInfo& in : list)
    if (auto e = fold(in); !e.empty()) return e;
  *out = r;
  return "";
}

}  // namespace

InputInfo InputInfo::of(const Tensor& t) {
  InputInfo i;
  if (!t.defined()) return i;
  i.defined = true;
  i.dtype = t.dtype();
  i.device = t.device().type();
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

Decision decide(DeviceType device, OpId op, std::span<const InputInfo> inputs, std::span<const InputInfo> list,
                const Attrs& attrs, const State& st, bool predict) {
  Decision d;
  d.cast_to.fill(ScalarType::Undefined);
  d.list_cast_to.assign(list.size(), ScalarType::Undefined);
  const OpEntry& entry = op_entry(op);
  const Policy table = policy_of(device, op);
  const bool custom = entry.has(op_flags::Custom);
  auto cast_all = [&](ScalarType to) {
    for (size_t i = 0; i < inputs.size(); ++i)
      if (eligible(inputs[i], device) && inputs[i].dtype != to) d.cast_to[i] = to;
    for (size_t i = 0; i < list.size(); ++i)
      if (eligible(list[i], device) && list[i].dtype != to) d.list_cast_to[i] = to;
  };
  const Scope* top = st.top();
  // In-place and multi-tensor ops, factories, views and explicit conversions are never cast
  // (PyTorch: only out-of-place ops are eligible; a view must stay a view, a cast must keep its target).
  if (entry.has(op_flags::Inplace | op_flags::Mutates) || entry.has(op_flags::Factory) || entry.has(op_flags::View) ||
      op == OpId::to || op == OpId::clone) {
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
        for (const InputInfo& in : inputs) sensitive = sensitive || (in.sensitive && eligible(in, device));
        if (sensitive) {  // a sensitive parameter keeps the whole op in float32
          d.rule = Rule::SensitiveParam;
          cast_all(kFloat32);
        } else {
          cast_all(lower);
          if (table == Policy::LowerF32Out && attrs.dtype == ScalarType::Undefined) d.set_dtype = kFloat32;
        }
        break;
      }
      case Policy::Fp32: cast_all(kFloat32); break;
      case Policy::Fp32OptDtype:
        if (!inputs.empty() && eligible(inputs[0], device) && attrs.dtype == ScalarType::Undefined)
          d.set_dtype = kFloat32;
        break;
      case Policy::Promote: {
        ScalarType target = lower;
        d.error = promote_target(inputs, list, device, lower, &target);
        if (d.error.empty()) cast_all(target);
        break;
      }
      case Policy::Banned:
        d.rule = Rule::Banned;
        d.error = std::string(banned_message(device, op));
        break;
      case Policy::PassThrough:
      case Policy::DisabledInside: break;
    }
  }
  if (predict && d.error.empty()) d.output_dtype = predict_output(device, op, inputs, list, d, attrs, st);
  return d;
}

Decision decide(DeviceType device, OpId op, std::initializer_list<ScalarType> input_dtypes, const Attrs& attrs,
                const State& st) {
  std::vector<InputInfo> infos;
  for (ScalarType t : input_dtypes) {
    InputInfo i;
    i.defined = t != ScalarType::Undefined;
    i.dtype = t;
    i.device = device;
    infos.push_back(i);
  }
  if (op_entry(op).has(op_flags::List)) return decide(device, op, {}, infos, attrs, st);
  return decide(device, op, infos, {}, attrs, st);
}

void register_output_dtype(OpId op, OutputDtypeFn fn) {
  std::lock_guard lock(g_fn_mutex);
  output_fns()[static_cast<int>(op)] = std::move(fn);
}

}  // namespace mixt::autocast
