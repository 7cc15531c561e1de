// to, clone, cat and stack: they allocate the result and dispatch copy_ into it
// (or into views of it), so one kernel serves every backend that has copy_. On the
// CPU, cat and stack copy with the host copy directly, and `to` and clone have kernels
// of their own (kernels/cpu/copy.cpp): Note [Kernels do not re-enter the dispatcher].
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/host_copy.h>
#include <mixt/kernels/common/register.h>
#include <mixt/runtime/checked.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt {
namespace {

void to_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& t = c.in[0];
  const ScalarType dtype = c.attrs.dtype == ScalarType::Undefined ? t.dtype() : c.attrs.dtype;
  if (dtype == t.dtype() && c.attrs.device == t.device()) {
    c.out[0] = t;
    return;
  }
  Tensor out = make_empty(t.sizes(), dtype, c.attrs.device);
  copy_(out, t);
  c.out[0] = out;
}

void clone_kernel(OpCall& c, DispatchKeySet) {
  Tensor out = make_empty(c.in[0].sizes(), c.in[0].dtype(), c.in[0].device());
  copy_(out, c.in[0]);
  c.out[0] = out;
}

// Copies `src` into `part` (a view of the result): the host copy on the CPU, copy_ elsewhere.
void write_part(const OpCall& c, Tensor part, const Tensor& src) {
  if (part.is_cpu() && src.is_cpu())
    host::copy_into(part, src, c);
  else
    copy_(part, src);
}

// Common checks of cat/stack: a non-empty list on one device; returns the result dtype.
ScalarType check_list(const OpCall& c) {
  MIXT_CHECK_OP(!c.list.empty(), c, "expected a non-empty list of tensors");
  ResultTypeState state;
  for (size_t i = 0; i < c.list.size(); ++i) {
    const Tensor& t = c.list[i];
    MIXT_CHECK_OP(t.defined(), c, "tensor {} of the list is undefined", i);
    MIXT_CHECK_OP(t.device() == c.list[0].device(), c, "expected all tensors on one device, but found {} and {}",
                  c.list[0].device(), t.device());
    try {
      update_result_type(state, t.dtype(), OperandKind::Dim);
    } catch (const Error& e) {
      MIXT_FAIL_OP(c, "{}", e.message());
    }
  }
  return result_type(state);
}

void cat_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType dtype = check_list(c);
  // Legacy rule kept by PyTorch: 1-D empty tensors are skipped whatever their shape.
  const Tensor* ref = nullptr;
  for (const Tensor& t : c.list)
    if (!(t.dim() == 1 && t.numel() == 0)) {
      ref = &t;
      break;
    }
  if (!ref) {
    c.out[0] = make_empty({0}, dtype, c.list[0].device());
    return;
  }
  MIXT_CHECK_OP(ref->dim() > 0, c, "zero-dimensional tensors cannot be concatenated (use stack)");
  const int d = static_cast<int>(wrap_dim(c.attrs.get<attrs::Dim>().dim, ref->dim(), "cat"));
  Shape out_sizes = ref->sizes();
  out_sizes[d] = 0;
  for (const Tensor& t : c.list) {
    if (t.dim() == 1 && t.numel() == 0) continue;
    MIXT_CHECK_OP(t.dim() == ref->dim(), c, "tensors must have the same number of dimensions ({} vs {})",
                  ref->dim(), t.dim());
    for (int k = 0; k < t.dim(); ++k)
      MIXT_CHECK_OP(k == d || t.sizes()[k] == ref->sizes()[k], c,
                    "sizes must match except in dimension {}: {} vs {} at dimension {}", d, ref->sizes(), t.sizes(),
                    k);
    out_sizes[d] = checked_add(out_sizes[d], t.sizes()[d], "cat");
  }
  Tensor out = make_empty(out_sizes, dtype, ref->device());
  int64_t at = 0;
  for (const Tensor& t : c.list) {
    if (t.dim() == 1 && t.numel() == 0) continue;
    Shape part_sizes = out.sizes();  // out[..., at : at + t.size(d), ...]
    part_sizes[d] = t.sizes()[d];
    write_part(c, make_view(out, part_sizes, out.strides(), at * out.stride(d)), t);
    at += t.sizes()[d];
  }
  c.out[0] = out;
}

void stack_kernel(OpCall& c, DispatchKeySet) {
  const ScalarType dtype = check_list(c);
  const Tensor& ref = c.list[0];
  for (const Tensor& t : c.list)
    MIXT_CHECK_OP(t.sizes() == ref.sizes(), c, "stack expects tensors of one shape, got {} and {}", ref.sizes(),
                  t.sizes());
  const int d = static_cast<int>(wrap_dim(c.attrs.get<attrs::Dim>().dim, ref.dim() + 1, "stack"));
  MIXT_CHECK_OP(ref.dim() < kMaxDims, c, "the result would have more than {} dimensions", kMaxDims);
  Shape out_sizes = ref.sizes();
  out_sizes.insert(d, static_cast<int64_t>(c.list.size()));
  Tensor out = make_empty(out_sizes, dtype, ref.device());
  Shape part_strides = out.strides();  // out.select(d, i): the strides without dim d
  part_strides.erase(d);
  for (size_t i = 0; i < c.list.size(); ++i)
    write_part(c, make_view(out, ref.sizes(), part_strides, static_cast<int64_t>(i) * out.stride(d)), c.list[i]);
  c.out[0] = out;
}

}  // namespace

void register_movement_kernels() {
  register_backend_kernel(OpId::to, to_kernel);
  register_backend_kernel(OpId::clone, clone_kernel);
  register_backend_kernel(OpId::cat, cat_kernel);
  register_backend_kernel(OpId::stack, stack_kernel);
}

}  // namespace mixt
