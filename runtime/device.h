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
  // The largest CUDA device index a Device holds.
  static constexpr int kMaxCudaIndex = 127;
  // Device `index` of `type`: raises mixt::Error unless the index is 0 for the CPU, or in
  // [0, kMaxCudaIndex] for CUDA.
  constexpr Device(DeviceType type, int index = 0) : type_(type), index_(checked_index(type, index)) {}
  // Parses "cpu", "cuda", "cuda:1"; throws mixt::Error otherwise.
  explicit Device(std::string_view spec);
  // The host.
  static constexpr Device cpu() { return Device(DeviceType::CPU, 0); }
  // CUDA device `index` in [0, kMaxCudaIndex] (else mixt::Error; whether it exists is
  // checked where memory is allocated: see cuda::device_count()).
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
  // Raises mixt::Error naming the type and the index.
  [[noreturn]] static void throw_bad_index(DeviceType type, int index);
  static constexpr int8_t checked_index(DeviceType type, int index) {
    const bool ok = type == DeviceType::CPU    ? index == 0
                    : type == DeviceType::CUDA ? index >= 0 && index <= kMaxCudaIndex
                                               : false;
    if (!ok) throw_bad_index(type, index);
    return static_cast<int8_t>(index);
  }

  DeviceType type_ = DeviceType::CPU;
  int8_t index_ = 0;
};

// "cpu" or "cuda".
std::string_view device_type_name(DeviceType t);

}  // namespace mixt
