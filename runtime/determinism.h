// set_deterministic(true): ask that the same inputs give the same bits, run after run,
// on one device. mixt's CPU kernels use no float atomics, and neither do the CUDA
// reductions, scans and col2im (fixed combine order). What the switch changes:
// gemm::algo_selection() reports Heuristic while it is on, so the GEMM engine never
// autotunes by timing (a timed winner can change between runs); and CUDA's scatter_add
// applies each line's writes in index order, each output position owned by one thread
// (Note [Ordered scatter]), instead of adding long lines with atomics. Off by default.
// Process-wide.
#pragma once

namespace mixt {

void set_deterministic(bool on);
bool is_deterministic();

}  // namespace mixt
