// The main of the multi-rank suites: every rank runs the same Catch2 session in
// the same order (the collectives of a test case match across ranks), inside the
// world group that mpirun (or a lone start, world size 1) gives.
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <mixt/distributed/world.h>

int main(int argc, char** argv) {
  // Short enough that a rank stuck on a failed peer ends the run within a minute.
  mixt::dist::init({.group = {.timeout = std::chrono::seconds(60)}});
  const int failed = Catch::Session().run(argc, argv);
  mixt::dist::finalize();
  return failed == 0 ? 0 : 1;
}
