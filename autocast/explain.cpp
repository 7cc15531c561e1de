#include <mixt/autocast/explain.h>

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <mixt/dispatcher/tls.h>
#include <mixt/runtime/cuda.h>
#include <mixt/runtime/io/atomic_file.h>
#include <mixt/runtime/ops/ops.h>

namespace mixt::autocast {
namespace {

thread_local Explain* t_active = nullptr;

// A device as the report shows it: the emulated CUDA device says so ("cuda(emu)").
std::string shown_device(DeviceType t) {
  if (t == DeviceType::CUDA && cuda::is_emulated()) return "cuda(emu)";
  return std::string(device_type_name(t));
}

std::string dtype_list(const std::vector<ScalarType>& v) {
  std::string s;
  for (ScalarType t : v) s += (s.empty() ? "" : ",") + std::string(dtype_name(t));
  return s;
}

// The output dtypes, with the device where it is not the op's ("bool@cpu": a copy to the host).
std::string shown_outputs(const ExplainRecord& r) {
  std::string s = dtype_list(r.outputs);
  if (!r.outputs.empty() && r.output_device != r.device) s += "@" + std::string(device_type_name(r.output_device));
  return s;
}

}  // namespace

// A rehearsed policy shows as "cpu<cuda": cpu tensors under CUDA's rules.
std::string device_label(DeviceType tensors, DeviceType policy) {
  if (policy == tensors) return shown_device(tensors);
  return fmt::format("{}<{}", shown_device(tensors), shown_device(policy));
}

namespace detail {
Explain* active_explain() { return t_active; }
Explain* swap_active_explain(Explain* e) {
  Explain* previous = t_active;
  t_active = e;
  return previous;
}
}  // namespace detail

Explain::Explain() : previous_(t_active), saved_excluded_(tls_dispatch_keys.excluded) {
  t_active = this;
  detail::add_observer(+1);
}

Explain::~Explain() {
  t_active = previous_;
  detail::add_observer(-1);
  tls_dispatch_keys.excluded = saved_excluded_;
}

size_t Explain::begin(ExplainRecord r) {
  r.depth = static_cast<int>(open_.size());
  records_.push_back(std::move(r));
  open_.push_back(records_.size() - 1);
  return records_.size() - 1;
}

void Explain::end() {
  if (!open_.empty()) open_.pop_back();
}

void Explain::track(const std::vector<std::pair<std::string, Tensor>>& named) {
  for (const auto& [name, t] : named) params_.push_back({name, t, 0, 0, ScalarType::Undefined});
}

void Explain::note_use(const Tensor& t, ScalarType cast_to) {
  for (ParameterUse& p : params_) {
    if (!p.param.is_same(t)) continue;
    if (cast_to == kBFloat16 || cast_to == kFloat16) {
      ++p.low_uses;
      p.low_dtype = cast_to;
    } else {
      ++p.other_uses;
    }
  }
}

std::string Explain::parameter_table() const {
  std::string out = fmt::format("{:<36} {:<10} {:>12} {:>9} {:>9}\n", "parameter", "stored as", "bytes", "low uses",
                                "other");
  int64_t total = 0;
  for (const ParameterUse& p : params_) {
    out += fmt::format("{:<36} {:<10} {:>12} {:>9} {:>9}\n", p.name, dtype_name(p.param.dtype()), p.param.nbytes(),
                       p.low_uses, p.other_uses);
    total += p.param.nbytes();
  }
  out += fmt::format("{} parameters, {} bytes stored\n", params_.size(), total);
  return out;
}

int64_t compact_frozen_parameters(const Explain& ex) {
  int64_t saved = 0;
  for (const ParameterUse& p : ex.parameter_uses()) {
    Tensor t = p.param;
    if (t.requires_grad() || t.dtype() != kFloat32 || p.low_uses == 0 || p.other_uses > 0) continue;
    const int64_t before = t.nbytes();
    t.set_data(to(t, p.low_dtype));
    saved += before - t.nbytes();
  }
  return saved;
}

int64_t Explain::casts() const {
  int64_t n = 0;
  for (const auto& r : records_) n += static_cast<int64_t>(r.casts.size());
  return n;
}

int64_t Explain::cache_hits() const {
  int64_t n = 0;
  for (const auto& r : records_)
    for (const auto& c : r.casts) n += c.cache_hit;
  return n;
}

int64_t Explain::bytes_cast() const {
  int64_t n = 0;
  for (const auto& r : records_)
    for (const auto& c : r.casts) n += c.bytes;
  return n;
}

std::string Explain::table() const {
  std::string out = fmt::format("{:<34} {:<10} {:<15} {:<14} {:<28} {:<14} {}\n", "op", "dev", "rule", "policy",
                                "inputs", "outputs", "casts");
  for (const ExplainRecord& r : records_) {
    std::string casts;
    for (const CastRecord& c : r.casts)
      casts += fmt::format("{}in{}:{}->{}{} ", casts.empty() ? "" : "", c.input, dtype_name(c.from), dtype_name(c.to),
                           c.cache_hit ? " (reused from cache)"
                           : c.cached  ? fmt::format(" (stored in cache, {} B)", c.bytes)
                                       : fmt::format(" ({} B)", c.bytes));
    if (r.set_dtype != ScalarType::Undefined) casts += fmt::format("dtype={} ", dtype_name(r.set_dtype));
    if (!r.error.empty()) casts += "ERROR: " + r.error;
    out += fmt::format("{:<34} {:<10} {:<15} {:<14} {:<28} {:<14} {}\n",
                       std::string(static_cast<size_t>(2 * r.depth), ' ') + r.op,
                       device_label(r.device, r.policy_device), rule_name(r.rule),
                       policy_name(r.policy), dtype_list(r.inputs), shown_outputs(r), casts);
  }
  // A cast either made a copy and stored it in the cast cache, reused a stored one, or
  // bypassed the cache (not a parameter, or the cache is off).
  int64_t stored = 0;
  for (const ExplainRecord& r : records_)
    for (const CastRecord& c : r.casts) stored += c.cached && !c.cache_hit;
  out += fmt::format("{} ops, {} casts ({} stored in the cast cache, {} reused from it), {} bytes cast\n",
                     records_.size(), casts(), stored, cache_hits(), bytes_cast());
  const bool on_cuda = std::any_of(records_.begin(), records_.end(),
                                   [](const ExplainRecord& r) { return r.device == DeviceType::CUDA; });
  if (on_cuda && cuda::is_emulated())
    out += "cuda(emu): the emulated CUDA device (mixt's CUDA code run on the CPU; docs/emulated-cuda.md)\n";
  return out;
}

std::string Explain::json() const {
  nlohmann::json ops = nlohmann::json::array();
  for (const ExplainRecord& r : records_) {
    nlohmann::json casts = nlohmann::json::array();
    for (const CastRecord& c : r.casts)
      casts.push_back({{"input", c.input}, {"from", dtype_name(c.from)}, {"to", dtype_name(c.to)},
                       {"cached", c.cached}, {"cache_hit", c.cache_hit}, {"bytes", c.bytes}});
    nlohmann::json in = nlohmann::json::array(), out = nlohmann::json::array();
    for (ScalarType t : r.inputs) in.push_back(dtype_name(t));
    for (ScalarType t : r.outputs) out.push_back(dtype_name(t));
    nlohmann::json rec = {{"op", r.op},       {"device", device_type_name(r.device)},
                          {"policy_device", device_type_name(r.policy_device)}, {"rule", rule_name(r.rule)},
                          {"policy", policy_name(r.policy)}, {"inputs", in}, {"outputs", out},
                          {"casts", casts},   {"depth", r.depth}};
    if (!r.outputs.empty() && r.output_device != r.device) rec["output_device"] = device_type_name(r.output_device);
    if (r.set_dtype != ScalarType::Undefined) rec["set_dtype"] = dtype_name(r.set_dtype);
    if (r.predicted != ScalarType::Undefined) rec["predicted_output"] = dtype_name(r.predicted);
    if (!r.error.empty()) rec["error"] = r.error;
    ops.push_back(rec);
  }
  nlohmann::json doc = {{"ops", ops}, {"emulated_cuda", cuda::is_emulated()},
                        {"totals", {{"ops", records_.size()}, {"casts", casts()}, {"cache_hits", cache_hits()},
                                    {"bytes_cast", bytes_cast()}}}};
  return doc.dump(2);
}

void Explain::write_json(const std::string& path) const { io::write_file_atomic(path, json()); }

}  // namespace mixt::autocast
