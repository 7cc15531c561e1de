#pragma once
#include "bench_cli.h"
namespace mixt::bench {
// `mixt-bench dispatch [--iters N] [--json FILE]`: ns/op dispatched vs direct and the overhead.
int run_dispatch(const cli::Args& args);
// The declaration of `mixt-bench dispatch` (its options and run_dispatch).
cli::Command dispatch_command();
}  // namespace mixt::bench
