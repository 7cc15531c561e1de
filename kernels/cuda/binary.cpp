// Binary arithmetic on CUDA (add, sub, mul, div, pow, atan2, maximum, minimum and their
// in-place forms: the rows of MIXT_ELEMENTWISE_BINARY), and run_elementwise, the host
// side every elementwise family shares: the CPU's checks and planning
// (elementwise_attrs.h, prepare_elementwise: promotion, broadcasting, input casts),
// then one launch on the current stream.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/elementwise_attrs.h>
#include <mixt/kernels/cuda/device_error.h>
#include <mixt/kernels/cuda/elementwise_launch.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>

namespace mixt::cuda {

void run_elementwise(OpCall& c, int n, EwRule rule, uint32_t set, int op, ElementwiseLauncher launch) {
  check_elementwise_call(c);
  Elementwise e = prepare_elementwise(c, n, elementwise_options(c, n, rule, set));
  MIXT_CHECK_OP(e.device.is_cuda(), c, "the CUDA kernel got operands on {}", e.device);
  ElementwiseArgs a;
  a.params = elementwise_params(c, e.compute);
  const Tensor& out = e.out;
  if (out.numel() > 0) {
    const Shape no_dims;
    OperandGeometry geom[4] = {{&out.sizes(), &out.strides(), out.element_size()}, {}, {}, {}};
    bool scalar[4] = {false, false, false, false};
    const bool all_scalars = n == 2 && e.is_scalar[0] && e.is_scalar[1];
    for (int k = 0; k < n; ++k) {
      const Tensor& in = e.inputs[k];
      scalar[k + 1] = e.is_scalar[k];
      geom[k + 1] = e.is_scalar[k] ? OperandGeometry{&no_dims, &no_dims, element_size(e.compute)}
                                   : OperandGeometry{&in.sizes(), &in.strides(), in.element_size()};
      ElementwiseInput& x = a.in[k];
      x.data = e.is_scalar[k] ? nullptr : in.data_ptr();
      x.is_scalar = e.is_scalar[k];
      if (x.is_scalar) x.value = scalar_arg(e.scalars[k]);
      // The CPU rounds a scalar to the compute dtype where it makes it a 0-dim tensor:
      // comparisons, the first of two scalar operands, lerp's start and end, and a CPU
      // 0-dim tensor that is not a wrapped number.
      x.round_scalar = rule == EwRule::Compare || (all_scalars && k == 0) || (n == 3 && k < 2) ||
                       !c.in[k].impl()->wrapped_number;
    }
    a.layout = make_launch_layout(out.sizes(), std::span<const OperandGeometry>(geom, static_cast<size_t>(n + 1)),
                                  scalar);
    a.out = out.data_ptr();
    a.n_in = n;
    a.compute = e.compute;
    const int index = e.device.index();
    DeviceGuard guard(index, op_name(c.op).data());
    a.error_word = device_error_word(index);
    check(launch(a, op, current_native_stream(index)), op_name(c.op).data());
  }
  finish_elementwise(c, e);
}

namespace {

template <BinaryOp Op, EwRule Rule, uint32_t Set>
void binary_kernel(OpCall& c, DispatchKeySet) {
  run_elementwise(c, 2, Rule, Set, static_cast<int>(Op), [](const ElementwiseArgs& a, int op, cudaStream_t s) {
    return launch_binary(BinaryArgs{a, static_cast<BinaryOp>(op)}, s);
  });
}

}  // namespace

void register_binary_kernels() {
  using namespace dtypes;
#define MIXT_EW_REGISTER(name, inplace, Maker, Rule, Set) \
  register_elementwise(OpId::name, inplace, DispatchKey::CUDA, binary_kernel<BinaryOp::name, EwRule::Rule, Set>);
  MIXT_ELEMENTWISE_BINARY(MIXT_EW_REGISTER)
#undef MIXT_EW_REGISTER
}

}  // namespace mixt::cuda
