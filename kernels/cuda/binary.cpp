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
#include <mixt/kernels/cuda/factory.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>

namespace mixt::cuda {

namespace {

// Note [Float8 elementwise through float32]: the device code has no elementwise kernels
// for float8 compute dtypes (they were a fifth of the CUDA backend's compile time). A
// float8 op widens its float8 tensor inputs to float32 (exact), runs the float32 kernel
// into a float32 result, and rounds that into the float8 output with the cast kernel. The
// values are the same bits as a float8 kernel's: a float8's opmath is float32, so the
// functor sees the same floats, and the cast rounds a float32 with the same rules as a
// kernel's store; scalars that a float8 kernel rounds to the compute dtype are rounded to
// float8 here first. It costs two more passes over memory (float8 elementwise math is no
// training step's hot path: fp8 training casts and multiplies, kernels that stay native).
struct Float8Widening {
  Tensor inputs[3];  // the float32 copies of the float8 tensor inputs (undefined: as given)
  Tensor out;        // the float32 result, rounded into e.out afterwards (undefined: none)
};

Float8Widening widen_float8(Elementwise& e, int n, EwRule rule, cudaStream_t stream, const char* op) {
  Float8Widening w;
  for (int k = 0; k < n; ++k) {
    const Tensor& in = e.inputs[k];
    if (e.is_scalar[k] || in.dtype() != e.compute) continue;  // where's condition stays bool
    w.inputs[k] = make_empty(in.sizes(), kFloat32, in.device());
    move_elements(w.inputs[k], in, stream, op);
  }
  if (!bool_result(rule)) w.out = make_empty(e.out.sizes(), kFloat32, e.out.device());
  return w;
}

// The float32 form of a scalar that a float8 kernel reads: rounded to `fp8` first when
// the kernel would round it to the compute dtype.
ScalarArg widened_scalar(const ScalarArg& s, bool round, ScalarType fp8) {
  if (!round) return s;
  ScalarArg r;
  r.is_float = true;
  r.f = fp8 == kFloat8_e4m3fn ? static_cast<double>(scalar_arg_rounded<Float8_e4m3fn>(s))
                              : static_cast<double>(scalar_arg_rounded<Float8_e5m2>(s));
  return r;
}

}  // namespace

void run_elementwise(OpCall& c, int n, EwRule rule, uint32_t set, int op, ElementwiseLauncher launch) {
  check_elementwise_call(c);
  Elementwise e = prepare_elementwise(c, n, elementwise_options(c, n, rule, set));
  MIXT_CHECK_OP(e.device.is_cuda(), c, "the CUDA kernel got operands on {}", e.device);
  ElementwiseArgs a;
  a.params = elementwise_params(c, e.compute);
  if (e.out.numel() > 0) {
    const int index = e.device.index();
    DeviceGuard guard(index, op_name(c.op).data());
    const cudaStream_t stream = current_native_stream(index);
    const bool widen = is_float8(e.compute);
    const Float8Widening w = widen ? widen_float8(e, n, rule, stream, op_name(c.op).data()) : Float8Widening{};
    const Tensor& out = w.out.defined() ? w.out : e.out;
    const ScalarType compute = widen ? kFloat32 : e.compute;
    const Shape no_dims;
    OperandGeometry geom[4] = {{&out.sizes(), &out.strides(), out.element_size()}, {}, {}, {}};
    bool scalar[4] = {false, false, false, false};
    const bool all_scalars = n == 2 && e.is_scalar[0] && e.is_scalar[1];
    for (int k = 0; k < n; ++k) {
      const Tensor& in = w.inputs[k].defined() ? w.inputs[k] : e.inputs[k];
      scalar[k + 1] = e.is_scalar[k];
      geom[k + 1] = e.is_scalar[k] ? OperandGeometry{&no_dims, &no_dims, element_size(compute)}
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
      if (widen && x.is_scalar) x.value = widened_scalar(x.value, x.round_scalar, e.compute);
    }
    a.layout = make_launch_layout(out.sizes(), std::span<const OperandGeometry>(geom, static_cast<size_t>(n + 1)),
                                  scalar);
    a.out = out.data_ptr();
    a.n_in = n;
    a.compute = compute;
    a.error_word = device_error_word(index);
    check(launch(a, op, stream), op_name(c.op).data());
    if (w.out.defined()) move_elements(e.out, w.out, stream, op_name(c.op).data());
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
