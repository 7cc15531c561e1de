// The start of every CUDA test program that needs a GPU: it skips (exit 77, which meson
// reports as SKIP) only when the machine has no GPU. On a machine that has one (the
// NVIDIA driver's /dev/nvidiactl exists, or MIXT_REQUIRE_GPU=1) a CUDA that cannot
// start is a failure, so a broken driver or runtime never passes as a skip.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include <sys/stat.h>

#include <mixt/runtime/cuda.h>

namespace mixt::testing {

// True when this machine should have a usable GPU.
inline bool gpu_expected() {
  const char* require = std::getenv("MIXT_REQUIRE_GPU");
  if (require && std::strcmp(require, "1") == 0) return true;
  struct stat st;
  return stat("/dev/nvidiactl", &st) == 0;
}

// -1 when CUDA is available (run the checks); otherwise the exit status to return:
// 77 (skip) without a GPU, 1 (fail) when one is expected. Prints which and why.
inline int cuda_unavailable_status(const char* program) {
  if (cuda::is_available()) return -1;
  const std::string why = cuda::unavailable_reason();
  if (gpu_expected()) {
    std::printf("FAIL: %s: this machine has a GPU (/dev/nvidiactl or MIXT_REQUIRE_GPU=1) but CUDA is unavailable: %s\n",
                program, why.c_str());
    return 1;
  }
  std::printf("SKIP: %s: no GPU here: %s\n", program, why.c_str());
  return 77;
}

}  // namespace mixt::testing
