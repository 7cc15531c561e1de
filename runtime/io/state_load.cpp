// Strict readers of state dict entries. See Note [State loads].
#include <mixt/runtime/io/state_load.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <unordered_set>

#include <mixt/runtime/check.h>

namespace mixt::io {

const std::string& meta_text(const StateDict& sd, const std::string& key, const char* op) {
  auto it = sd.metadata.find(key);
  MIXT_CHECK(it != sd.metadata.end(), op, "the state dict has no '{}' entry", key);
  return it->second;
}

int64_t meta_int(const StateDict& sd, const std::string& key, const char* op) {
  const std::string& text = meta_text(sd, key, op);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  MIXT_CHECK(ec == std::errc() && end == text.data() + text.size(), op, "'{}': '{}' is not an integer", key, text);
  return v;
}

double meta_double(const StateDict& sd, const std::string& key, const char* op) {
  const std::string& text = meta_text(sd, key, op);
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  MIXT_CHECK(!text.empty() && end == text.c_str() + text.size(), op, "'{}': '{}' is not a number", key, text);
  return v;
}

bool meta_bool(const StateDict& sd, const std::string& key, const char* op) {
  const std::string& text = meta_text(sd, key, op);
  MIXT_CHECK(text == "true" || text == "false", op, "'{}': '{}' is not a bool", key, text);
  return text == "true";
}

int64_t exact_count(double v, int64_t max, const char* op, std::string_view key) {
  // 2^63 is exact in double; below it every integral double converts to int64 exactly.
  const bool integral = std::isfinite(v) && v >= 0 && v < 9223372036854775808.0 && v == std::floor(v);
  MIXT_CHECK(integral && static_cast<int64_t>(v) <= max, op, "'{}' must be an integer in [0, {}], got {}", key, max,
             v);
  return static_cast<int64_t>(v);
}

int64_t tensor_count(const Tensor& t, int64_t max, const char* op, std::string_view key) {
  MIXT_CHECK(t.defined() && t.numel() == 1 && t.dtype() != kBool, op,
             "'{}' must be a one-element integer or floating tensor, got {}", key,
             t.defined() ? t.describe() : "undefined");
  if (t.is_floating_point()) return exact_count(t.item<double>(), max, op, key);
  const int64_t v = t.item<int64_t>();
  MIXT_CHECK(v >= 0 && v <= max, op, "'{}' must be an integer in [0, {}], got {}", key, max, v);
  return v;
}

void check_unique_names(const StateDict& sd, const char* op) {
  std::unordered_set<std::string_view> seen;
  for (const auto& [name, t] : sd.tensors)
    MIXT_CHECK(seen.insert(name).second, op, "the state dict holds two tensors named '{}'", name);
}

}  // namespace mixt::io
