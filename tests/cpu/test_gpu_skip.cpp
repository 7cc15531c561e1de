// The rule of the CUDA test programs (tests/cuda/gpu_skip.h), checked on any machine:
// without CUDA they skip (77) only when no GPU is expected, and fail (1) when one is
// (MIXT_REQUIRE_GPU=1 or the NVIDIA driver's /dev/nvidiactl).
#include <cstdlib>
#include <sys/stat.h>

#include <catch2/catch.hpp>

#include <mixt/mixt.h>

#include "../cuda/gpu_skip.h"

using namespace mixt;

TEST_CASE("CUDA tests skip only where no GPU is expected", "[cuda][skip]") {
  if (cuda::is_available()) {
    CHECK(testing::cuda_unavailable_status("t") == -1);  // CUDA works: the checks run
    return;
  }
  struct stat st;
  const bool driver = stat("/dev/nvidiactl", &st) == 0;
  const char* saved = std::getenv("MIXT_REQUIRE_GPU");
  const std::string previous = saved ? saved : "";
  setenv("MIXT_REQUIRE_GPU", "1", 1);
  CHECK(testing::gpu_expected());
  CHECK(testing::cuda_unavailable_status("t") == 1);
  setenv("MIXT_REQUIRE_GPU", "0", 1);
  CHECK(testing::gpu_expected() == driver);
  CHECK(testing::cuda_unavailable_status("t") == (driver ? 1 : 77));
  unsetenv("MIXT_REQUIRE_GPU");
  CHECK(testing::cuda_unavailable_status("t") == (driver ? 1 : 77));
  if (saved) setenv("MIXT_REQUIRE_GPU", previous.c_str(), 1);
}
