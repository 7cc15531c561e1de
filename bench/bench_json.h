// The `--json FILE` output of mixt-bench: a command's figures as one JSON document.
#pragma once

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include <mixt/runtime/io/atomic_file.h>

namespace mixt::bench {

// The figures' JSON: keys stay in the order the command writes them.
using Json = nlohmann::ordered_json;

// Writes `figures` to `path` with the atomic file writer and says so; nothing when `path` is "".
inline void write_figures(const std::string& path, const Json& figures) {
  if (path.empty()) return;
  io::write_file_atomic(path, figures.dump(2) + "\n");
  std::printf("JSON written to %s\n", path.c_str());
}

}  // namespace mixt::bench
