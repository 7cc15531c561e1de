// The `--json FILE` output of mixt-bench: a command's figures as one JSON document.
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include <mixt/runtime/cuda.h>
#include <mixt/runtime/io/atomic_file.h>

namespace mixt::bench {

// The figures' JSON: keys stay in the order the command writes them.
using Json = nlohmann::ordered_json;

// Writes `figures` to `path` with the atomic file writer and says so; nothing when `path` is "".
// On an emulated-CUDA build the document says so ("emulated_cuda": true): CUDA figures
// from it are the CPU's, never a GPU's.
inline void write_figures(const std::string& path, const Json& figures) {
  if (path.empty()) return;
  Json doc = figures;
  if (cuda::is_emulated()) doc["emulated_cuda"] = true;
  io::write_file_atomic(path, doc.dump(2) + "\n");
  std::printf("JSON written to %s\n", path.c_str());
}

}  // namespace mixt::bench
