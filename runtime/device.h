// Device: a device type and an index (cpu, cuda:N, meta).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>
#include <string_view>

namespace mixt {

// Meta: tensors with sizes, strides and a dtype but no memory; ops on them compute
// only their results' shapes and dtypes (Note [Meta device]).
enum class DeviceType : int8_t { CPU = 0, CUDA = 1, Meta = 2 };
constexpr int kNumDeviceTypes = 3;

class Device {
 public:
  constexpr Device() = default;
  // The largest CUDA device index a Device holds.
  static constexpr int kMaxCudaIndex = 127;
  // Device `index` of `type`: raises mixt::Error unless the index is 0 for the CPU and
  // meta, or in [0, kMaxCudaIndex] for CUDA.
  constexpr Device(DeviceType type, int index = 0) : type_(type), index_(checked_index(type, index)) {}
  // Parses "cpu", "cuda", "cuda:1", "meta"; throws mixt::Error otherwise.
  explicit Device(std::string_view spec);
  // The host.
  static constexpr Device cpu() { return Device(DeviceType::CPU, 0); }
  // CUDA device `index` in [0, kMaxCudaIndex] (else mixt::Error; whether it exists is
  // checked where memory is allocated: see cuda::device_count()).
  static constexpr Device cuda(int index = 0) { return Device(DeviceType::CUDA, index); }
  // The meta device: shapes and dtypes without memory.
  static constexpr Device meta() { return Device(DeviceType::Meta, 0); }

  constexpr DeviceType type() const { return type_; }
  constexpr int index() const { return index_; }
  constexpr bool is_cpu() const { return type_ == DeviceType::CPU; }
  constexpr bool is_cuda() const { return type_ == DeviceType::CUDA; }
  constexpr bool is_meta() const { return type_ == DeviceType::Meta; }
  // "cpu", "cuda:0" or "meta".
  std::string str() const;
  constexpr bool operator==(const Device& o) const { return type_ == o.type_ && index_ == o.index_; }
  constexpr bool operator!=(const Device& o) const { return !(*this == o); }

 private:
  // Raises mixt::Error naming the type and the index.
  [[noreturn]] static void throw_bad_index(DeviceType type, int index);
  static constexpr int8_t checked_index(DeviceType type, int index) {
    const bool ok = type == DeviceType::CPU || type == DeviceType::Meta ? index == 0
                    : type == DeviceType::CUDA                          ? index >= 0 && index <= kMaxCudaIndex
                                                                        : false;
    if (!ok) throw_bad_index(type, index);
    return static_cast<int8_t>(index);
  }

  DeviceType type_ = DeviceType::CPU;
  int8_t index_ = 0;
};

// "cpu", "cuda" or "meta".
std::string_view device_type_name(DeviceType t);

// Print as device_type_name() and Device::str() do (fmt: <mixt/runtime/formatters.h>).
std::ostream& operator<<(std::ostream& os, DeviceType t);
std::ostream& operator<<(std::ostream& os, const Device& d);

namespace detail {
inline thread_local Device t_default_device = Device::cpu();
}  // namespace detail

// Where factories create tensors whose options name no device: the CPU, unless a
// DefaultDeviceGuard is alive on this thread.
inline Device default_device() { return detail::t_default_device; }

// Makes `device` the default of this thread's factories (and so of the modules that
// create their parameters with them) for its lifetime: build a model on
// Device::meta() to trace its shapes without memory.
class DefaultDeviceGuard {
 public:
  explicit DefaultDeviceGuard(Device device) : saved_(detail::t_default_device) { detail::t_default_device = device; }
  ~DefaultDeviceGuard() { detail::t_default_device = saved_; }
  DefaultDeviceGuard(const DefaultDeviceGuard&) = delete;
  DefaultDeviceGuard& operator=(const DefaultDeviceGuard&) = delete;

 private:
  Device saved_;
};

}  // namespace mixt
