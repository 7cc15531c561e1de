#pragma once
namespace mixt::bench {
// `mixt-bench policy [cpu|cuda]`: prints a device's autocast policy table.
int run_policy(int argc, char** argv);
// `mixt-bench explain [--json PATH]`: explain over a transformer LM's forward under bf16 autocast.
int run_explain(int argc, char** argv);
}  // namespace mixt::bench
