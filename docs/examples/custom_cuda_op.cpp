// A custom op with the application's own CUDA kernel (docs/emulated-cuda.md): the
// sum of squares of each row of a float32 matrix, declared once with a meta function,
// a CPU kernel and a CUDA kernel (docs/examples/custom_cuda_op_kernel.cu). On a GPU, or
// on the emulated CUDA device in CPU-only CI, the CUDA result must match the CPU's.
// Exits 77 (skipped) where no CUDA device is usable.
#include <cmath>
#include <cstdio>
#include <iostream>

#include <cuda_runtime_api.h>

#include <mixt/mixt.h>

#include "example_support.h"

using namespace mixt;

// The launcher in custom_cuda_op_kernel.cu.
cudaError_t launch_row_sumsq(const float* x, float* out, int64_t rows, int64_t cols, cudaStream_t stream);

namespace {

void check_input(const OpCall& c, const Tensor& x) {
  MIXT_CHECK_OP(x.dtype() == kFloat32 && x.dim() == 2, c, "expects a float32 matrix, got {} {}", x.dtype(),
                x.sizes());
}

void row_sumsq_meta(const OpCall& c, OutputMeta* out) {
  check_input(c, c.in[0]);
  out[0] = {Shape{c.in[0].size(0)}, kFloat32};
}

void row_sumsq_cpu(OpCall& c, DispatchKeySet) {
  const Tensor x = c.in[0].contiguous();
  check_input(c, x);
  Tensor out = make_empty({x.size(0)}, kFloat32, x.device());
  const float* in = x.data_ptr<float>();
  for (int64_t r = 0; r < x.size(0); ++r) {
    float s = 0.0f;
    for (int64_t j = 0; j < x.size(1); ++j) s += in[r * x.size(1) + j] * in[r * x.size(1) + j];
    out.data_ptr<float>()[r] = s;
  }
  c.out[0] = out;
}

// The CUDA kernel of the op: a contiguous input, the output made on its device, the
// launch queued on the device's current stream.
void row_sumsq_cuda(OpCall& c, DispatchKeySet) {
  const Tensor x = c.in[0].contiguous();
  check_input(c, x);
  Tensor out = make_empty({x.size(0)}, kFloat32, x.device());
  const auto stream = static_cast<cudaStream_t>(cuda::current_stream(x.device()).handle());
  const cudaError_t err = launch_row_sumsq(x.data_ptr<float>(), out.data_ptr<float>(), x.size(0), x.size(1), stream);
  MIXT_CHECK_OP(err == cudaSuccess, c, "the CUDA launch failed: {}", cudaGetErrorString(err));
  c.out[0] = out;
}

OpId row_sumsq_op() {
  static const OpId id = OpDefinition("example::row_sumsq")
                             .inputs(1)
                             .meta(row_sumsq_meta)
                             .kernel(DispatchKey::CPU, row_sumsq_cpu)
                             .kernel(DispatchKey::CUDA, row_sumsq_cuda)
                             .not_differentiable()  // (docs/examples/custom_op.cpp shows a derivative)
                             .define();
  return id;
}

Tensor row_sumsq(const Tensor& x) {
  OpCall c(row_sumsq_op());
  c.push(x);
  return call_op(c);
}

}  // namespace

int main() {
  if (!cuda::is_available()) {
    std::cout << "no CUDA device here: " << cuda::unavailable_reason() << "\n";
    return 77;
  }
  std::cout << "cuda:0 is " << cuda::device_name(0) << "\n";
  const Tensor x = randn({37, 300}, {.dtype = kFloat32});
  const Tensor on_cpu = row_sumsq(x);
  const Tensor on_gpu = row_sumsq(x.to(Device::cuda(0)));
  example::require(on_gpu.is_cuda() && on_gpu.sizes() == Shape{37}, "the CUDA kernel ran and made a [37] result");
  const double diff = max((on_gpu.cpu() - on_cpu).abs() / (on_cpu + 1e-6)).item<double>();
  std::cout << "largest relative difference, CUDA vs CPU: " << diff << "\n";
  example::require(diff < 1e-5, "the CUDA kernel agrees with the CPU kernel");
  return 0;
}
