// The entry points that instrumented device code calls (Note [Access instrumentation]
// in docs/notes/emulated-cuda.md). An emulated build compiles every .cu translation
// unit with GCC's ThreadSanitizer instrumentation (-fsanitize=thread) but links no
// ThreadSanitizer runtime: these functions are its runtime. Outside a kernel they return
// at once (host code of the .cu files is instrumented too); inside one they hand the
// access to check_access (access_checks.cpp). The atomic entry points also perform
// the atomic operation, since the instrumentation replaced it by the call.
#include <cstddef>
#include <cstdint>

#include <mixt/kernels/cuda/emulated/access_checks.h>

namespace {

using mixt::cuda::emulated::AccessKind;
using mixt::cuda::emulated::check_access;
using mixt::cuda::emulated::t_kernel_access;

inline void seen(const volatile void* p, size_t bytes, AccessKind kind, const void* pc) {
  auto* a = t_kernel_access;
  if (a == nullptr) return;
  // The thread's own stack (locals whose address escaped) is the commonest case.
  if (reinterpret_cast<uintptr_t>(p) - a->stack_lo < a->stack_bytes) return;
  check_access(*a, const_cast<const void*>(p), bytes, kind, pc);
}

}  // namespace

#define MIXT_PC __builtin_return_address(0)

extern "C" {

// ---- plain loads and stores ----
#define MIXT_ACCESS_HOOKS(N)                                                          \
  void __tsan_read##N(void* p) { seen(p, N, AccessKind::Read, MIXT_PC); }             \
  void __tsan_write##N(void* p) { seen(p, N, AccessKind::Write, MIXT_PC); }           \
  void __tsan_unaligned_read##N(void* p) { seen(p, N, AccessKind::Read, MIXT_PC); }   \
  void __tsan_unaligned_write##N(void* p) { seen(p, N, AccessKind::Write, MIXT_PC); } \
  void __tsan_volatile_read##N(void* p) { seen(p, N, AccessKind::Read, MIXT_PC); }    \
  void __tsan_volatile_write##N(void* p) { seen(p, N, AccessKind::Write, MIXT_PC); }
MIXT_ACCESS_HOOKS(1)
MIXT_ACCESS_HOOKS(2)
MIXT_ACCESS_HOOKS(4)
MIXT_ACCESS_HOOKS(8)
MIXT_ACCESS_HOOKS(16)
#undef MIXT_ACCESS_HOOKS

void __tsan_read_range(void* p, unsigned long bytes) { seen(p, bytes, AccessKind::Read, MIXT_PC); }
void __tsan_write_range(void* p, unsigned long bytes) { seen(p, bytes, AccessKind::Write, MIXT_PC); }

// ---- what the instrumentation calls besides accesses (nothing to do here) ----
void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
void __tsan_vptr_update(void**, void*) {}
void __tsan_vptr_read(void**) {}

// ---- atomics: the operation itself (sequentially consistent), then the check ----
// GCC passes the memory order as an int; every operation here is seq_cst, which is at
// least as strong as any order asked for.
#define MIXT_ATOMIC_HOOKS(N, T)                                                                    \
  T __tsan_atomic##N##_load(const volatile T* p, int) {                                            \
    seen(p, sizeof(T), AccessKind::Read, MIXT_PC);                                                 \
    return __atomic_load_n(p, __ATOMIC_SEQ_CST);                                                   \
  }                                                                                                \
  void __tsan_atomic##N##_store(volatile T* p, T v, int) {                                         \
    seen(p, sizeof(T), AccessKind::Write, MIXT_PC);                                                \
    __atomic_store_n(p, v, __ATOMIC_SEQ_CST);                                                      \
  }                                                                                                \
  T __tsan_atomic##N##_exchange(volatile T* p, T v, int) {                                         \
    seen(p, sizeof(T), AccessKind::Atomic, MIXT_PC);                                               \
    return __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST);                                            \
  }                                                                                                \
  T __tsan_atomic##N##_fetch_add(volatile T* p, T v, int) {                                        \
    seen(p, sizeof(T), AccessKind::Atomic, MIXT_PC);                                               \
    return __atomic_fetch_add(p, v, __ATOMIC_SEQ_CST);                                             \
  }                                                                                                \
  T __tsan_atomic##N##_fetch_sub(volatile T* p, T v, int) {                                        \
    seen(p, sizeof(T), AccessKind::Atomic, MIXT_PC);                                               \
    return __atomic_fetch_sub(p, v, __ATOMIC_SEQ_CST);                                             \
  }                                                                                                \
  T __tsan_atomic##N##_fetch_and(volatile T* p, T v, int) {                                        \
    seen(p, sizeof(T), AccessKind::Atomic, MIXT_PC);                                               \
    return __atomic_fetch_and(p, v, __ATOMIC_SEQ_CST);                                             \
  }                                                                                                \
  T __tsan_atomic##N##_fetch_or(volatile T* p, T v, int) {                                         \
    seen(p, sizeof(T), AccessKind::Atomic, MIXT_PC);                                               \
    return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST);                                              \
  }                                                                                                \
  T __tsan_atomic##N##_fetch_xor(volatile T* p, T v, int) {                                        \
    seen(p, sizeof(T), AccessKind::Atomic, MIXT_PC);                                               \
    return __atomic_fetch_xor(p, v, __ATOMIC_SEQ_CST);                                             \
  }                                                                                                \
  T __tsan_atomic##N##_fetch_nand(volatile T* p, T v, int) {                                       \
    seen(p, sizeof(T), AccessKind::Atomic, MIXT_PC);                                               \
    return __atomic_fetch_nand(p, v, __ATOMIC_SEQ_CST);                                            \
  }                                                                                                \
  int __tsan_atomic##N##_compare_exchange_strong(volatile T* p, T* expected, T v, int, int) {      \
    seen(p, sizeof(T), AccessKind::Atomic, MIXT_PC);                                               \
    return __atomic_compare_exchange_n(p, expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); \
  }                                                                                                \
  int __tsan_atomic##N##_compare_exchange_weak(volatile T* p, T* expected, T v, int, int) {        \
    seen(p, sizeof(T), AccessKind::Atomic, MIXT_PC);                                               \
    return __atomic_compare_exchange_n(p, expected, v, true, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);  \
  }                                                                                                \
  T __tsan_atomic##N##_compare_exchange_val(volatile T* p, T expected, T v, int, int) {            \
    seen(p, sizeof(T), AccessKind::Atomic, MIXT_PC);                                               \
    __atomic_compare_exchange_n(p, &expected, v, false, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);       \
    return expected;                                                                               \
  }
MIXT_ATOMIC_HOOKS(8, int8_t)
MIXT_ATOMIC_HOOKS(16, int16_t)
MIXT_ATOMIC_HOOKS(32, int32_t)
MIXT_ATOMIC_HOOKS(64, int64_t)
#undef MIXT_ATOMIC_HOOKS

void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) { __atomic_signal_fence(__ATOMIC_SEQ_CST); }

}  // extern "C"
