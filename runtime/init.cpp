// The library's composition root: which backends and layers bind kernels, in which
// order. Runs once: on the first op, or when the application calls mixt::init().
#include <mixt/autocast/autocast.h>
#include <mixt/dispatcher/op.h>
#include <mixt/kernels/meta/register.h>
#include <mixt/runtime/autograd/autograd.h>

namespace mixt {

// Note [Registration and dispatch across threads]: the one registration of the built-in
// kernels. The function-local static is initialized once, by the first thread to get
// here, while every other caller waits (the language guarantees it); op_entry() calls
// this until the registration has published its table, and never again after.
void init() {
  [[maybe_unused]] static const bool registered = [] {
    detail::BuiltinRegistration registration;
    register_common_kernels();
    register_cpu_kernels();
    register_cuda_kernels();
    register_meta_kernels();
    autograd::register_autograd_kernels();
    autocast::register_autocast_kernels();
    registration.publish();
    return true;
  }();
}

}  // namespace mixt
