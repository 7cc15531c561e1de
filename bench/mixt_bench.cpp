// mixt-bench: benchmark programs that print figures. Each subcommand declares its
// options (bench_cli.h); `mixt-bench --help` lists them, `mixt-bench <subcommand>
// --help` gives one's options.
//   dispatch   host cost of one dispatched op vs calling its kernel directly
//   train      one training step of a small MLP
//   policy     a device's autocast policy table
//   explain    explain over the demo model's forward
//   amp        the grad scaler's unscale + check and a full scaler step, vs memcpy
//   io         safetensors save/load vs plain file I/O, many small tensors, slow headers
//   gemm       GEMM GFLOP/s per shape and dtype against the BLAS called directly
//   train-step the MLP training step of the GEMM targets against its GEMMs alone, per precision
//   kernels    casts, elementwise, softmax/norm rows, fused AMP/AdamW in GB/s against the copy rate
#include <vector>

#include "bench_amp.h"
#include "bench_autocast.h"
#include "bench_cli.h"
#include "bench_dispatch.h"
#include "bench_gemm.h"
#include "bench_io.h"
#include "bench_kernels.h"
#include "bench_train.h"
#include "bench_train_step.h"

int main(int argc, char** argv) {
  using namespace mixt::bench;
  const std::vector<cli::Command> commands = {dispatch_command(), train_command(), policy_command(),
                                              explain_command(),  amp_command(),   io_command(),
                                              gemm_command(), kernels_command(), train_step_command()};
  return cli::run_main(commands, argc, argv);
}
