// Copies and conversions of host (CPU) tensors for kernels: the CPU backend's copy
// loop, called directly, so a kernel that widens, compacts or writes back an operand
// does not enter the dispatcher again (Note [Kernels do not re-enter the dispatcher]).
// Declared here so every backend's host-side code can use them; the CPU backend
// defines them (kernels/cpu/copy.cpp), beside its copy_ kernel, which runs the same loop.
#pragma once

#include <mixt/dispatcher/op_call.h>

namespace mixt::host {
// Copies `src` (broadcast, converted) into `dst`, both on the CPU; errors name `call`'s op.
void copy_into(const Tensor& dst, const Tensor& src, const OpCall& call);
// A new contiguous CPU tensor holding `t` in `dtype` (what clone and a converting `to` make).
Tensor copied(const Tensor& t, ScalarType dtype, const OpCall& call);
// `t` in `dtype`: `t` itself when it has that dtype, else a contiguous copy (as `to(t, dtype)`).
Tensor converted(const Tensor& t, ScalarType dtype, const OpCall& call);
// `t` itself when contiguous, else a contiguous copy (as `contiguous(t)`).
Tensor contiguous(const Tensor& t, const OpCall& call);
}  // namespace mixt::host
