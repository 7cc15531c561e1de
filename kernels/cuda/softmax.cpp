// softmax and log_softmax on CUDA: the CPU's checks (softmax.cpp); the input (converted
// to dtype= first when given) is made contiguous and seen as [outer, n, inner] around
// the dim; the device kernels (softmax.cu) follow the CPU's arithmetic.
#include <mixt/dispatcher/dispatch.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/kernels/common/reduce_meta.h>
#include <mixt/kernels/cuda/host.h>
#include <mixt/kernels/cuda/reduce_launch.h>
#include <mixt/kernels/cuda/register.h>
#include <mixt/kernels/cuda/stream.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::cuda {
namespace {

template <bool Log>
void softmax_kernel(OpCall& c, DispatchKeySet) {
  const Tensor& in = c.in[0];
  const ScalarType dt = c.attrs.dtype;
  MIXT_CHECK_OP(in.is_cuda(), c, "the CUDA kernel got a tensor on {}", in.device());
  check_softmax_dtypes(c, in.dtype(), dt);
  const Tensor x = contiguous(dt == ScalarType::Undefined || dt == in.dtype() ? in : in.to(dt));
  const int64_t dim = wrap_dim(c.attrs.get<attrs::Dim>().dim, x.dim(), op_name(c.op).data());
  SoftmaxArgs a;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const int64_t s = x.size(d);
    if (d < dim) a.outer *= s;
    else if (d == dim) a.n = s;
    else a.inner *= s;
  }
  Tensor out = make_empty(x.sizes(), x.dtype(), x.device());
  if (x.numel() > 0) {
    a.in = x.data_ptr();
    a.out = out.data_ptr();
    a.dtype = x.dtype();
    a.log = Log;
    const int index = x.device().index();
    DeviceGuard guard(index, op_name(c.op).data());
    check(launch_softmax(a, current_native_stream(index)), op_name(c.op).data());
  }
  if (c.out[0].defined()) c.out[0].copy_(out);
  else c.out[0] = out;
}

}  // namespace

void register_softmax_kernels() {
  register_kernel(OpId::softmax, DispatchKey::CUDA, softmax_kernel<false>);
  register_kernel(OpId::log_softmax, DispatchKey::CUDA, softmax_kernel<true>);
}

}  // namespace mixt::cuda
