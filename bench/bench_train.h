#pragma once
#include "bench_cli.h"
namespace mixt::bench {
// `mixt-bench train`: ms per training step of a small MLP, and peak memory.
int run_train(const cli::Args& args);
// The declaration of `mixt-bench train` (its options and run_train).
cli::Command train_command();
}  // namespace mixt::bench
