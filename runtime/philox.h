// Philox4x32-10 and the value transforms shared by CPU and CUDA random kernels.
// Element i of a call that reserved blocks from `offset` uses block offset + i/4
// (lane i%4) for 32-bit draws, offset + i/2 for 64-bit draws.
#pragma once

#include <cstdint>

#include <mixt/runtime/macros.h>

namespace mixt::philox {

struct Block {
  uint32_t v[4];
};

MIXT_HD inline uint32_t mulhilo(uint32_t a, uint32_t b, uint32_t* hi) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  *hi = static_cast<uint32_t>(p >> 32);
  return static_cast<uint32_t>(p);
}

// Philox4x32-10 of a full 128-bit counter under a 64-bit key (Random123's
// philox4x32 with 10 rounds; tests/cpu/test_random.cpp checks its published vectors).
MIXT_HD inline Block philox4x32_10(Block counter, uint32_t k0, uint32_t k1) {
  uint32_t c0 = counter.v[0], c1 = counter.v[1], c2 = counter.v[2], c3 = counter.v[3];
  for (int round = 0; round < 10; ++round) {
    uint32_t hi0, hi1;
    const uint32_t lo0 = mulhilo(0xD2511F53u, c0, &hi0);
    const uint32_t lo1 = mulhilo(0xCD9E8D57u, c2, &hi1);
    const uint32_t n0 = hi1 ^ c1 ^ k0, n1 = lo1, n2 = hi0 ^ c3 ^ k1, n3 = lo0;
    c0 = n0; c1 = n1; c2 = n2; c3 = n3;
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
  return Block{{c0, c1, c2, c3}};
}

// The 4x32 block for (seed, counter): the counter's high 64 bits are zero.
MIXT_HD inline Block generate(uint64_t seed, uint64_t counter) {
  return philox4x32_10(Block{{static_cast<uint32_t>(counter), static_cast<uint32_t>(counter >> 32), 0u, 0u}},
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// Uniform float in [0, 1) from 24 random bits.
MIXT_HD inline float uniform_float(uint32_t x) { return static_cast<float>(x >> 8) * (1.0f / 16777216.0f); }
// Uniform double in [0, 1) from 53 random bits.
MIXT_HD inline double uniform_double(uint32_t hi, uint32_t lo) {
  const uint64_t bits = (static_cast<uint64_t>(hi) << 21) ^ (lo >> 11);
  return static_cast<double>(bits & ((1ull << 53) - 1)) * (1.0 / 9007199254740992.0);
}

}  // namespace mixt::philox
