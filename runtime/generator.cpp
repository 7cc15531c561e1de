#include <mixt/runtime/generator.h>

#include <charconv>

#include <mixt/runtime/check.h>
#include <mixt/runtime/io/state_load.h>

namespace mixt {
namespace {

constexpr const char* kLoadOp = "Generator::load_state_dict";

// Metadata entry `key` of `sd` as a decimal uint64 (the whole text); raises otherwise.
uint64_t meta_uint64(const io::StateDict& sd, const std::string& key) {
  const std::string& text = io::meta_text(sd, key, kLoadOp);
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  MIXT_CHECK(ec == std::errc() && end == text.data() + text.size(), kLoadOp,
             "'{}': '{}' is not an unsigned 64-bit integer", key, text);
  return v;
}

}  // namespace

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

io::StateDict Generator::state_dict() const {
  std::lock_guard lock(mutex_);
  io::StateDict sd;
  sd.metadata["seed"] = std::to_string(seed_);
  sd.metadata["offset"] = std::to_string(offset_);
  return sd;
}

void Generator::load_state_dict(const io::StateDict& sd) { stage_state_dict(sd).commit(); }

io::StagedLoad Generator::stage_state_dict(const io::StateDict& sd) {
  MIXT_CHECK(sd.tensors.empty(), kLoadOp, "a generator state holds no tensors, got '{}'", sd.tensors.front().first);
  for (const auto& [key, value] : sd.metadata)
    MIXT_CHECK(key == "seed" || key == "offset", kLoadOp, "unknown entry '{}' (a generator state has seed, offset)",
               key);
  const uint64_t seed = meta_uint64(sd, "seed"), offset = meta_uint64(sd, "offset");
  return io::StagedLoad([this, seed, offset] {
    std::lock_guard lock(mutex_);
    seed_ = seed;
    offset_ = offset;
  });
}

Generator& default_generator() {
  static Generator g;
  return g;
}

void manual_seed(uint64_t seed) { default_generator().manual_seed(seed); }

}  // namespace mixt
