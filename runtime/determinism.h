// set_deterministic(true): ask that the same inputs give the same bits, run after run,
// on one device. mixt's CPU kernels and the CUDA kernels written so far use no float
// atomics. What the switch changes today: gemm::algo_selection() reports Heuristic
// while it is on, so the GEMM engine never autotunes by timing (a timed winner can change
// between runs). Off by default. Process-wide.
#pragma once

namespace mixt {

void set_deterministic(bool on);
bool is_deterministic();

}  // namespace mixt
