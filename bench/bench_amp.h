#pragma once
#include "bench_cli.h"
namespace mixt::bench {
// `mixt-bench amp [--elements N] [--reps R] [--json FILE]`: unscale + check and a full scaler step, GB/s vs memcpy.
int run_amp(const cli::Args& args);
// The declaration of `mixt-bench amp` (its options and run_amp).
cli::Command amp_command();
}  // namespace mixt::bench
