// The op registry: built-in schemas (a constant table from op_table.def), custom
// op registration, kernel binding, and what the one-time registration of the
// built-in kernels (mixt::init, runtime/init.cpp) needs from it.
#include <mutex>
#include <ostream>

#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_attrs.h>
#include <mixt/kernels/meta/rules.h>
#include <mixt/runtime/check.h>
#include <mixt/runtime/cuda.h>

namespace mixt {
namespace detail {
namespace {
using namespace op_flags;
}  // namespace

namespace {
constexpr OpSchema kBuiltinSchemas[] = {
#define MIXT_ATTRS(Name, seq)
#define MIXT_OP(name, min_in, max_in, n_out, flags, attr_struct, meta_rule) \
  OpSchema{#name, min_in, max_in, n_out, flags, &::mixt::attrs::attr_struct::kSchema, &::mixt::meta::meta_rule},
#include <mixt/dispatcher/op_table.def>
#undef MIXT_OP
#undef MIXT_ATTRS
};
static_assert(sizeof(kBuiltinSchemas) / sizeof(OpSchema) == kNumBuiltinOps);
}  // namespace

OpEntry g_ops[kMaxOps];
std::atomic<bool> g_kernels_registered{false};

namespace {
std::mutex g_registry_mutex;  // custom-op insertion and kernel binding (never taken on the dispatch path)
// Ops in g_ops: the built-ins, then custom ops, each published (release) once its schema is written.
std::atomic<int> g_num_ops{kNumBuiltinOps};
KernelFn g_fallbacks[kNumDispatchKeys] = {};
thread_local bool t_registering_builtins = false;

// The index of the custom op called `name`, or -1 (the caller holds g_registry_mutex).
int find_custom_locked(std::string_view name) {
  const int n = g_num_ops.load(std::memory_order_relaxed);
  for (int i = kNumBuiltinOps; i < n; ++i)
    if (g_ops[i].schema.name == name) return i;
  return -1;
}

// The index of the built-in op called `name`, or -1 (the table is constant: no lock).
int find_builtin(std::string_view name) {
  for (int i = 0; i < kNumBuiltinOps; ++i)
    if (kBuiltinSchemas[i].name == name) return i;
  return -1;
}

// The index of the op called `name`, built-in or custom, or -1.
int find_index(std::string_view name) {
  const int i = find_builtin(name);
  if (i >= 0) return i;
  std::lock_guard lock(g_registry_mutex);
  return find_custom_locked(name);
}
}  // namespace

BuiltinRegistration::BuiltinRegistration() {
  // Note [Registration and dispatch across threads]: the schemas go in before any kernel.
  for (int i = 0; i < kNumBuiltinOps; ++i) g_ops[i].schema = kBuiltinSchemas[i];
  t_registering_builtins = true;
}

BuiltinRegistration::~BuiltinRegistration() { t_registering_builtins = false; }

RegistryLockForTesting::RegistryLockForTesting() { g_registry_mutex.lock(); }
RegistryLockForTesting::~RegistryLockForTesting() { g_registry_mutex.unlock(); }

void BuiltinRegistration::publish() { g_kernels_registered.store(true, std::memory_order_release); }

[[noreturn]] void throw_no_kernel(const OpCall& call, DispatchKeySet keys) {
  // A layer's redispatch passes only the keys below it that the op has kernels for:
  // name the inputs' backends too, which is where a kernel is missing.
  for (int i = 0; i < call.n_in; ++i)
    if (call.in[i].defined()) keys = keys | backend_key_for(call.in[i].device());
  for (const Tensor& t : call.list)
    if (t.defined()) keys = keys | backend_key_for(t.device());
  std::string names;
  for (int k = kNumDispatchKeys - 1; k >= 0; --k) {
    if (!keys.has(static_cast<DispatchKey>(k))) continue;
    if (!names.empty()) names += ", ";
    names += dispatch_key_name(static_cast<DispatchKey>(k));
  }
  // A CUDA tensor or factory without a usable GPU: say why, not which kernel is missing.
  if (keys.has(DispatchKey::CUDA) && !cuda::is_available())
    throw Error(std::string(op_name(call.op)),
                fmt::format("CUDA is not available: {} (dispatch keys {{{}}})", cuda::unavailable_reason(), names),
                call.describe_inputs());
  throw Error(std::string(op_name(call.op)),
              fmt::format("no kernel for dispatch keys {{{}}}: this op is not implemented there "
                          "(docs/op_support.md lists what is)",
                          names),
              call.describe_inputs());
}

[[noreturn]] void throw_bad_arity(const OpCall& call, const OpEntry& e) {
  for (int i = 0; i < e.schema.min_inputs && i < call.n_in; ++i)
    if (!call.in[i].defined())
      throw Error(std::string(e.schema.name), fmt::format("input {} is undefined", i), call.describe_inputs());
  throw Error(std::string(e.schema.name),
              e.schema.min_inputs == e.schema.max_inputs
                  ? fmt::format("takes {}, got {}", detail::counted(e.schema.min_inputs, "input"), call.n_in)
                  : fmt::format("takes {} to {} inputs, got {}", e.schema.min_inputs, e.schema.max_inputs, call.n_in),
              call.describe_inputs());
}

// A shared helper (shape arithmetic, the tensor invariant) raised without
// knowing which op it served: name the op, keep the helper's name in the message,
// and describe the inputs (the requested sizes for a factory).
namespace {
// The call's inputs, or the attributes of a call without tensor inputs (a factory's sizes).
std::string describe_call(const OpCall& call) {
  std::string context = call.describe_inputs();
  if (context.empty()) context = call.attrs.describe();
  return context;
}
}  // namespace

[[noreturn]] void rethrow_with_context(const Error& e, const OpCall& call) {
  const std::string_view op = op_name(call.op);
  std::string context = describe_call(call);
  if (e.op() == op) throw Error(e.op(), e.message(), std::move(context));
  throw Error(std::string(op), fmt::format("{} (in {})", e.message(), e.op()), std::move(context));
}

[[noreturn]] void throw_out_of_memory(const OpCall& call) {
  throw Error(std::string(op_name(call.op)), "out of host memory for a buffer this op needs", describe_call(call));
}

}  // namespace detail

std::string_view op_name(OpId id) {
  // Note [Op names without a lock]: built-in names are constants; a custom op's name is
  // written once, before its id is published.
  const int i = static_cast<int>(id);
  if (i >= 0 && i < kNumBuiltinOps) return detail::kBuiltinSchemas[i].name;
  if (i >= kNumBuiltinOps && i < detail::g_num_ops.load(std::memory_order_acquire)) return detail::g_ops[i].schema.name;
  return "<invalid op>";
}

int num_ops() { return detail::g_num_ops.load(std::memory_order_acquire); }

bool has_op(std::string_view name) { return detail::find_index(name) >= 0; }

OpId find_op(std::string_view name) {
  const int i = detail::find_index(name);
  MIXT_CHECK(i >= 0, "find_op", "no op named '{}'", name);
  return static_cast<OpId>(i);
}

namespace detail {
void resolve(OpEntry& e);
}  // namespace detail

OpId register_op(const OpSchema& schema) {
  init();  // the built-ins first: their names are taken
  MIXT_CHECK(!schema.name.empty(), "register_op", "an op needs a name");
  MIXT_CHECK(schema.max_inputs <= kMaxInputs && schema.min_inputs <= schema.max_inputs, "register_op",
             "op '{}': inputs must satisfy min <= max <= {} (got {}..{})", schema.name, kMaxInputs, schema.min_inputs,
             schema.max_inputs);
  MIXT_CHECK(schema.outputs >= 1 && schema.outputs <= kMaxOutputs, "register_op",
             "op '{}': 1..{} outputs supported (got {})", schema.name, kMaxOutputs, schema.outputs);
  MIXT_CHECK(schema.attrs != nullptr && schema.attrs->size <= kMaxAttrBytes, "register_op",
             "op '{}': its attribute struct must be declared with MIXT_ATTRS_STRUCT and fit {} bytes", schema.name,
             kMaxAttrBytes);
  std::lock_guard lock(detail::g_registry_mutex);  // one lock for the name check and the insertion
  MIXT_CHECK(detail::find_builtin(schema.name) < 0 && detail::find_custom_locked(schema.name) < 0, "register_op",
             "an op named '{}' already exists", schema.name);
  const int n = detail::g_num_ops.load(std::memory_order_relaxed);
  MIXT_CHECK(n < kMaxOps, "register_op", "the op table is full ({} ops)", kMaxOps);
  // The name must outlive the registry: keep a copy.
  static std::vector<std::unique_ptr<std::string>> names;
  names.push_back(std::make_unique<std::string>(schema.name));
  OpEntry& e = detail::g_ops[n];
  e = OpEntry{};
  e.schema = schema;
  e.schema.name = *names.back();
  e.schema.flags |= op_flags::Custom;
  detail::resolve(e);
  detail::g_num_ops.store(n + 1, std::memory_order_release);  // publishes the entry (op_name reads it unlocked)
  return static_cast<OpId>(n);
}

namespace detail {
// Note [Composite and backend kernels]: what dispatch() calls per key, from what was
// registered. A backend key runs its own kernel, else the op's composite, else the
// backend's fallback (the meta backend's: the op's meta rule); a layer key (autograd,
// autocast) runs its kernel, else the layer's fallback. A key bound to
// fallthrough_kernel is skipped. The caller holds g_registry_mutex.
void resolve(OpEntry& e) {
  e.mask = {};
  for (int k = 0; k < kNumDispatchKeys; ++k) {
    const bool backend = k < kNumBackendKeys;
    KernelFn fn = e.bound[k] ? e.bound[k] : backend && e.composite ? e.composite : g_fallbacks[k];
    if (fn == &fallthrough_kernel) fn = nullptr;  // skipped: not in the mask
    e.kernels[k] = fn;
    if (fn) e.mask = e.mask | static_cast<DispatchKey>(k);
  }
}

// The entry of `id` for registration; raises when there is none.
OpEntry& entry_for_registration(OpId id, const char* api) {
  // An application's kernel must not be overwritten by the built-in ones later.
  if (!t_registering_builtins) init();
  const int i = static_cast<int>(id);
  MIXT_CHECK(i >= 0 && i < num_ops(), api, "op id {} does not exist", i);
  return g_ops[i];
}
}  // namespace detail

void register_kernel(OpId id, DispatchKey key, KernelFn fn) {
  OpEntry& e = detail::entry_for_registration(id, "register_kernel");
  std::lock_guard lock(detail::g_registry_mutex);
  e.bound[static_cast<int>(key)] = fn;
  detail::resolve(e);
}

void register_composite(OpId id, KernelFn fn) {
  OpEntry& e = detail::entry_for_registration(id, "register_composite");
  std::lock_guard lock(detail::g_registry_mutex);
  e.composite = fn;
  detail::resolve(e);
}

void register_fallback(DispatchKey key, KernelFn fn) {
  if (!detail::t_registering_builtins) init();
  std::lock_guard lock(detail::g_registry_mutex);
  const int n = num_ops();  // under the lock: an op registered meanwhile resolves with the fallback
  detail::g_fallbacks[static_cast<int>(key)] = fn;
  for (int i = 0; i < n; ++i) detail::resolve(detail::g_ops[i]);
}

void fallthrough_kernel(OpCall& call, DispatchKeySet) {
  MIXT_FAIL("dispatch", "op '{}': the fallthrough marker was called as a kernel", op_name(call.op));
}

void register_backend_kernel(OpId id, KernelFn fn) {
  for (DispatchKey k : {DispatchKey::CPU, DispatchKey::CUDA, DispatchKey::Meta}) register_kernel(id, k, fn);
}

std::string_view dispatch_key_name(DispatchKey k) {
  switch (k) {
    case DispatchKey::CPU: return "CPU";
    case DispatchKey::CUDA: return "CUDA";
    case DispatchKey::Autograd: return "Autograd";
    case DispatchKey::AutocastCPU: return "AutocastCPU";
    case DispatchKey::AutocastCUDA: return "AutocastCUDA";
    case DispatchKey::Meta: return "Meta";
    case DispatchKey::AutocastMeta: return "AutocastMeta";
  }
  return "Reserved";
}

std::ostream& operator<<(std::ostream& os, DispatchKey k) { return os << dispatch_key_name(k); }

std::ostream& operator<<(std::ostream& os, DispatchKeySet s) {
  os << '{';
  bool first = true;
  for (int k = 0; k < kNumDispatchKeys; ++k) {
    if (!s.has(static_cast<DispatchKey>(k))) continue;
    os << (first ? "" : ", ") << dispatch_key_name(static_cast<DispatchKey>(k));
    first = false;
  }
  return os << '}';
}

std::ostream& operator<<(std::ostream& os, OpId id) { return os << op_name(id); }

void OpCall::throw_too_many_inputs() const {
  throw Error(std::string(op_name(op)), fmt::format("an OpCall holds at most {} inputs", kMaxInputs),
              describe_inputs());
}

std::string OpCall::describe_inputs() const {
  std::string s;
  auto add = [&](const Tensor& t) {
    if (!s.empty()) s += ", ";
    s += t.defined() ? t.describe() : std::string("undefined");
  };
  for (int i = 0; i < n_in; ++i) add(in[i]);
  for (const Tensor& t : list) add(t);
  return s;
}

}  // namespace mixt

namespace mixt::detail {
void throw_op_error(const OpCall& call, std::string message) {
  throw Error(std::string(op_name(call.op)), std::move(message), call.describe_inputs());
}
}  // namespace mixt::detail
