// What the examples share so that, run as tests, they assert what they show: a
// private scratch directory for the files they write (tests run in parallel), a
// bit-for-bit comparison of saved states, and a check that fails the run.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>

#include <mixt/mixt.h>

namespace example {

// A fresh directory under the system's temporary directory, removed with its files at
// the end of the scope.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mixt-example-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw mixt::Error("example", "cannot create a scratch directory in " + tmpl);
    path_ = tmpl;
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  // The path of `name` inside the directory.
  std::string file(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

// "" when `a` and `b` hold the same names, metadata, dtypes, shapes and bytes; else
// the first difference.
inline std::string state_difference(const mixt::io::StateDict& a, const mixt::io::StateDict& b) {
  if (a.metadata != b.metadata) return "metadata differ";
  if (a.tensors.size() != b.tensors.size()) return "different numbers of tensors";
  for (size_t i = 0; i < a.tensors.size(); ++i) {
    const auto& [name, x] = a.tensors[i];
    const mixt::Tensor y = b.tensors[i].second;
    if (name != b.tensors[i].first) return "tensor " + name + " vs " + b.tensors[i].first;
    if (x.dtype() != y.dtype() || x.sizes() != y.sizes()) return name + ": " + x.describe() + " vs " + y.describe();
    const mixt::Tensor cx = x.cpu().contiguous(), cy = y.cpu().contiguous();
    if (std::memcmp(cx.data_ptr(), cy.data_ptr(), static_cast<size_t>(cx.nbytes())) != 0) return name + ": other bits";
  }
  return "";
}

// A copy of `sd` whose tensors no longer share memory with the object that made it.
inline mixt::io::StateDict snapshot(mixt::io::StateDict sd) {
  for (auto& [name, t] : sd.tensors) t = t.clone();
  return sd;
}

// Prints what failed and exits with status 1 unless `ok` (a scratch directory is left
// behind for inspection).
inline void require(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "example check failed: %s\n", what.c_str());
  std::exit(1);
}

// MIXT_EXAMPLE_DEVICE=cuda (tests/gpu/run.sh sets it) makes cuda:0 the default device of
// the main thread's factories before main() starts, so the examples run on the GPU
// unchanged (without a usable GPU they stop at once with exit status 1, saying why).
// Unset or "cpu": the CPU, as written. Any other value stops the example.
inline const bool kDeviceFromEnvironment = [] {
  const char* name = std::getenv("MIXT_EXAMPLE_DEVICE");
  if (!name || std::strcmp(name, "cpu") == 0) return false;
  if (std::strcmp(name, "cuda") != 0) {
    std::fprintf(stderr, "MIXT_EXAMPLE_DEVICE must be cpu or cuda, not \"%s\"\n", name);
    std::exit(2);
  }
  if (!mixt::cuda::is_available()) {  // say why and stop, rather than fail at the first allocation
    std::fprintf(stderr, "MIXT_EXAMPLE_DEVICE=cuda, but CUDA is not available: %s\n",
                 mixt::cuda::unavailable_reason().c_str());
    std::exit(1);
  }
  static mixt::DefaultDeviceGuard guard(mixt::Device::cuda(0));  // for the whole run
  return true;
}();

}  // namespace example
