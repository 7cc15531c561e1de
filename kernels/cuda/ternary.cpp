// Ternary elementwise ops on CUDA: addcmul, addcdiv, lerp (and their in-place forms)
// through run_elementwise (binary.cpp) with the CPU's checks, and where, planned as the
// CPU plans it (where_result: a bool condition, a and b promoted, all three broadcast).
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/elementwise_attrs.h>
#include <mixt/kernels/cuda/device_error.h>
#include <mixt/kernels/cuda/elementwise_launch.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cuda {
namespace {

cudaError_t launch_row(const ElementwiseArgs& a, int op, cudaStream_t s) {
  return launch_ternary(TernaryArgs{a, static_cast<TernaryOp>(op)}, s);
}

// where(condition, a, b) on one CUDA device (a and b may also be CPU 0-dim tensors).
void where_kernel(OpCall& c) {
  const auto [shape, dtype] = where_result(c);
  const Device device = c.in[0].device();
  MIXT_CHECK_OP(device.is_cuda(), c, "the CUDA kernel got a condition on {}", device);
  Tensor x[3];
  for (int i = 0; i < 3; ++i) {
    const Tensor& t = c.in[i];
    MIXT_CHECK_OP(t.device() == device || (i > 0 && t.is_cpu() && t.dim() == 0), c,
                  "expected all tensors on one device, but found {} and {}", device, t.device());
    x[i] = t;
    if (i > 0 && x[i].dtype() != dtype) x[i] = to(x[i], dtype);
    if (x[i].device() != device) x[i] = to(x[i], device);
  }
  Tensor out = make_empty(shape, dtype, device);
  if (out.numel() > 0) {
    OperandGeometry geom[4] = {{&out.sizes(), &out.strides(), out.element_size()}, {}, {}, {}};
    ElementwiseArgs a;
    for (int k = 0; k < 3; ++k) {
      geom[k + 1] = {&x[k].sizes(), &x[k].strides(), x[k].element_size()};
      a.in[k].data = x[k].data_ptr();
    }
    a.layout = make_launch_layout(out.sizes(), geom);
    a.out = out.data_ptr();
    a.n_in = 3;
    // where selects elements without reading them as numbers: a float8 selection is that of
    // its bytes (Note [Float8 elementwise through float32]: no float8 device kernels).
    a.compute = is_float8(dtype) ? kUInt8 : dtype;
    DeviceGuard guard(device.index(), "where");
    a.error_word = device_error_word(device.index());
    check(launch_row(a, static_cast<int>(TernaryOp::where), current_native_stream(device.index())), "where");
  }
  if (c.out[0].defined()) {  // an out= call: the result is copied (and cast) into it
    MIXT_CHECK_OP(c.out[0].sizes() == shape, c, "the output has shape {} but the broadcast shape is {}",
                  c.out[0].sizes(), shape);
    MIXT_CHECK_OP(can_cast(dtype, c.out[0].dtype()), c, "result type {} can't be cast to the output's dtype {}", dtype,
                  c.out[0].dtype());
    copy_(c.out[0], out);
  } else {
    c.out[0] = out;
  }
}

template <TernaryOp Op, EwRule Rule, uint32_t Set>
void ternary_kernel(OpCall& c, DispatchKeySet) {
  if constexpr (Rule == EwRule::Where)
    where_kernel(c);
  else
    run_elementwise(c, 3, Rule, Set, static_cast<int>(Op), launch_row);
}

}  // namespace

void register_ternary_kernels() {
  using namespace dtypes;
#define MIXT_EW_REGISTER(name, inplace, Maker, Rule, Set) \
  register_elementwise(OpId::name, inplace, DispatchKey::CUDA, ternary_kernel<TernaryOp::name, EwRule::Rule, Set>);
  MIXT_ELEMENTWISE_TERNARY(MIXT_EW_REGISTER)
#undef MIXT_EW_REGISTER
}

}  // namespace mixt::cuda
