// softmax and log_softmax on CUDA: the CPU's checks (softmax.cpp); the input (converted
// to dtype= first when given) is made contiguous and seen as [outer, n, inner] around
// the dim; the device kernels (softmax.cu) follow the CPU's arithmetic. The fused
// backward kernels take the forward's output and its gradient the same way.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/op_checks.h>
#include <mixt/kernels/common/reduce_meta.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/reduce_launch.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cuda {
namespace {

// The launch arguments of a contiguous x seen as [outer, n, inner] around `dim`.
SoftmaxArgs lines_of(const Tensor& x, int64_t dim, bool log) {
  SoftmaxArgs a;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const int64_t s = x.size(d);
    if (d < dim) a.outer *= s;
    else if (d == dim) a.n = s;
    else a.inner *= s;
  }
  a.dtype = x.dtype();
  a.log = log;
  return a;
}

// Launches `launch(args)` on x's device and current stream (nothing for an empty tensor),
// then hands `out` back as the call's output.
template <class Launch>
void run(OpCall& c, const Tensor& x, const Tensor& out, Launch&& launch) {
  if (x.numel() > 0) {
    const int index = x.device().index();
    DeviceGuard guard(index, op_name(c.op).data());
    check(launch(current_native_stream(index)), op_name(c.op).data());
  }
  if (c.out[0].defined()) c.out[0].copy_(out);
  else c.out[0] = out;
}

template <bool Log>
void softmax_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& in = c.in[0];
  const ScalarType dt = c.attrs.dtype;
  MIXT_CHECK_OP(in.is_cuda(), c, "the CUDA kernel got a tensor on {}", in.device());
  check_softmax_dtypes(c, in.dtype(), dt);
  const Tensor x = contiguous(dt == ScalarType::Undefined || dt == in.dtype() ? in : in.to(dt));
  SoftmaxArgs a = lines_of(x, wrap_dim(c.attrs.get<attrs::Dim>().dim, x.dim(), op_name(c.op).data()), Log);
  Tensor out = make_empty(x.sizes(), x.dtype(), x.device());
  a.in = x.data_ptr();
  a.out = out.data_ptr();
  run(c, x, out, [&](cudaStream_t s) { return launch_softmax(a, s); });
}

// softmax_backward / log_softmax_backward (Note [Fused backward ops]).
template <bool Log>
void softmax_backward_kernel(OpCall& c, DispatchKeySet) {
  const int64_t dim = check_softmax_backward(c);
  MIXT_CHECK_OP(c.in[1].is_cuda(), c, "the CUDA kernel got a tensor on {}", c.in[1].device());
  const Tensor g = contiguous(c.in[0]), y = contiguous(c.in[1]);
  SoftmaxArgs a = lines_of(y, dim, Log);
  Tensor out = make_empty(y.sizes(), y.dtype(), y.device());
  a.in = y.data_ptr();
  a.grad = g.data_ptr();
  a.out = out.data_ptr();
  run(c, y, out, [&](cudaStream_t s) { return launch_softmax_backward(a, s); });
}

}  // namespace

void register_softmax_kernels() {
  register_kernel(OpId::softmax, DispatchKey::CUDA, softmax_kernel<false>);
  register_kernel(OpId::log_softmax, DispatchKey::CUDA, softmax_kernel<true>);
  register_kernel(OpId::softmax_backward, DispatchKey::CUDA, softmax_backward_kernel<false>);
  register_kernel(OpId::log_softmax_backward, DispatchKey::CUDA, softmax_backward_kernel<true>);
}

}  // namespace mixt::cuda
