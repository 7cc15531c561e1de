// The op-case table: for every op, how to build inputs in a given dtype, how to
// call it, which dtypes each backend supports, and how to judge the result:
// against an independent double reference (tests/support/reference*.h, plain
// loops that never call mixt) within a tolerance in ulps of the result's dtype
// (Note [Tolerances in ulps]), or by a custom check.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <mixt/mixt.h>
#include <mixt/runtime/dtype_visit.h>

#include "reference.h"
#include "ulps.h"

namespace mixt::testing {

// Inputs of one case. Bit i of `data` marks in[i] as a data operand, created in
// the tested dtype (the gradient checks differentiate these). Other inputs
// (indices, masks) keep their dtype. The reference sees every input's values
// as doubles (exact: they are the values the tested dtype holds).
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
  // The expected result in double, from the inputs' values (and the tested dtype `dt`).
  std::function<ref::Ref(const std::vector<ref::Ref>& in, ScalarType dt)> reference;
  // How far the result may lie from the reference (Note [Tolerances in ulps]).
  Tolerance tol;
  // When set, judges the result instead of the reference (random ops, empty).
  std::function<void(const Tensor& result, ScalarType dt)> check;

  // Sets the reference and its tolerance.
  OpCase& with(decltype(reference) f, Tolerance t = {}) {
    reference = std::move(f);
    tol = t;
    return *this;
  }
};

// The whole table.
const std::vector<OpCase>& op_cases();

// Ops declared as holes on a backend, with the reason (documented in op_support.md).
struct DeclaredHole {
  OpId op;
  const char* backend;
  const char* reason;
};

// Runs `c` for dtype `dt` on `dev`; returns "" on success or a description of
// the failure (values, dtype, a missing reference or an unexpected error).
std::string run_case(const OpCase& c, ScalarType dt, Device dev);

// Compares `got` with the reference `want` under `tol`; "" or the first mismatch.
std::string compare_with_reference(const Tensor& got, const ref::Ref& want, const Tolerance& tol);

// The markdown of docs/op_support.md for the table.
std::string op_support_markdown();

}  // namespace mixt::testing
