// The library's composition root: which backends and layers bind kernels, in which
// order. The dispatcher calls it once, on the first op (or mixt::init()).
#include <mixt/autocast/autocast.h>
#include <mixt/dispatcher/op.h>
#include <mixt/kernels/meta/register.h>
#include <mixt/runtime/autograd/autograd.h>

namespace mixt {

namespace detail {
void register_builtin_kernels() {
  register_common_kernels();
  register_cpu_kernels();
  register_cuda_kernels();
  register_meta_kernels();
  autograd::register_autograd_kernels();
  autocast::register_autocast_kernels();
}
}  // namespace detail

void init() { detail::ensure_kernels_registered(); }

}  // namespace mixt
