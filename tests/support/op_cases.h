// The op-case table: for every op, how to build inputs in a given dtype, how to
// call it, which dtypes each backend supports, and how to judge the result
// (against the same op run in float64 on the CPU, or by a custom check).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <mixt/mixt.h>
#include <mixt/runtime/dtype_visit.h>

namespace mixt::testing {

// Inputs of one case. Bit i of `data` marks in[i] as a data operand: it is
// created in the tested dtype and converted to float64 for the reference run.
// Other inputs (indices, masks) keep their dtype.
struct CaseInputs {
  std::vector<Tensor> in;
  uint32_t data = 0;
};

struct OpCase {
  std::string label;  // unique, e.g. "add/broadcast"
  OpId op;
  uint32_t cpu_dtypes = 0;   // dtypes the CPU kernel must support (all others must raise mixt::Error)
  uint32_t cuda_dtypes = 0;  // dtypes the CUDA kernel supports (0: a declared hole)
  // Inputs in `dt` on the CPU (the runner moves them to the backend).
  std::function<CaseInputs(ScalarType dt)> make;
  // Calls the op's front end. `dt`, `dev` are the tested dtype and device (factories use them).
  std::function<Tensor(const std::vector<Tensor>& in, ScalarType dt, Device dev)> run;
  // Expected result dtype for inputs of dtype `dt` (default: dt).
  std::function<ScalarType(ScalarType dt)> out_dtype;
  // When set, judges the result instead of the float64 reference (random ops, empty).
  std::function<void(const Tensor& result, ScalarType dt)> check;
  double tolerance_scale = 1.0;  // multiplies the per-dtype tolerance
  double magnitude = 1.0;        // absolute scale of the results (for cancellation-prone ops)
};

// The whole table.
const std::vector<OpCase>& op_cases();

// Tolerance (relative, also applied to `magnitude`) of results stored in `dt`.
double tolerance_for(ScalarType dt);

// Ops declared as holes on a backend, with the reason (documented in op_support.md).
struct DeclaredHole {
  OpId op;
  const char* backend;
  const char* reason;
};

// Runs `c` for dtype `dt` on `dev`; returns "" on success or a description of
// the failure (values, dtype or an unexpected error).
std::string run_case(const OpCase& c, ScalarType dt, Device dev);

// The markdown of docs/op_support.md for the table.
std::string op_support_markdown();

}  // namespace mixt::testing
