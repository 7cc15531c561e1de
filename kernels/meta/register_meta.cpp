// The meta backend: one generic kernel runs an op's meta rule and makes its outputs
// as meta tensors (sizes, strides, dtype; no memory). See Note [Meta device].
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/meta/register.h>
#include <mixt/kernels/meta/rules.h>

namespace mixt {
namespace meta {

void uses_kernel(const OpCall& c, OutputMeta*) { MIXT_FAIL_OP(c, "uses_kernel is a marker, not a rule"); }
void uses_composite(const OpCall& c, OutputMeta*) { MIXT_FAIL_OP(c, "uses_composite is a marker, not a rule"); }

}  // namespace meta

namespace {

// Meta tensors only (a 0-dim CPU tensor may join, as a scalar does on CUDA), so no
// kernel of another device is asked for data the meta tensors do not have.
void check_devices(const OpCall& c) {
  auto ok = [](const Tensor& t) { return !t.defined() || t.is_meta() || (t.is_cpu() && t.dim() == 0); };
  for (int i = 0; i < c.n_in; ++i)
    MIXT_CHECK_OP(ok(c.in[i]), c, "expected meta tensors, but input {} is on {}", i, c.in[i].device());
  for (const Tensor& t : c.list) MIXT_CHECK_OP(ok(t), c, "expected meta tensors, but a list element is on {}", t.device());
}

// The Meta key's fallback: every op without a meta kernel or composite of its own runs
// its meta rule here.
void meta_kernel(OpCall& c, DispatchKeySet) {
  const OpEntry& e = op_entry(c.op);
  MIXT_CHECK_OP(meta::is_rule(e.schema.meta), c,
                "has no meta rule, so it cannot run on meta tensors (declare one when registering the op)");
  if (c.op != OpId::copy_) check_devices(c);
  OutputMeta outs[kMaxOutputs];
  e.schema.meta(c, outs);
  for (int i = 0; i < e.schema.outputs; ++i) {
    const OutputMeta& m = outs[i];
    Tensor& out = c.out[static_cast<size_t>(i)];
    if (m.dtype == ScalarType::Undefined) continue;  // the op returns nothing here (multi-tensor steps)
    if (!out.defined()) {
      out = make_empty(m.sizes, m.dtype, Device::meta());
      continue;
    }
    MIXT_CHECK_OP(out.sizes() == m.sizes, c, "the output has shape {} but the result has shape {}", out.sizes(),
                  m.sizes);
    MIXT_CHECK_OP(can_cast(m.dtype, out.dtype()), c, "result type {} can't be cast to the output's dtype {}", m.dtype,
                  out.dtype());
  }
}

}  // namespace

void register_meta_kernels() { register_fallback(DispatchKey::Meta, meta_kernel); }

}  // namespace mixt
