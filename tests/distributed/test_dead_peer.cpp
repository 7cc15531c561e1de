// A rank that exits in the middle of the job: the others must fail with the
// timeout error within the timeout, never hang. The last rank leaves without
// finalizing; every other rank times out in an all_reduce, checks the error and
// the time it took, and prints one PASS or FAIL line (dead_peer.sh counts them).
// Survivors leave with _exit too: MPI cannot finalize with a dead peer.
#include <chrono>
#include <cstdio>
#include <string>

#include <unistd.h>

#include <mixt/distributed/world.h>
#include <mixt/mixt.h>

using namespace mixt;

int main() {
  constexpr auto kTimeout = std::chrono::seconds(3);
  auto pg = dist::init({.group = {.timeout = kTimeout}});
  pg->barrier();  // everyone is up
  if (pg->size() < 2) {
    std::printf("dead-peer: needs at least 2 ranks, PASS (nothing to check)\n");
    return 0;
  }
  if (pg->rank() == pg->size() - 1) {
    std::fflush(stdout);
    _exit(0);  // dies without a word
  }
  Tensor t = ones({1000});
  const auto start = std::chrono::steady_clock::now();
  std::string verdict = "FAIL: no error";
  try {
    pg->all_reduce(t);
  } catch (const Error& e) {
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const std::string m = e.what();
    const bool names_timeout = m.find("timed out after 3000 ms") != std::string::npos;
    const bool in_time = s < 3.0 + 5.0;
    // The group refuses further work with the first failure's reason.
    bool refused_after = false;
    try {
      pg->all_reduce(t);
    } catch (const Error& again) {
      refused_after = std::string(again.what()).find("failed earlier") != std::string::npos;
    }
    verdict = names_timeout && in_time && refused_after
                  ? fmt::format("PASS ({:.1f} s)", s)
                  : fmt::format("FAIL ({:.1f} s, refused_after {}): {}", s, refused_after, m);
  }
  std::printf("dead-peer: rank %d %s\n", pg->rank(), verdict.c_str());
  std::fflush(stdout);
  _exit(0);
}
