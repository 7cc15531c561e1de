#pragma once
namespace mixt::bench {
// `mixt-bench amp [--elements N] [--reps R]`: unscale + check and a full scaler step, GB/s vs memcpy.
int run_amp(int argc, char** argv);
}  // namespace mixt::bench
