// Dispatch keys and key sets. A key set is a bitset; the highest set key wins.
// See Note [Dispatch keys].
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string_view>

namespace mixt {

// Lowest to highest priority. Gaps leave room for more backends and layers.
enum class DispatchKey : uint8_t {
  CPU = 0,
  CUDA = 1,
  Meta = 2,  // shapes and dtypes only (Note [Meta device])
  // 3..7: further backends
  Autograd = 8,
  // 9..11: layers between autograd and autocast (e.g. tracing)
  AutocastCPU = 12,
  AutocastCUDA = 13,
  AutocastMeta = 14,  // autocast on meta tensors: a device's table rehearsed there (Note [Policy rehearsal])
  // 15: reserved
};
constexpr int kNumDispatchKeys = 16;
constexpr int kNumBackendKeys = 8;

// "CPU", "Autograd", ...
std::string_view dispatch_key_name(DispatchKey k);

class DispatchKeySet {
 public:
  constexpr DispatchKeySet() = default;
  constexpr DispatchKeySet(DispatchKey k) : bits_(uint16_t(1u << static_cast<int>(k))) {}
  constexpr static DispatchKeySet from_bits(uint16_t b) { DispatchKeySet s; s.bits_ = b; return s; }
  // Every key strictly below `k`.
  constexpr static DispatchKeySet below(DispatchKey k) { return from_bits(uint16_t((1u << static_cast<int>(k)) - 1u)); }
  // The backend keys.
  constexpr static DispatchKeySet backends() { return from_bits(uint16_t((1u << kNumBackendKeys) - 1u)); }

  constexpr uint16_t bits() const { return bits_; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr bool has(DispatchKey k) const { return (bits_ >> static_cast<int>(k)) & 1u; }
  // The highest-priority key in the set; the set must not be empty.
  constexpr DispatchKey highest() const { return static_cast<DispatchKey>(31 - __builtin_clz(bits_)); }

  constexpr DispatchKeySet operator|(DispatchKeySet o) const { return from_bits(bits_ | o.bits_); }
  constexpr DispatchKeySet operator&(DispatchKeySet o) const { return from_bits(bits_ & o.bits_); }
  // Set difference.
  constexpr DispatchKeySet operator-(DispatchKeySet o) const { return from_bits(uint16_t(bits_ & ~o.bits_)); }
  constexpr DispatchKeySet& operator|=(DispatchKeySet o) { bits_ |= o.bits_; return *this; }
  constexpr bool operator==(DispatchKeySet o) const { return bits_ == o.bits_; }
  constexpr bool operator!=(DispatchKeySet o) const { return bits_ != o.bits_; }

 private:
  uint16_t bits_ = 0;
};

// The autocast keys, which start excluded in every thread.
// Print a key's name and a set as "{CPU, Autograd, AutocastCPU}", lowest key first
// (fmt: <mixt/dispatcher/formatters.h>).
std::ostream& operator<<(std::ostream& os, DispatchKey k);
std::ostream& operator<<(std::ostream& os, DispatchKeySet s);

constexpr DispatchKeySet kAutocastKeys = DispatchKeySet(DispatchKey::AutocastCPU) |
                                         DispatchKeySet(DispatchKey::AutocastCUDA) |
                                         DispatchKeySet(DispatchKey::AutocastMeta);

}  // namespace mixt
