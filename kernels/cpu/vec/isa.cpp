// Instruction-set detection and choice for the vector kernels (isa.h).
#include <mixt/kernels/cpu/vec/isa.h>

#include <atomic>
#include <cstdlib>
#include <string>

#include <mixt/runtime/check.h>

namespace mixt::cpu::vec {
namespace {

constexpr const char* kNames[kIsaCount] = {"scalar", "sse4", "avx2", "avx512"};

// What MIXT_CPU_ISA asks for, read once: the Isa, or the error to raise.
struct EnvChoice {
  std::optional<Isa> isa;
  std::string error;  // non-empty: the variable is set to something unusable
};

EnvChoice read_env() {
  EnvChoice c;
  const char* value = std::getenv("MIXT_CPU_ISA");
  if (value == nullptr || *value == '\0') return c;
  try {
    const Isa isa = isa_from_name(value);
    if (isa_supported(isa))
      c.isa = isa;
    else
      c.error = fmt::format("'{}' is not supported by this CPU (it supports up to '{}')", value, isa_name(best_isa()));
  } catch (const Error& e) {
    c.error = e.message();
  }
  return c;
}

const EnvChoice& env_choice() {
  static const EnvChoice choice = read_env();
  return choice;
}

// -1: no forced Isa; else the forced Isa's value.
std::atomic<int> forced_isa{-1};

}  // namespace

const char* isa_name(Isa isa) { return kNames[static_cast<int>(isa)]; }

Isa isa_from_name(std::string_view name) {
  for (int i = 0; i < kIsaCount; ++i)
    if (name == kNames[i]) return static_cast<Isa>(i);
  MIXT_FAIL("MIXT_CPU_ISA", "unknown instruction set '{}' (expected scalar, sse4, avx2 or avx512)", name);
}

bool isa_supported(Isa isa) {
#if defined(__x86_64__) || defined(__i386__)
  // __builtin_cpu_supports also checks that the OS saves the AVX / AVX-512 registers.
  switch (isa) {
    case Isa::Scalar: return true;
    case Isa::Sse4: return __builtin_cpu_supports("sse4.2");
    case Isa::Avx2:
      return isa_supported(Isa::Sse4) && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
             __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("f16c");
    case Isa::Avx512:
      return isa_supported(Isa::Avx2) && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
             __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
  }
  return false;
#else
  return isa == Isa::Scalar;
#endif
}

Isa best_isa() {
  static const Isa best = [] {
    for (int i = kIsaCount - 1; i > 0; --i)
      if (isa_supported(static_cast<Isa>(i))) return static_cast<Isa>(i);
    return Isa::Scalar;
  }();
  return best;
}

Isa active_isa() {
  const int forced = forced_isa.load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<Isa>(forced);
  const EnvChoice& env = env_choice();
  if (!env.error.empty()) throw Error("MIXT_CPU_ISA", env.error);
  return env.isa ? *env.isa : best_isa();
}

void set_isa_for_testing(std::optional<Isa> isa) {
  if (isa) {
    MIXT_CHECK(isa_supported(*isa), "set_isa_for_testing", "instruction set '{}' is not supported by this CPU",
               isa_name(*isa));
    forced_isa.store(static_cast<int>(*isa), std::memory_order_relaxed);
  } else {
    forced_isa.store(-1, std::memory_order_relaxed);
  }
}

}  // namespace mixt::cpu::vec
