// Checkpoints in the safetensors format (loadable by the Python safetensors
// library and other tools): an 8-byte little-endian header length N, N bytes of
// JSON describing each tensor ({"name": {"dtype", "shape", "data_offsets"}} plus
// "__metadata__"), then the raw little-endian data of every tensor.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include <mixt/runtime/device.h>
#include <mixt/runtime/io/state_dict.h>

namespace mixt::io {

// Largest JSON header a loader accepts (as the reference implementation).
constexpr uint64_t kMaxSafetensorsHeader = 100'000'000;

// Writes `dict` to `path` atomically (see write_file_atomic). Non-contiguous and
// CUDA tensors are saved as contiguous host copies; dict.metadata becomes __metadata__.
void save_safetensors(const std::string& path, const StateDict& dict);
// Reads a safetensors file; tensors are placed on `device`. Raises mixt::Error
// naming the file and the defect for any malformed or inconsistent file.
StateDict load_safetensors(const std::string& path, Device device = Device::cpu());

// The bytes save_safetensors writes.
std::string to_safetensors_bytes(const StateDict& dict);
// Parses safetensors bytes held in memory; errors name `source`.
StateDict from_safetensors_bytes(std::string_view bytes, Device device = Device::cpu(),
                                 std::string_view source = "<bytes>");

}  // namespace mixt::io
