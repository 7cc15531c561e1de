#pragma once
#include <cstdint>
namespace mixt::bench {
// `mixt-bench io`: safetensors save/load throughput against plain file I/O, tensors/s
// for many small tensors, and the parse time of pathological headers.
int run_io(int argc, char** argv);
}  // namespace mixt::bench
