#pragma once
#include "bench_cli.h"
namespace mixt::bench {
// `mixt-bench kernels [--device cpu|cuda] [--small] [--reps R] [--json FILE]`: the memory-bound
// kernels (casts, elementwise, softmax/norm rows, fused unscale+check and AdamW) against the copy rate.
int run_kernels(const cli::Args& args);
// The declaration of `mixt-bench kernels` (its options and run_kernels).
cli::Command kernels_command();
}  // namespace mixt::bench
