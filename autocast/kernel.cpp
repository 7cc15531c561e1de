// The generic autocast kernel (one per device key) and its registration as the
// fallback of every op. See Note [Autocast kernel].
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <vector>

#include <mixt/autocast/autocast.h>
#include <mixt/autocast/cast_cache.h>
#include <mixt/autocast/decision.h>
#include <mixt/autocast/explain.h>
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>

namespace mixt::autocast {
namespace {

// Runs an op autocast leaves alone: one op in its inputs' dtypes (every autocast key
// excluded below it: Note [One autocast per call]), unless its decomposition is what
// autocast must see (op flag AutocastDecomposes: custom composite ops). The fast path and the
// recorded path both come here, so what an op returns never depends on whether an
// Explain is watching.
template <DeviceType D>
void pass_through(OpCall& c, DispatchKeySet keys) {
  constexpr DispatchKey key = autocast_key(D);
  if (op_entry(c.op).has(op_flags::AutocastDecomposes)) {
    redispatch(c, keys, key);  // the keys stay live: the ops it calls are autocast
    return;
  }
  ExcludeKeysGuard below(kAutocastKeys);
  redispatch(c, keys, key);
}

// The InputInfos of a call's inputs, built in place: only the ones pushed are constructed
// (a whole array would be cleared on every decided call, the hot path's largest store),
// each straight into its slot (a copy of a just-built InputInfo stalls on its stores).
class InputInfos {
 public:
  InputInfos() {}
  InputInfo& push(const Tensor& t, bool with_sizes) {
    return *std::construct_at(&items_[n_++], InputInfo::of(t, with_sizes));
  }
  std::span<const InputInfo> view() const { return {items_, n_}; }

 private:
  static_assert(std::is_trivially_destructible_v<InputInfo>);
  union {
    InputInfo items_[kMaxInputs];
  };
  size_t n_ = 0;
};

// True when the call is device D's to decide: its tensors live on D, or D is the highest
// device among them. A CUDA (or meta) op may take CPU scalars, whose CPU autocast key
// must not decide the op a second time (Note [One autocast per call]). A call on one
// device (its backend keys are D's alone) is D's without looking at its inputs.
template <DeviceType D>
bool decides_call(const OpCall& c, DispatchKeySet keys) {
  if ((keys & DispatchKeySet::backends()) == DispatchKeySet(backend_key_for(Device(D)))) return true;
  const DispatchKeySet carried = c.input_keys(op_entry(c.op)) & kAutocastKeys;
  return carried.empty() || carried.highest() == autocast_key(D);
}

// The kernel of the autocast key of device D. Tensors of D follow the policy table of
// device P = state().table[D]: D's own, or the one a guard rehearses on D (Note [Policy
// rehearsal]); decisions are then made as if D's tensors lived on P.
template <DeviceType D>
void autocast_kernel(OpCall& c, DispatchKeySet keys) {
  constexpr DispatchKey key = autocast_key(D);
  if (MIXT_UNLIKELY(!decides_call<D>(c, keys))) {
    redispatch(c, keys, key);  // another device's op: this key is transparent to it
    return;
  }
  const State& own = state();
  const DeviceType P = own.table[static_cast<size_t>(D)];
  Explain* ex = detail::active_explain();
  const Policy table = policy_of(P, c.op);
  // Fast path: no scope open, and autocast off for this device or nothing listed for the op.
  if (!ex && own.depth == 0 && (!own.enabled[static_cast<size_t>(D)] || table == Policy::PassThrough)) {
    pass_through<D>(c, keys);
    return;
  }
  std::optional<State> rehearsed;  // the state as P's policy sees it: D's flag and dtype in P's slot
  if (P != D) {
    rehearsed = own;
    rehearsed->enabled[static_cast<size_t>(P)] = own.enabled[static_cast<size_t>(D)];
    rehearsed->dtype[static_cast<size_t>(P)] = own.dtype[static_cast<size_t>(D)];
  }
  const State& st = P == D ? own : *rehearsed;
  // The rules read the tensors in place unless explain records the call, it has a tensor
  // list, or it raises (decide() then also gives the message and the prediction).
  detail::CastPlan plan;
  std::optional<Decision> full;
  const bool light = !ex && c.list.empty() &&
                     !(plan = detail::plan_casts(P, c.op, table, {c.in.data(), c.n_in}, D, c.attrs.dtype, st)).raises;
  if (!light) {
    const bool predict = ex != nullptr;  // only explain reads the prediction, and only it needs the sizes
    auto as_policy_device = [&](InputInfo& i) {
      if (i.device == D) i.device = P;
    };
    InputInfos infos;
    for (int i = 0; i < c.n_in; ++i) as_policy_device(infos.push(c.in[i], predict));
    std::vector<InputInfo> list_infos;
    for (const Tensor& t : c.list) as_policy_device(list_infos.emplace_back(InputInfo::of(t, predict)));
    full = decide(P, c.op, infos.view(), list_infos, c.attrs, st, predict);
    plan.rule = full->rule;
    plan.policy = full->policy;
    plan.cast_to = full->cast_to;
    plan.set_dtype = full->set_dtype;
    plan.run_without_autocast = full->run_without_autocast;
  }
  const detail::CastPlan& d = plan;

  size_t record = 0;
  if (ex) {
    ExplainRecord r;
    r.op = std::string(op_name(c.op));
    r.device = D;
    r.output_device = D;
    r.policy_device = P;
    r.rule = d.rule;
    r.policy = d.policy;
    for (int i = 0; i < c.n_in; ++i)
      if (c.in[i].defined()) r.inputs.push_back(c.in[i].dtype());
    for (const Tensor& t : c.list) r.inputs.push_back(t.dtype());
    r.set_dtype = d.set_dtype;
    r.predicted = full->output_dtype;
    r.error = full->error;
    record = ex->begin(std::move(r));
  }
  struct EndRecord {
    Explain* ex;
    ~EndRecord() {
      if (ex) ex->end();
    }
  } end_record{ex};
  auto finish = [&] {
    if (!ex) return;
    ExplainRecord& r = ex->at(record);
    for (const Tensor& t : c.out)
      if (t.defined()) r.outputs.push_back(t.dtype());
    if (c.out[0].defined()) r.output_device = c.out[0].device().type();
  };

  MIXT_CHECK_OP(!full || full->error.empty(), c, "{} (autocast on {})", full->error, device_label(D, P));
  if (ex && !ex->parameter_uses().empty())
    for (int i = 0; i < c.n_in; ++i) ex->note_use(c.in[i], d.cast_to[static_cast<size_t>(i)]);
  if (d.run_without_autocast) {
    Disable off;  // the op's body runs in its inputs' dtypes
    redispatch(c, keys, key);
    finish();
    return;
  }
  if (d.rule == Rule::PassThrough || d.rule == Rule::Disabled) {
    pass_through<D>(c, keys);
    finish();
    return;
  }
  const ScalarType lower = st.dtype[static_cast<size_t>(P)];
  ExcludeKeysGuard casting(kAutocastKeys);  // the casts, and the op's body, are not autocast
  auto cast = [&](const Tensor& t, ScalarType to, int index) {
    bool hit = false;
    const bool use_cache = cacheable(t, to, lower, st.cache_enabled);
    Tensor r = cached_cast(t, to, use_cache, &hit);
    if (ex) {
      ex->at(record).casts.push_back({index, t.dtype(), to, use_cache, hit, hit ? 0 : r.nbytes()});
    }
    return r;
  };
  for (int i = 0; i < c.n_in; ++i)
    if (d.cast_to[static_cast<size_t>(i)] != ScalarType::Undefined) c.in[i] = cast(c.in[i], d.cast_to[static_cast<size_t>(i)], i);
  std::vector<Tensor> list;
  if (!c.list.empty()) {
    list.assign(c.list.begin(), c.list.end());
    for (size_t i = 0; i < list.size(); ++i)
      if (full->list_cast_to[i] != ScalarType::Undefined) list[i] = cast(list[i], full->list_cast_to[i], c.n_in + static_cast<int>(i));
    c.list = list;
  }
  if (d.set_dtype != ScalarType::Undefined) c.attrs.dtype = d.set_dtype;
  // The op's own keys below this one: the casts kept every input's device, and an input
  // they took out of autograd's reach leaves an autograd kernel that passes the call down.
  // The ops the kernel calls dispatch afresh, with autocast excluded (`casting`).
  redispatch(c, keys, key);
  finish();
}

}  // namespace

void register_autocast_kernels() {
  detail::install_precision_scope_hooks();  // autograd nodes capture autocast's scopes
  register_fallback(DispatchKey::AutocastCPU, autocast_kernel<DeviceType::CPU>);
  register_fallback(DispatchKey::AutocastCUDA, autocast_kernel<DeviceType::CUDA>);
  register_fallback(DispatchKey::AutocastMeta, autocast_kernel<DeviceType::Meta>);
}

}  // namespace mixt::autocast
