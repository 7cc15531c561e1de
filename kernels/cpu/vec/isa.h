// The instruction set the CPU's vector kernels run on, chosen once per process:
// the best one this CPU supports, lowered by the environment variable MIXT_CPU_ISA
// (scalar|sse4|avx2|avx512) or, in tests, by set_isa_for_testing. Vector kernels are
// compiled once per instruction set (Highway's foreach_target.h, see dispatch.h) and
// export an IsaTable: one function per Isa, picked here. See
// docs/notes/cpu-vectorisation.md, Note [CPU instruction sets].
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace mixt::cpu::vec {

// Ordered from weakest to strongest; each includes the ones before it.
enum class Isa : uint8_t {
  Scalar,  // portable C++ (Highway's EMU128: 128-bit vectors emulated in plain code)
  Sse4,    // SSE4.2
  Avx2,    // AVX2 with FMA, BMI2 and F16C
  Avx512,  // AVX-512 F, VL, DQ, BW
};
inline constexpr int kIsaCount = 4;

// "scalar", "sse4", "avx2", "avx512".
const char* isa_name(Isa isa);

// The Isa called `name`; throws mixt::Error (op "MIXT_CPU_ISA") for any other name.
Isa isa_from_name(std::string_view name);

// True when this CPU (and the OS, for the AVX register state) can run `isa`.
bool isa_supported(Isa isa);

// The strongest Isa this CPU supports.
Isa best_isa();

// The Isa the vector kernels use now: the forced one (set_isa_for_testing), else
// MIXT_CPU_ISA when set, else best_isa(). A bad MIXT_CPU_ISA (an unknown name, or an
// instruction set this CPU lacks) throws mixt::Error from every call, so the first
// vectorised op reports it; the process is never stopped.
Isa active_isa();

// Test hook: forces `isa` for the whole process (nullopt: back to the default
// choice). Throws mixt::Error when this CPU cannot run `isa`. Not for use while
// other threads run kernels.
void set_isa_for_testing(std::optional<Isa> isa);

// One function per Isa (entry i for Isa(i)); nullptr where that target was not
// compiled (a build whose baseline is already above it). get() picks the entry of
// active_isa(), or the nearest weaker one that exists.
template <class Fn>
struct IsaTable {
  Fn fn[kIsaCount];

  Fn get(Isa isa) const {
    for (int i = static_cast<int>(isa); i >= 0; --i)
      if (fn[i] != nullptr) return fn[i];
    for (int i = static_cast<int>(isa) + 1; i < kIsaCount; ++i)  // a build without the fallback
      if (fn[i] != nullptr) return fn[i];
    return nullptr;
  }
  Fn get() const { return get(active_isa()); }
};

}  // namespace mixt::cpu::vec
