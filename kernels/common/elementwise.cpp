#include <mixt/kernels/common/elementwise.h>

#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {
namespace {

bool is_cpu_scalar(const Tensor& t) { return t.is_cpu() && t.dim() == 0; }

bool same_geometry(const Tensor& a, const Tensor& b) {
  return a.storage_offset() == b.storage_offset() && a.sizes() == b.sizes() && a.strides() == b.strides() &&
         a.dtype() == b.dtype();
}

}  // namespace

ElementwisePlan plan_elementwise(const OpCall& call, int n, const ElementwiseOptions& opt) {
  ElementwisePlan e;
  for (int i = 0; i < n; ++i) MIXT_CHECK_OP(call.in[i].defined(), call, "input {} is undefined", i);

  // Device: the first operand that is not a CPU scalar decides.
  e.device = Device::cpu();
  bool found = false;
  for (int i = 0; i < n && !found; ++i)
    if (!is_cpu_scalar(call.in[i])) e.device = call.in[i].device(), found = true;
  if (!found && call.out[0].defined()) e.device = call.out[0].device();
  for (int i = 0; i < n; ++i) {
    const Tensor& t = call.in[i];
    MIXT_CHECK_OP(t.device() == e.device || is_cpu_scalar(t), call,
                  "expected all tensors on one device, but found {} and {}", e.device, t.device());
  }
  if (call.out[0].defined())
    MIXT_CHECK_OP(call.out[0].device() == e.device, call, "the output is on {} but the inputs are on {}",
                  call.out[0].device(), e.device);

  // Result type.
  if (opt.rule == ResultRule::Logical) {
    e.compute = kBool;
  } else {
    ResultTypeState state;
    try {
      for (int i = 0; i < n; ++i) update_result_type(state, call.in[i].dtype(), operand_kind(call.in[i]));
    } catch (const Error& err) {
      MIXT_FAIL_OP(call, "{}", err.message());
    }
    e.compute = result_type(state);
    if (opt.rule == ResultRule::PromoteToFloat && !is_floating(e.compute)) e.compute = kFloat32;
  }
  MIXT_CHECK_OP(dtypes::contains(opt.allowed, e.compute), call, "not implemented for dtype {}", e.compute);
  const bool bool_out =
      opt.rule == ResultRule::Compare || opt.rule == ResultRule::Logical || opt.rule == ResultRule::Predicate;
  e.out_dtype = bool_out ? kBool : e.compute;

  // Broadcast shape.
  e.shape = call.in[0].sizes();
  for (int i = 1; i < n; ++i) e.shape = broadcast_shapes(e.shape, call.in[i].sizes(), op_name(call.op).data());

  // The caller's output (in-place, out=) must hold the result.
  if (const Tensor& given = call.out[0]; given.defined()) {
    MIXT_CHECK_OP(given.sizes() == e.shape, call, "the output has shape {} but the broadcast shape is {}",
                  given.sizes(), e.shape);
    MIXT_CHECK_OP(can_cast(e.out_dtype, given.dtype()), call,
                  "result type {} can't be cast to the output's dtype {}", e.out_dtype, given.dtype());
    check_writable(call, given, "the output");
  }
  return e;
}

Elementwise prepare_elementwise(OpCall& call, int n, const ElementwiseOptions& opt) {
  const ElementwisePlan plan = plan_elementwise(call, n, opt);
  Elementwise e;
  e.n = n;
  e.device = plan.device;
  e.shape = plan.shape;
  e.compute = plan.compute;
  e.out_dtype = plan.out_dtype;

  // Operands in the compute dtype, on the compute device.
  for (int i = 0; i < n; ++i) {
    const Tensor& t = call.in[i];
    const bool scalar_like = t.impl()->wrapped_number || (is_cpu_scalar(t) && !e.device.is_cpu());
    if (opt.keep_scalars && scalar_like) {
      e.is_scalar[i] = true;
      e.scalars[i] = t.item();
      continue;
    }
    Tensor x = t;
    // On the CPU, the host copy directly (Note [Kernels do not re-enter the dispatcher]).
    if (x.dtype() != e.compute) x = x.is_cpu() ? host::converted(x, e.compute, call) : to(x, e.compute);
    if (x.device() != e.device) x = to(x, e.device);
    e.inputs[i] = x;
  }

  // Output: the caller's (in-place, out=) or a new tensor.
  Tensor& given = call.out[0];
  if (given.defined()) {
    bool direct = given.dtype() == e.out_dtype;
    for (int i = 0; i < n && direct; ++i)
      if (e.inputs[i].defined() && e.inputs[i].shares_storage(given) && !same_geometry(e.inputs[i], given))
        direct = false;
    if (direct) {
      e.out = given;
      return e;
    }
    e.final_out = given;
  }
  e.out = make_empty(e.shape, e.out_dtype, e.device);
  return e;
}

void finish_elementwise(OpCall& call, Elementwise& e) {
  if (e.final_out.defined()) {
    if (e.final_out.is_cpu() && e.out.is_cpu())
      host::copy_into(e.final_out, e.out, call);
    else
      copy_(e.final_out, e.out);
    call.out[0] = e.final_out;
  } else {
    call.out[0] = e.out;
  }
}

}  // namespace mixt
