// mixt-bench: benchmark programs that print figures. Subcommands:
//   dispatch   host cost of one dispatched op vs calling its kernel directly
//   train      one training step of a small MLP on the CPU
//   policy     a device's autocast policy table
//   explain    explain over the demo model's forward
//   amp        the grad scaler's unscale + check and a full scaler step, vs memcpy
//   io         safetensors save/load vs plain file I/O, many small tensors, slow headers
#include <cstdio>
#include <cstring>
#include <string>

#include "bench_amp.h"
#include "bench_autocast.h"
#include "bench_dispatch.h"
#include "bench_io.h"
#include "bench_train.h"

namespace {
void usage() {
  std::printf(
      "usage: mixt-bench <subcommand> [options]\n"
      "  dispatch [--iters N]   ns/op of add and mm on 4x4 CPU tensors, dispatched vs direct\n"
      "  train [--steps N] [--dim D] [--batch B] [--layers L]\n"
      "                         ms per training step of a small MLP on the CPU, peak memory\n"
      "  policy [cpu|cuda]      the autocast policy table of a device\n"
      "  explain [--json PATH]  explain over the demo model's forward under bf16 autocast\n"
      "  amp [--elements N] [--reps R]\n"
      "                         unscale + non-finite check over N float32 gradient elements in 200\n"
      "                         and 2000 tensors, and a full scaler step, in GB/s against memcpy\n"
      "  io [--mib M] [--small N] [--reps R] [--header-mb H] [--dir PATH] [--only large,small,headers]\n"
      "                         safetensors save/load of M MiB as a ratio of plain write/read, N small\n"
      "                         tensors in tensors/s, and the parse time of crafted headers\n");
}
}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "dispatch") return mixt::bench::run_dispatch(argc - 2, argv + 2);
    if (cmd == "train") return mixt::bench::run_train(argc - 2, argv + 2);
    if (cmd == "policy") return mixt::bench::run_policy(argc - 2, argv + 2);
    if (cmd == "explain") return mixt::bench::run_explain(argc - 2, argv + 2);
    if (cmd == "amp") return mixt::bench::run_amp(argc - 2, argv + 2);
    if (cmd == "io") return mixt::bench::run_io(argc - 2, argv + 2);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mixt-bench %s: %s\n", cmd.c_str(), e.what());
    return 1;
  }
  std::fprintf(stderr, "mixt-bench: unknown subcommand '%s'\n", cmd.c_str());
  usage();
  return 2;
}
