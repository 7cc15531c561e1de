#pragma once
namespace mixt::bench {
// `mixt-bench dispatch`: prints ns/op dispatched vs direct and the overhead.
int run_dispatch(int argc, char** argv);
}  // namespace mixt::bench
