// im2col / col2im on CUDA: the CPU's checks and window (kernels/common/conv_geometry.h),
// dense operands (a strided input is compacted on the device first), one thread per
// output element (kernels/cuda/conv.cu).
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/conv_geometry.h>
#include <mixt/kernels/cuda/conv_launch.h>
#include <mixt/kernels/cuda/factory.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>

namespace mixt::cuda {
namespace {

void check_input(const OpCall& c, const Tensor& t) {
  MIXT_CHECK_OP(t.is_cuda(), c, "the CUDA kernel got a tensor on {}", t.device());
  MIXT_CHECK_OP(is_floating(t.dtype()), c, "expected a floating input, got {}", t.dtype());
}


// Runs im2col or col2im of `c` (the geometry from `call`).
void run(OpCall& c, const conv::WindowCall& call, bool to_columns) {
  const Tensor& in_t = c.in[0];
  const char* op = op_name(c.op).data();
  DeviceGuard guard(in_t.device().index(), op);
  const cudaStream_t stream = current_native_stream(in_t.device().index());
  const Tensor x = in_t.is_contiguous() ? in_t : dense_copy(in_t, stream, op);
  Tensor out = make_empty(call.out_sizes, x.dtype(), x.device());
  WindowArgs a;
  a.w = call.w;
  a.planes = to_columns ? x.size(0) * x.size(1) : call.out_sizes[0] * call.out_sizes[1];
  a.in = x.data_ptr();
  a.out = out.data_ptr();
  a.dtype = x.dtype();
  check(to_columns ? launch_im2col(a, stream) : launch_col2im(a, stream), op);
  if (c.out[0].defined()) {
    MIXT_CHECK_OP(c.out[0].sizes() == out.sizes() && c.out[0].dtype() == out.dtype() &&
                      c.out[0].device() == out.device(),
                  c, "the output is {} but the result is {}", c.out[0].describe(), out.describe());
    move_elements(c.out[0], out, stream, op);
  } else {
    c.out[0] = out;
  }
}

void im2col_kernel(OpCall& c, DispatchKeySet) {
  check_input(c, c.in[0]);
  run(c, conv::im2col_call(c, c.in[0]), true);
}

void col2im_kernel(OpCall& c, DispatchKeySet) {
  check_input(c, c.in[0]);
  run(c, conv::col2im_call(c, c.in[0]), false);
}

}  // namespace

void register_conv_kernels() {
  register_kernel(OpId::im2col, DispatchKey::CUDA, im2col_kernel);
  register_kernel(OpId::col2im, DispatchKey::CUDA, col2im_kernel);
}

}  // namespace mixt::cuda
