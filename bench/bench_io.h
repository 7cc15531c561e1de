#pragma once
#include "bench_cli.h"
namespace mixt::bench {
// `mixt-bench io`: safetensors save/load throughput against plain file I/O, tensors/s
// for many small tensors, and the parse time of pathological headers.
int run_io(const cli::Args& args);
// The declaration of `mixt-bench io` (its options and run_io).
cli::Command io_command();
}  // namespace mixt::bench
