// Portability macros shared by host and device code. No other includes.
#pragma once

#if defined(__CUDACC__)
#define MIXT_HD __host__ __device__
#define MIXT_DEVICE_CODE 1
#else
#define MIXT_HD
#endif

#if defined(__GNUC__)
#define MIXT_LIKELY(x) __builtin_expect(!!(x), 1)
#define MIXT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define MIXT_ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define MIXT_LIKELY(x) (x)
#define MIXT_UNLIKELY(x) (x)
#define MIXT_ALWAYS_INLINE inline
#endif
