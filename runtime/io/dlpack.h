// Zero-copy tensor exchange with other frameworks through DLPack (v0.6 ABI:
// DLManagedTensor). Include <dlpack/dlpack.h> to read the structs' fields.
#pragma once

#include <mixt/runtime/tensor.h>

struct DLManagedTensor;

namespace mixt::io {

// DLPack 0.6 has no bool type code; mixt uses the value later versions assign (kDLBool).
constexpr unsigned kDLBoolCode = 6;

// Exports `t` without copying. The returned tensor keeps mixt's storage alive until
// the consumer calls its deleter (exactly once). Shape and strides are in elements;
// float8 tensors (no DLPack 0.6 type code) raise mixt::Error.
DLManagedTensor* to_dlpack(const Tensor& t);
// Wraps the memory of `managed` without copying; the producer's deleter runs when the
// last view of the result dies. On error (null pointers, unsupported dtype, lanes,
// device, negative sizes or strides) raises mixt::Error and leaves `managed` to the caller.
Tensor from_dlpack(DLManagedTensor* managed);

}  // namespace mixt::io
