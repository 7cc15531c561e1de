// Generator: a counter-based Philox4x32-10 stream. The numbers a call draws
// depend only on (seed, offset), so CPU and CUDA kernels produce the same values.
// See Note [Philox streams].
#pragma once

#include <cstdint>
#include <mutex>

#include <mixt/runtime/device.h>

namespace mixt {
namespace io {
struct StateDict;
class StagedLoad;
}  // namespace io

class Generator {
 public:
  explicit Generator(uint64_t seed = 67280421310721ull) : seed_(seed) {}
  // Restarts the stream at `seed`, offset 0.
  void manual_seed(uint64_t seed);
  uint64_t seed() const;
  // Number of 128-bit Philox blocks consumed so far.
  uint64_t offset() const;
  void set_offset(uint64_t offset);
  // Reserves `blocks` consecutive blocks; returns (seed, first block offset).
  struct Reservation {
    uint64_t seed;
    uint64_t offset;
  };
  Reservation reserve(uint64_t blocks);

  // The stream's position: metadata "seed" and "offset" (decimal integers).
  io::StateDict state_dict() const;
  // Restores a state_dict(); a malformed one raises mixt::Error and changes nothing.
  void load_state_dict(const io::StateDict& sd);
  // Checks `sd` as load_state_dict does; nothing changes until the result is committed.
  io::StagedLoad stage_state_dict(const io::StateDict& sd);

 private:
  mutable std::mutex mutex_;
  uint64_t seed_;
  uint64_t offset_ = 0;
};

// The process-wide generator used when an op is given none.
Generator& default_generator();
// Seeds the default generator.
void manual_seed(uint64_t seed);

}  // namespace mixt
