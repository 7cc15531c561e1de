// Ops: ids, schemas, the registry and the registration API. Built-in ops come
// from op_table.def; applications register custom ops with the same API.
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <string_view>

#include <mixt/dispatcher/attrs.h>
#include <mixt/dispatcher/keys.h>
#include <mixt/dispatcher/tls.h>
#include <mixt/runtime/macros.h>

namespace mixt {

struct OpCall;

// Kernel signature for every layer and backend. `keys` is the dispatch key set
// the call was routed with (used to redispatch below the current key).
using KernelFn = void (*)(OpCall& call, DispatchKeySet keys);

// The shape and dtype of one output of a call, as its meta function gives them.
struct OutputMeta {
  Shape sizes;
  ScalarType dtype = ScalarType::Undefined;
};
// A meta function: validates a call's inputs and attributes (raising mixt::Error as the
// kernels do) and fills `outputs[i]` for each output, reading no data. See Note [Meta
// functions].
using MetaFn = void (*)(const OpCall& call, OutputMeta* outputs);

namespace op_flags {
enum : uint32_t {
  None = 0,
  Diff = 1u << 0,        // differentiable
  Inplace = 1u << 1,     // writes in[0]; out[0] is in[0]
  View = 1u << 2,        // out[0] shares in[0]'s storage
  List = 1u << 3,        // takes a tensor list (OpCall::list)
  Composite = 1u << 4,   // has a composite implementation (in other ops) for backends without a kernel
  Factory = 1u << 5,     // no tensor inputs: keys come from Attrs::device
  DeviceAttr = 1u << 6,  // dispatches on Attrs::device as well as the inputs
  Random = 1u << 7,      // draws from a Generator
  Custom = 1u << 8,      // registered by an application
  Mutates = 1u << 9,     // writes its list tensors in place (multi-tensor ops): never cast, never recorded
  Conversion = 1u << 10, // an explicit conversion (to, clone): autocast never casts its input
  // Passed through by autocast as its decomposition, so autocast decides its inner ops
  // (PyTorch: a CompositeImplicitAutograd op). For composite-only ops: a backend kernel runs
  // no inner ops to decide (Note [Decomposed ops in the tables]).
  AutocastDecomposes = 1u << 11,
  // Autocast never casts its inputs, under any table, island or region: their dtypes are
  // the op's contract (scaled_mm's float8 operands and float32 scales).
  KeepsDtypes = 1u << 12,
  // Not differentiable, but recorded when an input requires grad: backward through it
  // raises naming the op (PyTorch's NotImplemented node), so a gradient never silently
  // stops there.
  BackwardRaises = 1u << 13,
};
}  // namespace op_flags

// Ids of the built-in ops, in op_table.def order. Custom ops get ids after
// kNumBuiltinOps.
enum class OpId : uint16_t {
#define MIXT_ATTRS(Name, seq)
#define MIXT_OP(name, min_in, max_in, n_out, flags, attr_struct, meta_rule) name,
#include <mixt/dispatcher/op_table.def>
#undef MIXT_OP
#undef MIXT_ATTRS
  kNumBuiltinOps
};
constexpr int kNumBuiltinOps = static_cast<int>(OpId::kNumBuiltinOps);
constexpr int kMaxOps = 1024;

// What an op is, independent of its kernels.
struct OpSchema {
  std::string_view name;
  uint8_t min_inputs = 0;
  uint8_t max_inputs = 0;
  uint8_t outputs = 1;
  uint32_t flags = op_flags::None;
  // The op's named attributes (an attribute struct's schema: T::kSchema).
  const AttrSchema* attrs = &attrs::NoAttrs::kSchema;
  // How the outputs' shapes and dtypes follow from the inputs (nullptr: the op's
  // kernels are its only description).
  MetaFn meta = nullptr;
};

// A registered op: its schema, what was registered for it, and the kernel each
// dispatch key resolves to. See Note [Composite and backend kernels].
struct OpEntry {
  OpSchema schema;
  KernelFn kernels[kNumDispatchKeys] = {};  // resolved: what dispatch() calls
  DispatchKeySet mask;                      // keys that have a kernel (the others fall through)
  KernelFn bound[kNumDispatchKeys] = {};    // kernels registered per key (backends: their own)
  KernelFn composite = nullptr;             // the op in other ops: every backend without its own kernel
  bool has(uint32_t flag) const { return (schema.flags & flag) != 0; }
  // True when backend `k` has no kernel of its own and runs the composite implementation.
  bool composite_on(DispatchKey k) const { return composite != nullptr && bound[static_cast<int>(k)] == nullptr; }
  // True when a call routed to backend `k` on this thread runs the composite: `k` has no
  // kernel of its own, or `k` rehearses a backend that has none (Note [Rehearsed kernel choice]).
  bool runs_composite(DispatchKey k) const {
    const LocalDispatchKeys& tls = tls_dispatch_keys;
    return composite_on(k) || (tls.rehearsed.has(k) && composite_on(tls.choice_of[static_cast<int>(k)]));
  }
  // What a call routed to key `k` runs on a thread with key sets `tls`: the kernel resolved
  // for `k`, or the composite where `k` rehearses a backend that runs it.
  MIXT_ALWAYS_INLINE KernelFn kernel_for(DispatchKey k, const LocalDispatchKeys& tls) const {
    if (MIXT_UNLIKELY(tls.rehearsed.has(k)) && composite_on(tls.choice_of[static_cast<int>(k)])) return composite;
    return kernels[static_cast<int>(k)];
  }
};

namespace detail {
extern OpEntry g_ops[kMaxOps];
extern std::atomic<bool> g_kernels_registered;  // set (release) once every built-in kernel is bound

// The scope of the one registration of the built-in kernels (mixt::init, runtime/init.cpp):
// copies the built-in schemas into the table, lets this thread bind kernels without
// waiting for itself, and publishes the table when the registration succeeded.
class BuiltinRegistration {
 public:
  BuiltinRegistration();
  ~BuiltinRegistration();
  // Marks every built-in kernel bound: op_entry() stops calling init().
  void publish();
  BuiltinRegistration(const BuiltinRegistration&) = delete;
  BuiltinRegistration& operator=(const BuiltinRegistration&) = delete;
};

// Holds the registry's lock while it lives: tests show with it what must never wait
// for that lock (op names, dispatch).
class RegistryLockForTesting {
 public:
  RegistryLockForTesting();
  ~RegistryLockForTesting();
  RegistryLockForTesting(const RegistryLockForTesting&) = delete;
  RegistryLockForTesting& operator=(const RegistryLockForTesting&) = delete;
};
}  // namespace detail

// Registers every built-in op's kernels (backends, autograd, autocast), once per process
// and thread-safely. Done on an op's first use; an application may call it first.
void init();

// The entry of op `id` (built-in kernels are registered on first use).
inline const OpEntry& op_entry(OpId id) {
  // An acquire load (a plain load on x86): a thread that sees the flag also sees
  // every kernel bound before it was set. Note [Registration and dispatch across threads].
  if (MIXT_UNLIKELY(!detail::g_kernels_registered.load(std::memory_order_acquire))) init();
  return detail::g_ops[static_cast<int>(id)];
}
// Name of op `id` ("<invalid op>" for an id no op has). Takes no lock: a kernel may
// call it on every call (Note [Op names without a lock]).
std::string_view op_name(OpId id);
// Prints op_name(id) (fmt: <mixt/dispatcher/formatters.h>).
std::ostream& operator<<(std::ostream& os, OpId id);
// Number of registered ops (built-in and custom); takes no lock.
int num_ops();
// The id of the op called `name`; throws mixt::Error when there is none.
OpId find_op(std::string_view name);
// True when an op called `name` exists.
bool has_op(std::string_view name);

// Declares a new op (an application's custom op); throws on a duplicate name
// or a schema beyond OpCall's capacity. Returns its id.
OpId register_op(const OpSchema& schema);
// Binds `fn` as op `id`'s kernel for `key` (replacing any earlier one). Bind an op's kernels
// before other threads call it (Note [Registration and dispatch across threads]).
void register_kernel(OpId id, DispatchKey key, KernelFn fn);
// Binds `fn` for every backend key (CPU, CUDA, meta): kernels that only compute
// geometry or call other ops (views, `to`, `cat`), so they serve every device.
void register_backend_kernel(OpId id, KernelFn fn);
// Binds the composite implementation of op `id`: written in other ops' front ends,
// it runs on every backend without a kernel of its own, and is differentiated through
// its decomposition. A backend kernel (with a derivative) wins where one exists.
void register_composite(OpId id, KernelFn fn);
// Binds `fn` as the kernel of `key` for every op that has none for it, now and for
// ops registered later (a layer such as autocast that handles every op generically).
void register_fallback(DispatchKey key, KernelFn fn);
// Bound for a key (register_kernel(id, key, fallthrough_kernel)): op `id` skips that
// key, and the key's fallback does not apply to it. Never called.
void fallthrough_kernel(OpCall& call, DispatchKeySet keys);
// Registers the CPU kernels of the built-in ops (done on first use).
void register_cpu_kernels();
// Registers the CUDA kernels of the built-in ops (a no-op without CUDA).
void register_cuda_kernels();
// Registers the kernels that serve every backend (views, composites).
void register_common_kernels();

}  // namespace mixt
