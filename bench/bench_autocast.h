#pragma once
#include "bench_cli.h"
namespace mixt::bench {
// `mixt-bench policy [--device cpu|cuda] [--json FILE]`: prints a device's autocast policy table.
int run_policy(const cli::Args& args);
// `mixt-bench explain [--device cpu|cuda] [--rehearse] [--json FILE]`: explain over a transformer
// LM's forward under CPU bf16 autocast, or CUDA fp16 autocast (rehearsed on the CPU without a GPU).
int run_explain(const cli::Args& args);
// The declarations of `mixt-bench policy` and `mixt-bench explain`.
cli::Command policy_command();
cli::Command explain_command();
}  // namespace mixt::bench
