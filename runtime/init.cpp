// The library's composition root: which backends and layers bind kernels, in which
// order. Runs once: on the first op, or when the application calls mixt::init().
#include <mixt/autocast/autocast.h>
#include <mixt/dispatcher/op.h>
#include <mixt/kernels/cpu/vec/isa.h>
#include <mixt/kernels/meta/register.h>
#include <mixt/runtime/autograd/autograd.h>

namespace mixt {

// Note [Registration and dispatch across threads]: the one registration of the built-in
// kernels. The function-local static is initialized once, by the first thread to get
// here, while every other caller waits (the language guarantees it); op_entry() calls
// this until the registration has published its table, and never again after.
void init() {
  [[maybe_unused]] static const bool registered = [] {
    // A bad MIXT_CPU_ISA raises here, from the first op, outside any parallel region: a
    // vector kernel asking inside an OpenMP region could only abort. Nothing is
    // registered, so every later op raises it again.
    (void)cpu::vec::active_isa();
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
