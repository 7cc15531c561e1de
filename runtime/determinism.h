// set_deterministic(true): the same inputs give the same bits, run after run, on one
// device. mixt's own kernels are deterministic already (fixed reduction trees, no float
// atomics, scatter_add without atomics, Note [Device-side errors]); the switch pins what
// would otherwise vary: the GEMM engine keeps cuBLASLt's heuristic choice (no
// autotuning by timing, whose winner can change between runs) and asks for algorithms
// without atomic split-K reductions. Off by default. Process-wide.
#pragma once

namespace mixt {

void set_deterministic(bool on);
bool is_deterministic();

}  // namespace mixt
