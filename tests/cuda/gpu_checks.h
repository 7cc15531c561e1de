// The check counters of the CUDA test programs (own main, no Catch2): expect()
// records one check, group() runs a named block of them and prints whether it
// passed; expect_error() checks that a call raises mixt::Error; main() ends with "<program>: N checks, M failures", the line that
// tests/gpu/run.sh puts in its summary.
#pragma once

#include <cstdio>
#include <exception>
#include <functional>
#include <string>

#include <mixt/runtime/error.h>

namespace mixt::testing {

inline int g_checks = 0, g_failures = 0;

// Records one check; prints the first failures in detail.
inline void expect(bool ok, const std::string& what) {
  ++g_checks;
  if (ok) return;
  if (++g_failures <= 40) std::printf("FAIL: %s\n", what.c_str());
}

// Runs one group of checks; an unexpected exception counts as a failure.
inline void group(const char* name, const std::function<void()>& body) {
  const int before = g_failures;
  try {
    body();
  } catch (const std::exception& e) {
    expect(false, std::string(name) + ": unexpected exception: " + e.what());
  }
  std::printf("%-52s %s\n", name, g_failures == before ? "ok" : "FAILED");
}

// Records one check: `f` raises mixt::Error (another exception is a failure, said as such).
inline void expect_error(const std::string& what, const std::function<void()>& f) {
  try {
    f();
  } catch (const Error&) {
    expect(true, what);
    return;
  } catch (const std::exception& e) {
    expect(false, what + ": raised a non-mixt exception: " + e.what());
    return;
  }
  expect(false, what + ": expected mixt::Error");
}

}  // namespace mixt::testing
