#pragma once
#include "bench_cli.h"
namespace mixt::bench {
// `mixt-bench train-step [--device cpu|cuda] [--precision f32,tf32,bf16,fp16] [--tokens T] [--dim D]
// [--layers L] [--steps N] [--json FILE]`: the MLP step of the GEMM targets against its GEMM floor.
int run_train_step(const cli::Args& args);
// The declaration of `mixt-bench train-step` (its options and run_train_step).
cli::Command train_step_command();
}  // namespace mixt::bench
