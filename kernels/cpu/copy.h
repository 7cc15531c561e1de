// The CPU copy routine, for kernels that need to fill one tensor from another
// without another dispatch.
#pragma once

#include <mixt/dispatcher/op_call.h>

namespace mixt::cpu {
// Copies `src` (broadcast, converted) into `dst`; errors are reported against `call`.
void copy_into(const Tensor& dst, const Tensor& src, const OpCall& call);
}  // namespace mixt::cpu
