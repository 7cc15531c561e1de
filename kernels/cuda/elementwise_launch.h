// The launch boundary of the CUDA elementwise kernels (unary, binary, compare, ternary):
// plain structs the host side (kernels/cuda/*.cpp) fills and the device side
// (kernels/cuda/*.cu, loops in elementwise.cuh) reads. Like launch.h, free of fmt and
// of mixt's tensor headers. The op of each family is its enum of the shared op list
// (kernels/common/elementwise_ops.h).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include <mixt/kernels/common/backward_math.h>
#include <mixt/kernels/common/elementwise_ops.h>
#include <mixt/kernels/cuda/launch.h>

namespace mixt {
struct OpCall;
}

namespace mixt::cuda {

// One input: a device tensor (operand k + 1 of the layout) or a scalar value.
struct ElementwiseInput {
  const void* data = nullptr;  // null for a scalar
  bool is_scalar = false;
  bool round_scalar = false;   // the scalar is first rounded to the compute dtype (as a 0-dim tensor would be)
  ScalarArg value;
};

// What every family's launch carries: the iteration space (operand 0 the output), the
// output, up to three inputs, the compute dtype, the op's attributes and the device's
// error word (Note [Device-side errors]).
struct ElementwiseArgs {
  LaunchLayout layout;
  void* out = nullptr;
  ElementwiseInput in[3];
  int n_in = 0;
  ScalarType compute = ScalarType::Float32;  // the dtype the inputs hold (where: of a and b)
  OpParams params;
  uint32_t* error_word = nullptr;
};

struct UnaryArgs {
  ElementwiseArgs e;
  UnaryOp op = UnaryOp::neg;
};
struct BinaryArgs {
  ElementwiseArgs e;
  BinaryOp op = BinaryOp::add;
};
struct CompareArgs {
  ElementwiseArgs e;
  CompareOp op = CompareOp::eq;
};
struct TernaryArgs {
  ElementwiseArgs e;
  TernaryOp op = TernaryOp::addcmul;
};
// gelu_backward / silu_backward (activation_backward.cu): out = in[0] * f'(in[1]), the
// inputs grad_output and self (Note [Fused backward ops]).
struct ActivationBackwardArgs {
  ElementwiseArgs e;
  backward_math::ActivationGrad op = backward_math::ActivationGrad::GeluErf;
};

// Each launcher queues its kernel on `stream` and returns the launch's error
// (cudaSuccess when nothing was launched); an unsupported op or dtype gives cudaErrorInvalidValue.
cudaError_t launch_unary(const UnaryArgs& args, cudaStream_t stream);
cudaError_t launch_binary(const BinaryArgs& args, cudaStream_t stream);
cudaError_t launch_compare(const CompareArgs& args, cudaStream_t stream);
cudaError_t launch_ternary(const TernaryArgs& args, cudaStream_t stream);
cudaError_t launch_activation_backward(const ActivationBackwardArgs& args, cudaStream_t stream);

// Host side (kernels/cuda/binary.cpp), shared by the families' kernels: checks and
// prepares `call` (its first `n` inputs, a row with list rule `rule`, dtypes `set` and
// data check `check`; elementwise_attrs.h), fills ElementwiseArgs and calls `launch` with
// them on the current stream of the device (unless the result is empty), then finishes
// the call (copying into the caller's output where it was not written directly).
using ElementwiseLauncher = cudaError_t (*)(const ElementwiseArgs& args, int op, cudaStream_t stream);
void run_elementwise(OpCall& call, int n, EwRule rule, uint32_t set, int op, ElementwiseLauncher launch);

}  // namespace mixt::cuda
