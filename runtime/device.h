// Device: a device type and an index (cpu, cuda:N).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace mixt {

enum class DeviceType : int8_t { CPU = 0, CUDA = 1 };
constexpr int kNumDeviceTypes = 2;

class Device {
 public:
  constexpr Device() = default;
  constexpr Device(DeviceType type, int index = 0) : type_(type), index_(static_cast<int8_t>(index)) {}
  // Parses "cpu", "cuda", "cuda:1"; throws mixt::Error otherwise.
  explicit Device(std::string_view spec);
  // The host.
  static constexpr Device cpu() { return Device(DeviceType::CPU, 0); }
  // CUDA device `index` (no check that it exists: see cuda::device_count()).
  static constexpr Device cuda(int index = 0) { return Device(DeviceType::CUDA, index); }

  constexpr DeviceType type() const { return type_; }
  constexpr int index() const { return index_; }
  constexpr bool is_cpu() const { return type_ == DeviceType::CPU; }
  constexpr bool is_cuda() const { return type_ == DeviceType::CUDA; }
  // "cpu" or "cuda:0".
  std::string str() const;
  constexpr bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  constexpr bool operator!=(const Device& o) const { return !(*this == o); }

 private:
  DeviceType type_ = DeviceType::CPU;
  int8_t index_ = 0;
};

// "cpu" or "cuda".
std::string_view device_type_name(DeviceType t);

}  // namespace mixt
