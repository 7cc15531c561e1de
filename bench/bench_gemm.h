#pragma once
#include "bench_cli.h"
namespace mixt::bench {
// `mixt-bench gemm`: mixt's GEMM against the BLAS called directly, per shape and dtype.
int run_gemm(const cli::Args& args);
// The declaration of `mixt-bench gemm`.
cli::Command gemm_command();
}  // namespace mixt::bench
