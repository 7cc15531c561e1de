// Checkpoints of a training run: parts round trip, a run with dropout resumed from a
// checkpoint reaches bit-identical parameters (the generator's state travels with it),
// and bad files raise, changing nothing.
#include <cmath>
#include <cstdio>
#include <fstream>

#include <catch2/catch.hpp>

#include <mixt/mixt.h>

#include "test_util.h"

using namespace mixt;
using namespace mixt::testing;
using Catch::Contains;

namespace {

struct Run {
  std::unique_ptr<nn::Sequential> model;
  std::unique_ptr<optim::AdamW> opt;
  std::unique_ptr<optim::WarmupCosine> schedule;
};

Run make_run() {
  manual_seed(3);
  Run r;
  // Dropout draws from the default generator: a resume must restore its position.
  r.model = std::make_unique<nn::Sequential>(nn::Linear(6, 16), nn::GELU(), nn::Dropout(0.3), nn::LayerNorm(Shape{16}),
                                             nn::Linear(16, 3));
  r.opt = std::make_unique<optim::AdamW>(r.model->parameters(), optim::AdamWOptions{.lr = 1e-2});
  r.schedule = std::make_unique<optim::WarmupCosine>(*r.opt, 3, 20, 0.1);
  return r;
}

// Step `i` of the run: a deterministic batch, a loss, backward, an update.
void train_step(Run& r, int64_t i) {
  Generator g(1000 + static_cast<uint64_t>(i));
  const Tensor x = randn({8, 6}, {}, &g);
  const Tensor y = randint(0, 3, {8}, {}, &g);
  r.opt->zero_grad();
  nn::functional::cross_entropy(r.model->forward(x), y).backward();
  r.opt->step();
  r.schedule->step();
}

std::string temp_path(const char* name) { return std::string("mixt_test_") + name + ".safetensors"; }

}  // namespace

TEST_CASE("a run with dropout resumed from a checkpoint is bit-identical to the uninterrupted run", "[checkpoint]") {
  Run straight = make_run();
  for (int64_t i = 0; i < 12; ++i) train_step(straight, i);
  const io::StateDict straight_opt = straight.opt->state_dict();
  const uint64_t straight_offset = default_generator().offset();

  Run first = make_run();
  for (int64_t i = 0; i < 5; ++i) train_step(first, i);
  const std::string path = temp_path("resume");
  io::save_checkpoint(path, *first.model, *first.opt, first.schedule.get());
  const uint64_t saved_offset = default_generator().offset();
  first = Run{};  // the interrupted process is gone

  Run resumed = make_run();  // a new process: the generator is where initialization left it
  REQUIRE(default_generator().offset() != saved_offset);
  io::load_checkpoint(path, *resumed.model, *resumed.opt, resumed.schedule.get());
  CHECK(resumed.schedule->current_step() == 5);
  CHECK(default_generator().offset() == saved_offset);
  for (int64_t i = 5; i < 12; ++i) train_step(resumed, i);

  const auto a = straight.model->named_parameters(), b = resumed.model->named_parameters();
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    INFO(a[i].first);
    CHECK(a[i].second.to_vector<float>() == b[i].second.to_vector<float>());
  }
  const io::StateDict resumed_opt = resumed.opt->state_dict();
  CHECK(straight_opt.metadata == resumed_opt.metadata);
  REQUIRE(straight_opt.tensors.size() == resumed_opt.tensors.size());
  for (size_t i = 0; i < straight_opt.tensors.size(); ++i) {
    INFO(straight_opt.tensors[i].first);
    CHECK(values(straight_opt.tensors[i].second) == values(resumed_opt.tensors[i].second));
  }
  CHECK(straight.opt->lr() == resumed.opt->lr());
  CHECK(default_generator().offset() == straight_offset);
  std::remove(path.c_str());
}

TEST_CASE("generator states round trip; malformed ones are refused and change nothing", "[checkpoint][rng]") {
  Generator g(~uint64_t{0});
  g.set_offset(uint64_t{1} << 63);
  const io::StateDict sd = g.state_dict();
  CHECK(sd.metadata.at("seed") == "18446744073709551615");
  CHECK(sd.metadata.at("offset") == "9223372036854775808");
  Generator h(1);
  h.load_state_dict(sd);
  CHECK(h.seed() == ~uint64_t{0});
  CHECK(h.offset() == uint64_t{1} << 63);
  CHECK(rand({7}, {}, &h).to_vector<float>() == rand({7}, {}, &g).to_vector<float>());

  Generator k(5);
  k.set_offset(9);
  for (const auto& [key, text] : std::vector<std::pair<std::string, std::string>>{
           {"seed", "-1"}, {"seed", "18446744073709551616"}, {"offset", "12x"}, {"offset", ""}, {"offset", "+3"},
           {"offset", "1e3"}}) {
    io::StateDict bad = sd;
    bad.metadata[key] = text;
    INFO(key << " = '" << text << "'");
    CHECK_THROWS_WITH(k.load_state_dict(bad), Contains(key));
  }
  io::StateDict missing = sd;
  missing.metadata.erase("offset");
  CHECK_THROWS_WITH(k.load_state_dict(missing), Contains("'offset'"));
  io::StateDict unknown = sd;
  unknown.metadata["counter"] = "1";
  CHECK_THROWS_WITH(k.load_state_dict(unknown), Contains("'counter'"));
  io::StateDict with_tensor = sd;
  with_tensor.set("offset", zeros({1}));
  CHECK_THROWS_AS(k.load_state_dict(with_tensor), Error);
  CHECK(k.seed() == 5);
  CHECK(k.offset() == 9);
}

TEST_CASE("checkpoint parts round trip with metadata", "[checkpoint]") {
  io::StateDict extra;
  extra.set("counter", from_vector(std::vector<int64_t>{7}));
  extra.metadata["note"] = "hello";
  const std::string path = temp_path("parts");
  io::save_checkpoint(path, io::CheckpointParts{{"model", {}}, {"extra", extra}});
  const io::CheckpointParts parts = io::load_checkpoint_parts(path);
  REQUIRE(parts.size() == 2);
  const io::StateDict& e = io::checkpoint_part(parts, "extra");
  CHECK(e.find("counter")->to_vector<int64_t>() == std::vector<int64_t>{7});
  CHECK(e.metadata.at("note") == "hello");
  CHECK_THROWS_WITH(io::checkpoint_part(parts, "scaler"), Contains("no part 'scaler'"));
  CHECK_THROWS_AS(io::save_checkpoint(path, io::CheckpointParts{{"a.b", {}}}), Error);
  std::remove(path.c_str());
}

TEST_CASE("loading a wrong or damaged checkpoint raises", "[checkpoint]") {
  Run r = make_run();
  const std::string path = temp_path("damaged");
  CHECK_THROWS_AS(io::load_checkpoint(path, *r.model, *r.opt), Error);  // missing file
  io::save_safetensors(path, r.model->state_dict());                   // safetensors, not a checkpoint
  CHECK_THROWS_WITH(io::load_checkpoint(path, *r.model, *r.opt), Contains("not a mixt checkpoint"));
  io::save_checkpoint(path, *r.model, *r.opt);
  {
    std::ofstream f(path, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(3);
    f.write("\xff\xff", 2);  // corrupt the header length
  }
  CHECK_THROWS_AS(io::load_checkpoint(path, *r.model, *r.opt), Error);
  // A checkpoint of another architecture: the model refuses it and stays unchanged.
  manual_seed(9);
  nn::Sequential other(nn::Linear(6, 4));
  optim::AdamW other_opt(other.parameters(), {});
  io::save_checkpoint(path, other, other_opt);
  const auto before = r.model->parameters()[0].to_vector<float>();
  CHECK_THROWS_AS(io::load_checkpoint(path, *r.model, *r.opt), Error);
  CHECK(r.model->parameters()[0].to_vector<float>() == before);
  std::remove(path.c_str());
}

namespace {

// Every value a run restores from a checkpoint: parameters (bit patterns), optimizer
// metadata and state, schedule step.
struct Fingerprint {
  std::vector<std::vector<float>> params;
  io::StateDict opt;
  int64_t schedule_step;
  bool operator==(const Fingerprint& o) const {
    if (params != o.params || opt.metadata != o.opt.metadata || schedule_step != o.schedule_step) return false;
    if (opt.tensors.size() != o.opt.tensors.size()) return false;
    for (size_t i = 0; i < opt.tensors.size(); ++i)
      if (opt.tensors[i].first != o.opt.tensors[i].first ||
          opt.tensors[i].second.to_vector<double>() != o.opt.tensors[i].second.to_vector<double>())
        return false;
    return true;
  }
};

Fingerprint fingerprint(const Run& r) {
  Fingerprint f;
  for (const Tensor& p : r.model->parameters()) f.params.push_back(p.to_vector<float>());
  f.opt = r.opt->state_dict();
  for (auto& [n, t] : f.opt.tensors) t = t.clone();
  f.schedule_step = r.schedule->current_step();
  return f;
}

}  // namespace

TEST_CASE("a checkpoint that does not fit changes nothing: every part is checked first", "[checkpoint]") {
  const std::string path = temp_path("unfit");
  Run r = make_run();
  for (int64_t i = 0; i < 2; ++i) train_step(r, i);
  const Fingerprint before = fingerprint(r);

  // The same model, trained with another optimizer type: the model part fits, the optimizer part does not.
  Run other = make_run();
  optim::SGD sgd(other.model->parameters(), {.lr = 0.5, .momentum = 0.9});
  for (Tensor p : other.model->parameters()) {
    autograd::NoGradGuard ng;
    p.fill_(0.25);
  }
  io::save_checkpoint(path, *other.model, sgd);
  CHECK_THROWS_WITH(io::load_checkpoint(path, *r.model, *r.opt),
                    Contains("the state dict was saved by the SGD optimizer; this optimizer is AdamW"));
  CHECK(fingerprint(r) == before);

  // The right optimizer, but the schedule part is missing.
  io::save_checkpoint(path, *other.model, *other.opt);
  CHECK_THROWS_WITH(io::load_checkpoint(path, *r.model, *r.opt, r.schedule.get()), Contains("no part 'schedule'"));
  CHECK(fingerprint(r) == before);

  // Every part present, the schedule's step corrupt.
  io::StateDict schedule = other.schedule->state_dict();
  schedule.metadata["step"] = "1e300";
  io::save_checkpoint(path, io::CheckpointParts{{"model", other.model->state_dict()},
                                                {"optim", other.opt->state_dict()},
                                                {"schedule", schedule},
                                                {"rng", io::rng_state()}});
  CHECK_THROWS_WITH(io::load_checkpoint(path, *r.model, *r.opt, r.schedule.get()), Contains("'step'"));
  CHECK(fingerprint(r) == before);

  // An optimizer part whose moments are missing.
  train_step(other, 0);
  io::StateDict opt_part = other.opt->state_dict();
  const size_t at = opt_part.tensors.index_of("state.0.exp_avg_sq");
  REQUIRE(at != io::NamedTensorList::npos);
  opt_part.tensors.erase(opt_part.tensors.begin() + static_cast<std::ptrdiff_t>(at));
  io::save_checkpoint(path, io::CheckpointParts{{"model", other.model->state_dict()}, {"optim", opt_part}});
  CHECK_THROWS_WITH(io::load_checkpoint(path, *r.model, *r.opt), Contains("no 'exp_avg_sq'"));
  CHECK(fingerprint(r) == before);

  // A part list naming a part twice is refused.
  io::StateDict all = io::load_safetensors(path);
  all.metadata["checkpoint.parts"] = "model,optim,model";
  io::save_safetensors(path, all);
  CHECK_THROWS_WITH(io::load_checkpoint_parts(path), Contains("listed twice"));
  std::remove(path.c_str());
}

TEST_CASE("a checkpoint whose rng part does not fit changes nothing", "[checkpoint][rng]") {
  const std::string path = temp_path("rng");
  Run r = make_run();
  train_step(r, 0);
  Run other = make_run();
  for (int64_t i = 0; i < 3; ++i) train_step(other, i);
  const Fingerprint before = fingerprint(r);
  const uint64_t offset = default_generator().offset();

  io::StateDict rng = io::rng_state();
  rng.metadata["default.offset"] = "-7";
  io::save_checkpoint(path, io::CheckpointParts{{"model", other.model->state_dict()},
                                                {"optim", other.opt->state_dict()},
                                                {"schedule", other.schedule->state_dict()},
                                                {"rng", rng}});
  CHECK_THROWS_WITH(io::load_checkpoint(path, *r.model, *r.opt, r.schedule.get()), Contains("'offset'"));
  CHECK(fingerprint(r) == before);
  CHECK(default_generator().offset() == offset);

  rng = io::rng_state();
  rng.metadata["cuda.0.seed"] = "1";  // a generator this process does not have
  io::save_checkpoint(path, io::CheckpointParts{{"model", other.model->state_dict()},
                                                {"optim", other.opt->state_dict()},
                                                {"rng", rng}});
  CHECK_THROWS_WITH(io::load_checkpoint(path, *r.model, *r.opt), Contains("cuda.0.seed"));
  CHECK(fingerprint(r) == before);

  // A checkpoint without the rng part is refused: the resume could not be exact.
  io::save_checkpoint(path, io::CheckpointParts{{"model", other.model->state_dict()},
                                                {"optim", other.opt->state_dict()}});
  CHECK_THROWS_WITH(io::load_checkpoint(path, *r.model, *r.opt), Contains("no part 'rng'"));
  CHECK(fingerprint(r) == before);
  CHECK(default_generator().offset() == offset);

  // save_checkpoint refuses a part name given twice (the loader would refuse the file).
  CHECK_THROWS_WITH(io::save_checkpoint(path, *other.model, *other.opt, nullptr, {{"rng", io::rng_state()}}),
                    Contains("'rng' is given twice"));
  std::remove(path.c_str());
}

TEST_CASE("optimizer step counters count exactly up to 2^53; loads refuse larger ones", "[checkpoint]") {
  Tensor p = from_vector(std::vector<float>{1, 2}).set_requires_grad(true);
  optim::AdamW opt({p}, {.lr = 1e-3});
  p.set_grad(ones_like(p));
  opt.step();
  io::StateDict sd = opt.state_dict();
  // 2^24 is where a float32 counter stops counting (2^24 + 1 is not a float32); 2^53 is
  // where a float64 one would.
  for (double start : {16777216.0, 9007199254740991.0}) {
    INFO("from step " << start);
    sd.set("state.0.step", full({}, start, {.dtype = kFloat64}));
    opt.load_state_dict(sd);
    p.set_grad(ones_like(p));
    opt.step();
    CHECK(opt.state_dict().find("state.0.step")->item<double>() == start + 1);
    CHECK(std::isfinite(p.to_vector<float>()[0]));
  }
  const double two53 = 9007199254740992.0;
  sd.set("state.0.step", full({}, two53, {.dtype = kFloat64}));
  opt.load_state_dict(sd);
  sd.set("state.0.step", full({}, two53 + 2, {.dtype = kFloat64}));  // the next float64
  CHECK_THROWS_WITH(opt.load_state_dict(sd), Contains("state.0.step"));
  CHECK(opt.state_dict().find("state.0.step")->item<double>() == two53);
}

TEST_CASE("load_checkpoint can leave the random generator alone", "[checkpoint]") {
  const std::string path = temp_path("keep_rng");
  Run saved = make_run();
  for (int64_t i = 0; i < 3; ++i) train_step(saved, i);
  io::save_checkpoint(path, *saved.model, *saved.opt);  // no schedule: it is optional
  const uint64_t saved_offset = default_generator().offset();

  // A run in progress loads a model: by default its generator jumps to the saved state.
  Run run = make_run();
  manual_seed(77);
  (void)randn({5});
  const uint64_t seed = default_generator().seed(), offset = default_generator().offset();
  REQUIRE(offset != saved_offset);
  io::load_checkpoint(path, *run.model, *run.opt, nullptr, {.restore_rng = false});
  CHECK(default_generator().seed() == seed);
  CHECK(default_generator().offset() == offset);
  // The model and optimizer were restored all the same.
  for (size_t i = 0; i < run.model->parameters().size(); ++i)
    CHECK(equal(run.model->parameters()[i], saved.model->parameters()[i]));
  // The default restores the generator (for resuming).
  io::load_checkpoint(path, *run.model, *run.opt);
  CHECK(default_generator().offset() == saved_offset);

  // A corrupt rng part is refused even when it would not be restored: nothing changes.
  io::CheckpointParts parts = io::load_checkpoint_parts(path);
  for (auto& [name, sd] : parts)
    if (name == "rng") sd.metadata["cuda.0.seed"] = "1";
  io::save_checkpoint(path, parts);
  manual_seed(5);
  const uint64_t offset5 = default_generator().offset();
  CHECK_THROWS_WITH(io::load_checkpoint(path, *run.model, *run.opt, nullptr, {.restore_rng = false}),
                    Contains("cuda.0.seed"));
  CHECK(default_generator().offset() == offset5);
  std::remove(path.c_str());
}
