#include <mixt/runtime/generator.h>

namespace mixt {

void Generator::manual_seed(uint64_t seed) {
  std::lock_guard lock(mutex_);
  seed_ = seed;
  offset_ = 0;
}

uint64_t Generator::seed() const {
  std::lock_guard lock(mutex_);
  return seed_;
}

uint64_t Generator::offset() const {
  std::lock_guard lock(mutex_);
  return offset_;
}

void Generator::set_offset(uint64_t offset) {
  std::lock_guard lock(mutex_);
  offset_ = offset;
}

Generator::Reservation Generator::reserve(uint64_t blocks) {
  std::lock_guard lock(mutex_);
  Reservation r{seed_, offset_};
  offset_ += blocks;
  return r;
}

Generator& default_generator() {
  static Generator g;
  return g;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace mixt
