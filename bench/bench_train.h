#pragma once
namespace mixt::bench {
// `mixt-bench train`: ms per training step of a small MLP on the CPU, and peak memory.
int run_train(int argc, char** argv);
}  // namespace mixt::bench
