// Setup shared by every backend's elementwise kernels: device and dtype checks,
// broadcasting, the result type, casting inputs to the compute dtype, and the
// output (fresh, or the caller's for in-place and out= calls).
#pragma once

#include <mixt/dispatcher/op_call.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt {

enum class ResultRule : uint8_t {
  Promote,         // compute and output in the promoted dtype
  PromoteToFloat,  // as Promote, but integer/bool results become float32
  Compare,         // compute in the promoted dtype, output bool
  Logical,         // inputs read as bool, output bool
  Predicate,       // compute in the input dtype, output bool (isnan, ...)
};

// What an elementwise op computes, before any data is touched: where, in which dtypes,
// and the result's shape. Also the op's meta function (kernels/meta/elementwise.cpp).
struct ElementwisePlan {
  Device device;          // where the computation runs
  Shape shape;            // broadcast shape (the output's)
  ScalarType compute;     // dtype inputs are read in
  ScalarType out_dtype;   // the result's dtype
};

struct Elementwise {
  int n = 0;                 // number of inputs
  Device device;             // where the computation runs
  Shape shape;               // broadcast shape (the output's)
  ScalarType compute;        // dtype inputs are read in
  ScalarType out_dtype;      // dtype of `out`
  Tensor inputs[kMaxInputs]; // cast to `compute` (undefined where is_scalar)
  bool is_scalar[kMaxInputs] = {};
  Scalar scalars[kMaxInputs];  // values of scalar operands
  Tensor out;                // what the loop writes
  Tensor final_out;          // caller's output when `out` is a temporary
};

struct ElementwiseOptions {
  ResultRule rule = ResultRule::Promote;
  uint32_t allowed = dtypes::kAll;  // dtypes the kernel implements (compute dtype)
  bool keep_scalars = false;        // pass wrapped scalars as Scalars instead of tensors
};

// Validates the first `n` inputs of `call` (devices, result type, broadcasting, a given
// output) and plans the computation; reads no data.
ElementwisePlan plan_elementwise(const OpCall& call, int n, const ElementwiseOptions& options);
// Validates the first `n` inputs of `call` and prepares the loop's operands.
Elementwise prepare_elementwise(OpCall& call, int n, const ElementwiseOptions& options);
// Copies a temporary result into the caller's output and sets call.out[0].
void finish_elementwise(OpCall& call, Elementwise& e);

}  // namespace mixt
