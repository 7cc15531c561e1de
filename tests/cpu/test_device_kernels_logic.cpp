// The logic of the CUDA multi-tensor, random, factory, indexing and im2col/col2im kernels
// that does not need a GPU, run on the host in every build: the chunk plans and argument
// blocks of the multi-tensor apply, the per-block work of the AMP and optimizer kernels
// (emulated block by block on the host against the CPU ops, bit for bit), the Philox
// element -> counter mapping, the factory formulas, the index bounds rule and error codes,
// the scatter/gather layouts, the plans and passes of the chunked scans and of the ordered
// scatter, and the window math of im2col/col2im.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <random>
#include <set>
#include <vector>

#include <mixt/kernels/common/amp_math.h>
#include <mixt/kernels/common/conv_window.h>
#include <mixt/kernels/common/factory_math.h>
#include <mixt/kernels/common/index_math.h>
#include <mixt/kernels/common/layout_index.h>
#include <mixt/kernels/common/multi_tensor_plan.h>
#include <mixt/kernels/common/optim_math.h>
#include <mixt/kernels/common/random_transforms.h>
#include <mixt/kernels/common/scan_plan.h>
#include <mixt/kernels/common/scatter_plan.h>
#include <mixt/kernels/cuda/device_error.h>
#include <mixt/mixt.h>
#include <mixt/runtime/ops/amp.h>
#include <mixt/runtime/ops/optim.h>

using namespace mixt;

namespace {

// Every (tensor, element) pair a plan's launches cover, through the packed argument
// blocks and locate_chunk (what the device blocks compute), in launch order.
std::vector<std::pair<size_t, int64_t>> covered_ranges(const std::vector<int64_t>& numels, int max_tensors,
                                                       int max_chunks, std::vector<mt::PlannedLaunch>* out_plan) {
  const std::vector<mt::PlannedLaunch> plan = mt::plan_launches(numels, max_tensors, max_chunks);
  std::vector<std::pair<size_t, int64_t>> ranges;  // (tensor, begin) per chunk
  for (const mt::PlannedLaunch& l : plan) {
    REQUIRE(!l.chunks.empty());
    REQUIRE(static_cast<int>(l.tensors.size()) <= max_tensors);
    REQUIRE(static_cast<int>(l.chunks.size()) <= max_chunks);
    auto block = std::make_unique<mt::TensorChunks<2>>();
    mt::pack_chunks<2>(l, numels, [](int list, size_t t) { return reinterpret_cast<void*>((t + 1) * 16 + list); },
                       block.get());
    REQUIRE(block->n_chunks == static_cast<int>(l.chunks.size()));
    for (int k = 0; k < block->n_chunks; ++k) {
      int slot;
      int64_t begin, length;
      mt::locate_chunk(*block, k, &slot, &begin, &length);
      const size_t t = l.tensors[static_cast<size_t>(slot)];
      REQUIRE(block->ptr[1][slot] == reinterpret_cast<void*>((t + 1) * 16 + 1));
      REQUIRE(length > 0);
      REQUIRE(length <= mt::kChunkElements);
      REQUIRE(begin + length <= numels[t]);
      ranges.push_back({t, begin});
    }
  }
  if (out_plan) *out_plan = plan;
  return ranges;
}

// The chunks a correct plan has: every tensor's chunk starts, in order.
std::vector<std::pair<size_t, int64_t>> expected_ranges(const std::vector<int64_t>& numels) {
  std::vector<std::pair<size_t, int64_t>> r;
  for (size_t t = 0; t < numels.size(); ++t)
    for (int64_t b = 0; b < numels[t]; b += mt::kChunkElements) r.push_back({t, b});
  return r;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  const Tensor x = a.contiguous(), y = b.contiguous();
  return x.dtype() == y.dtype() && x.sizes() == y.sizes() &&
         (x.nbytes() == 0 || std::memcmp(x.data_ptr(), y.data_ptr(), static_cast<size_t>(x.nbytes())) == 0);
}

}  // namespace

TEST_CASE("multi-tensor plans cover every element once, in order, within the block limits", "[device][multi_tensor]") {
  SECTION("empty lists and empty tensors take no launch and no slot") {
    CHECK(mt::plan_launches(std::vector<int64_t>{}).empty());
    CHECK(mt::plan_launches(std::vector<int64_t>{0, 0, 0}).empty());
    std::vector<mt::PlannedLaunch> plan;
    const std::vector<int64_t> numels{0, 5, 0, 0, 7, 0};
    CHECK(covered_ranges(numels, mt::kMaxTensors, mt::kMaxChunks, &plan) == expected_ranges(numels));
    REQUIRE(plan.size() == 1);
    CHECK(plan[0].tensors == std::vector<size_t>{1, 4});
  }
  SECTION("many small tensors spread over launches of at most kMaxTensors") {
    std::vector<int64_t> numels;
    for (int i = 0; i < 2000; ++i) numels.push_back(1 + (i * 37) % 300);
    std::vector<mt::PlannedLaunch> plan;
    CHECK(covered_ranges(numels, mt::kMaxTensors, mt::kMaxChunks, &plan) == expected_ranges(numels));
    CHECK(plan.size() == (2000 + mt::kMaxTensors - 1) / mt::kMaxTensors);
  }
  SECTION("a large tensor is split over launches of at most kMaxChunks, its tail chunk short") {
    const std::vector<int64_t> numels{3, mt::kChunkElements * 700 + 11, 2};
    std::vector<mt::PlannedLaunch> plan;
    CHECK(covered_ranges(numels, mt::kMaxTensors, mt::kMaxChunks, &plan) == expected_ranges(numels));
    CHECK(plan.size() == 3);  // 1 + 701 + 1 chunks over blocks of 320
    CHECK(plan[1].tensors == std::vector<size_t>{1});  // the big tensor is in both neighbours' tables too
    CHECK(plan[0].tensors == std::vector<size_t>{0, 1});
    int64_t begin, length;
    mt::chunk_range(numels[1], 700, &begin, &length);
    CHECK(begin == mt::kChunkElements * 700);
    CHECK(length == 11);
  }
  SECTION("tiny limits still cover everything") {
    const std::vector<int64_t> numels{1, mt::kChunkElements + 1, 0, 2 * mt::kChunkElements, 9};
    for (int mtn : {1, 2, 3})
      for (int mc : {1, 2, 5}) CHECK(covered_ranges(numels, mtn, mc, nullptr) == expected_ranges(numels));
  }
  SECTION("huge counts: chunk indices stay exact in the uint32 field") {
    CHECK(mt::chunks_of(0) == 0);
    CHECK(mt::chunks_of(1) == 1);
    CHECK(mt::chunks_of(mt::kChunkElements) == 1);
    CHECK(mt::chunks_of(mt::kChunkElements + 1) == 2);
    CHECK(mt::chunks_of(mt::kMaxElements) == (int64_t{1} << 32));
    const int64_t n = (int64_t{1} << 36) + 5;  // 2^20 + 1 chunks, never allocated
    const std::vector<mt::PlannedLaunch> plan = mt::plan_launches(std::vector<int64_t>{n});
    CHECK(plan.size() == static_cast<size_t>((mt::chunks_of(n) + mt::kMaxChunks - 1) / mt::kMaxChunks));
    auto block = std::make_unique<mt::TensorChunks<1>>();
    const std::vector<int64_t> numels{n};
    mt::pack_chunks<1>(plan.back(), numels, [](int, size_t) { return nullptr; }, block.get());
    int slot;
    int64_t begin, length;
    mt::locate_chunk(*block, block->n_chunks - 1, &slot, &begin, &length);
    CHECK(begin == (int64_t{1} << 36));
    CHECK(length == 5);
  }
}

namespace {

// Runs the AMP unscale kernel's per-block work on the host over every launch of the plan:
// returns whether any block set the flag.
template <class T>
bool emulate_unscale(std::vector<Tensor>& grads, float inv_scale) {
  std::vector<int64_t> numels;
  for (const Tensor& g : grads) numels.push_back(g.numel());
  bool found = false;
  for (const mt::PlannedLaunch& l : mt::plan_launches(numels, 3, 4)) {  // small limits: many launches
    auto a = std::make_unique<mt::TensorChunks<1>>();
    mt::pack_chunks<1>(l, numels, [&](int, size_t t) { return grads[t].data_ptr(); }, a.get());
    for (int k = 0; k < a->n_chunks; ++k) {
      int slot;
      int64_t begin, length;
      mt::locate_chunk(*a, k, &slot, &begin, &length);
      T* p = static_cast<T*>(a->ptr[0][slot]) + begin;
      const auto inv = static_cast<opmath_t<T>>(inv_scale);
      for (int64_t i = 0; i < length; ++i) {
        found |= amp_math::non_finite(p[i]);
        if (inv != opmath_t<T>(1)) p[i] = amp_math::unscale(p[i], inv);
      }
    }
  }
  return found;
}

}  // namespace

TEMPLATE_TEST_CASE("the unscale kernel's blocks give the CPU op's bits and flag", "[device][amp]", float, double,
                   Half, BFloat16) {
  const ScalarType dt = dtype_of<TestType>;
  Generator gen(7);
  std::vector<Tensor> ref, dev;
  for (int64_t n : {int64_t{0}, int64_t{5}, mt::kChunkElements + 3, int64_t{1000}, int64_t{1}}) {
    Tensor t = mul(randn({n}, {.dtype = dt}, &gen), Scalar(1e3));
    ref.push_back(t.clone());
    dev.push_back(t.clone());
  }
  const bool poison = GENERATE(false, true);
  if (poison) {
    ref[2].select(0, 65537).fill_(std::numeric_limits<double>::infinity());
    dev[2].select(0, 65537).fill_(std::numeric_limits<double>::infinity());
  }
  const float inv = GENERATE(1.0f, 0.0009765625f, 3.0e-5f);
  Tensor found = zeros({}, {.dtype = kFloat32});
  amp::unscale_check_(ref, found, full({}, inv, {.dtype = kFloat32}));
  const bool flagged = emulate_unscale<TestType>(dev, inv);
  CHECK(flagged == poison);
  CHECK((found.item<float>() != 0.0f) == flagged);
  for (size_t i = 0; i < ref.size(); ++i) CHECK(same_bits(ref[i], dev[i]));
}

TEST_CASE("the scale update kernel's math is the CPU op's over a trajectory", "[device][amp]") {
  const amp::ScaleRule rule{.growth_factor = 2.0, .backoff_factor = 0.5, .min_scale = 1.0, .max_scale = 65536.0,
                            .growth_interval = 3, .hysteresis = 2, .consecutive_hysteresis = false};
  const amp_math::ScaleRuleValues r{rule.growth_factor, rule.backoff_factor, rule.min_scale, rule.max_scale,
                                    rule.growth_interval, rule.hysteresis,   rule.consecutive_hysteresis};
  Tensor scale = full({}, 16.0, {.dtype = kFloat32}), growth = zeros({}, {.dtype = kInt32}),
         hyst = full({}, 2.0, {.dtype = kInt32}), skipped = zeros({}, {.dtype = kInt64}),
         floor = zeros({}, {.dtype = kInt64});
  amp_math::ScaleState s{16.0f, 0, 2, 0, 0};
  // Clean steps, a run of overflows down to the floor, a long clean run up to the ceiling, a mix.
  std::vector<int> overflow(3, 0);
  overflow.insert(overflow.end(), 8, 1);
  overflow.insert(overflow.end(), 60, 0);
  for (int o : {1, 0, 1, 1, 0}) overflow.push_back(o);
  for (int o : overflow) {
    amp::update_scale_(scale, growth, hyst, full({}, o, {.dtype = kFloat32}), skipped, floor, rule);
    amp_math::update_scale(s, o != 0, r);
    REQUIRE(scale.item<float>() == s.scale);
    REQUIRE(growth.item<int32_t>() == s.growth_tracker);
    REQUIRE(hyst.item<int32_t>() == s.hysteresis_tracker);
    REQUIRE(skipped.item<int64_t>() == s.skipped_steps);
    REQUIRE(floor.item<int64_t>() == s.floor_hits);
  }
  CHECK(s.floor_hits > 0);        // the trajectory reaches the floor
  CHECK(s.skipped_steps == 11);
}

namespace {

// Parameters, gradients and states of one emulated optimizer group (mixed sizes).
struct Group {
  std::vector<Tensor> params, grads, states[3], steps;
};

Group make_group(ScalarType dt, int n_states, uint64_t seed) {
  Generator gen(seed);
  Group g;
  const ScalarType work = dt == kFloat64 ? kFloat64 : kFloat32;
  for (int64_t n : {int64_t{7}, mt::kChunkElements + 9, int64_t{0}, int64_t{300}}) {
    g.params.push_back(randn({n}, {.dtype = dt}, &gen));
    g.grads.push_back(randn({n}, {.dtype = dt}, &gen));
    for (int s = 0; s < n_states; ++s) g.states[s].push_back(zeros({n}, {.dtype = work}));
    g.steps.push_back(zeros({}, {.dtype = kFloat64}));
  }
  return g;
}

Group clone(const Group& g) {
  Group c;
  for (const Tensor& t : g.params) c.params.push_back(t.clone());
  for (const Tensor& t : g.grads) c.grads.push_back(t.clone());
  for (int s = 0; s < 3; ++s)
    for (const Tensor& t : g.states[s]) c.states[s].push_back(t.clone());
  for (const Tensor& t : g.steps) c.steps.push_back(t.clone());
  return c;
}

void require_same(const Group& a, const Group& b) {
  for (size_t i = 0; i < a.params.size(); ++i) {
    REQUIRE(same_bits(a.params[i], b.params[i]));
    for (int s = 0; s < 3; ++s)
      if (!a.states[s].empty()) REQUIRE(same_bits(a.states[s][i], b.states[s][i]));
    REQUIRE(same_bits(a.steps[i], b.steps[i]));
  }
}

// The Adam kernel's work, block by block: constants from the counter + 1, then the elements;
// the counters advance after every block (the last kernel).
template <class P>
void emulate_adam(Group& g, const optim::fused::AdamHyper& h) {
  using M = opmath_t<P>;
  std::vector<int64_t> numels;
  for (const Tensor& p : g.params) numels.push_back(p.numel());
  const bool l2 = !h.decoupled && h.weight_decay != 0.0;
  for (const mt::PlannedLaunch& l : mt::plan_launches(numels, 2, 3)) {
    auto a = std::make_unique<mt::TensorChunks<5>>();
    mt::pack_chunks<5>(l, numels, [&](int list, size_t t) -> void* {
      if (list == 0) return g.params[t].data_ptr();
      if (list == 1) return g.grads[t].data_ptr();
      return list - 2 < (h.amsgrad ? 3 : 2) ? g.states[list - 2][t].data_ptr() : nullptr;
    }, a.get());
    for (int k = 0; k < a->n_chunks; ++k) {
      int slot;
      int64_t begin, length;
      mt::locate_chunk(*a, k, &slot, &begin, &length);
      const double step = g.steps[l.tensors[static_cast<size_t>(slot)]].item<double>() + 1.0;
      const auto c = optim_math::adam_consts<M>(optim_math::adam_step_scalars(h.lr, h.beta1, h.beta2, step), h.lr,
                                                h.beta1, h.beta2, h.eps, h.weight_decay, h.decoupled);
      P* p = static_cast<P*>(a->ptr[0][slot]) + begin;
      const P* gr = static_cast<const P*>(a->ptr[1][slot]) + begin;
      M* m = static_cast<M*>(a->ptr[2][slot]) + begin;
      M* v = static_cast<M*>(a->ptr[3][slot]) + begin;
      M* vmax = h.amsgrad ? static_cast<M*>(a->ptr[4][slot]) + begin : nullptr;
      for (int64_t i = 0; i < length; ++i) {
        if (l2 && h.amsgrad) optim_math::adam_update<true, true>(p, gr, m, v, vmax, i, c);
        else if (l2) optim_math::adam_update<true, false>(p, gr, m, v, vmax, i, c);
        else if (h.amsgrad) optim_math::adam_update<false, true>(p, gr, m, v, vmax, i, c);
        else optim_math::adam_update<false, false>(p, gr, m, v, vmax, i, c);
      }
    }
  }
  for (Tensor& s : g.steps) s.add_(1.0);
}

template <class P>
void emulate_sgd(Group& g, const optim::fused::SgdHyper& h) {
  using M = opmath_t<P>;
  std::vector<int64_t> numels;
  for (const Tensor& p : g.params) numels.push_back(p.numel());
  const auto c = optim_math::sgd_consts<M>(h.lr, h.momentum, h.dampening, h.weight_decay);
  for (const mt::PlannedLaunch& l : mt::plan_launches(numels, 3, 2)) {
    auto a = std::make_unique<mt::TensorChunks<3>>();
    mt::pack_chunks<3>(l, numels, [&](int list, size_t t) -> void* {
      if (list == 0) return g.params[t].data_ptr();
      if (list == 1) return g.grads[t].data_ptr();
      return g.states[0][t].data_ptr();
    }, a.get());
    for (int k = 0; k < a->n_chunks; ++k) {
      int slot;
      int64_t begin, length;
      mt::locate_chunk(*a, k, &slot, &begin, &length);
      const bool init = g.steps[l.tensors[static_cast<size_t>(slot)]].item<double>() == 0.0;
      P* p = static_cast<P*>(a->ptr[0][slot]) + begin;
      const P* gr = static_cast<const P*>(a->ptr[1][slot]) + begin;
      M* buf = static_cast<M*>(a->ptr[2][slot]) + begin;
      for (int64_t i = 0; i < length; ++i) {
        if (h.nesterov) optim_math::sgd_update<true, true, true>(p, gr, buf, i, init, c);
        else optim_math::sgd_update<true, true, false>(p, gr, buf, i, init, c);
      }
    }
  }
  for (Tensor& s : g.steps) s.add_(1.0);
}

}  // namespace

TEMPLATE_TEST_CASE("the fused step kernels' blocks give the CPU ops' bits", "[device][optim]", float, double, Half,
                   BFloat16) {
  const ScalarType dt = dtype_of<TestType>;
  SECTION("adam and adamw, with and without amsgrad and L2") {
    for (int variant = 0; variant < 4; ++variant) {
      optim::fused::AdamHyper h;
      h.lr = 1e-2, h.weight_decay = 0.1, h.amsgrad = variant & 1, h.decoupled = (variant & 2) != 0;
      Group ref = make_group(dt, h.amsgrad ? 3 : 2, 11 + static_cast<uint64_t>(variant)), dev = clone(ref);
      for (int step = 0; step < 3; ++step) {
        optim::fused::adam_step_(ref.params, ref.grads, ref.states[0], ref.states[1],
                                 h.amsgrad ? std::span<const Tensor>(ref.states[2]) : std::span<const Tensor>(),
                                 ref.steps, Tensor(), h);
        emulate_adam<TestType>(dev, h);
        require_same(ref, dev);
      }
    }
  }
  SECTION("sgd with momentum (first step copies the gradient), nesterov, weight decay") {
    for (bool nesterov : {false, true}) {
      optim::fused::SgdHyper h;
      h.lr = 0.05, h.momentum = 0.9, h.dampening = nesterov ? 0.0 : 0.1, h.weight_decay = 0.01, h.nesterov = nesterov;
      Group ref = make_group(dt, 1, 23), dev = clone(ref);
      for (int step = 0; step < 3; ++step) {
        optim::fused::sgd_step_(ref.params, ref.grads, ref.states[0], ref.steps, Tensor(), h);
        emulate_sgd<TestType>(dev, h);
        require_same(ref, dev);
      }
    }
  }
}

TEST_CASE("Philox: the device's thread -> block -> element mapping is the CPU's", "[device][random]") {
  for (int P : {2, 4})
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{3}, int64_t{4}, int64_t{5}, int64_t{1001}}) {
      const uint64_t offset = 12345, seed = 0x9e3779b97f4a7c15ull;
      const int64_t blocks = static_cast<int64_t>(rng::blocks_needed(n, P));
      std::vector<int> hits(static_cast<size_t>(n), 0);
      for (int64_t j = 0; j < blocks; ++j) {  // thread j
        const philox::Block b = philox::generate(seed, offset + static_cast<uint64_t>(j));
        const int lanes = rng::block_lanes(j, n, P);
        REQUIRE(lanes >= 1);
        REQUIRE(lanes <= P);
        for (int l = 0; l < lanes; ++l) {
          const int64_t i = j * P + l;
          REQUIRE(i < n);
          ++hits[static_cast<size_t>(i)];
          const philox::Block cpu = rng::block_for(seed, offset, i, P);  // the CPU's element -> counter rule
          REQUIRE(std::memcmp(&cpu, &b, sizeof b) == 0);
          REQUIRE(i % P == l);
        }
      }
      CHECK(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
    }
}

namespace {

// The random kernel's work on the host: thread j writes block j's lanes.
template <class T, class Fill>
std::vector<T> emulate_random(int64_t n, uint64_t seed, uint64_t offset, Fill&& fill) {
  constexpr int P = rng::per_block<T>();
  std::vector<T> out(static_cast<size_t>(n));
  for (int64_t j = 0; j < static_cast<int64_t>(rng::blocks_needed(n, P)); ++j)
    fill(philox::generate(seed, offset + static_cast<uint64_t>(j)), out.data() + j * P, rng::block_lanes(j, n, P));
  return out;
}

template <class T>
void check_random_equal(const Tensor& cpu, const std::vector<T>& dev) {
  REQUIRE(cpu.numel() == static_cast<int64_t>(dev.size()));
  CHECK(std::memcmp(cpu.data_ptr(), dev.data(), dev.size() * sizeof(T)) == 0);
}

}  // namespace

TEMPLATE_TEST_CASE("random kernels draw the CPU's values from the same reservation", "[device][random]", float,
                   double, Half, BFloat16, Float8_e4m3fn, int32_t, int64_t, uint8_t) {
  using T = TestType;
  const ScalarType dt = dtype_of<T>;
  const int64_t n = 1001;
  Generator gen(99);
  gen.set_offset(17);
  const uint64_t seed = gen.seed(), offset = gen.offset();
  Tensor t = empty({n}, {.dtype = dt});
  if constexpr (std::is_floating_point_v<T> || is_narrow_float_v<T>) {
    uniform_(t, -1.5, 2.0, &gen);
    check_random_equal(t, emulate_random<T>(n, seed, offset, [](const philox::Block& b, T* o, int lanes) {
      rng::uniform_block(b, o, lanes, -1.5, 2.0);
    }));
    const uint64_t after_uniform = gen.offset();
    CHECK(after_uniform - offset == rng::blocks_needed(n, rng::per_block<T>()));
    normal_(t, 0.5, 2.0, &gen);
    // The device's log/sin/cos may round differently from the host's; the host run of the
    // shared formula equals the CPU kernel exactly.
    check_random_equal(t, emulate_random<T>(n, seed, after_uniform, [](const philox::Block& b, T* o, int lanes) {
      rng::normal_block(b, o, lanes, 0.5, 2.0);
    }));
  }
  const uint64_t before = gen.offset();
  random_(t, 0, 8, &gen);
  check_random_equal(t, emulate_random<T>(n, seed, before, [](const philox::Block& b, T* o, int lanes) {
    rng::random_block(b, o, lanes, 0, 8);
  }));
  CHECK(gen.offset() - before == rng::blocks_needed(n, rng::per_block<T>()));
}

TEST_CASE("factory formulas: arange and linspace elements equal the CPU ops'", "[device][factory]") {
  SECTION("integer arange wraps like the CPU") {
    const Tensor a = arange(int64_t{-7}, int64_t{50}, int64_t{3}, {.dtype = kInt64});
    REQUIRE(a.numel() == 19);
    for (int64_t i = 0; i < a.numel(); ++i)
      REQUIRE(a[i].item<int64_t>() == factory_math::arange_int(static_cast<uint64_t>(int64_t{-7}), 3, i));
    CHECK(factory_math::arange_int(static_cast<uint64_t>(INT64_MAX), 1, 1) == INT64_MIN);
  }
  SECTION("floating arange") {
    const Tensor a = arange(0.1, 7.3, 0.7, {.dtype = kFloat64});
    for (int64_t i = 0; i < a.numel(); ++i) REQUIRE(a[i].item<double>() == factory_math::arange_double(0.1, 0.7, i));
  }
  SECTION("linspace: exact endpoints, halves from each end") {
    for (int64_t steps : {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{9}, int64_t{10}, int64_t{1001}}) {
      const Tensor l = linspace(-2.3, 7.9, steps, {.dtype = kFloat64});
      const factory_math::Linspace f = factory_math::make_linspace(-2.3, 7.9, steps);
      for (int64_t i = 0; i < steps; ++i) REQUIRE(l[i].item<double>() == factory_math::linspace_value(f, i));
      if (steps >= 2) {
        CHECK(factory_math::linspace_value(f, 0) == -2.3);
        CHECK(factory_math::linspace_value(f, steps - 1) == 7.9);
      }
    }
    CHECK(factory_math::linspace_value(factory_math::make_linspace(3.0, 5.0, 1), 0) == 3.0);
  }
}

TEST_CASE("index bounds: the wrap rule and the device error codes", "[device][index]") {
  int64_t w = -1;
  CHECK(index_math::wrap_index(0, 5, &w));
  CHECK(w == 0);
  CHECK(index_math::wrap_index(4, 5, &w));
  CHECK(w == 4);
  CHECK(index_math::wrap_index(-1, 5, &w));
  CHECK(w == 4);
  CHECK(index_math::wrap_index(-5, 5, &w));
  CHECK(w == 0);
  CHECK_FALSE(index_math::wrap_index(5, 5, &w));
  CHECK(w == 0);
  CHECK_FALSE(index_math::wrap_index(-6, 5, &w));
  CHECK_FALSE(index_math::wrap_index(0, 0, &w));
  CHECK_FALSE(index_math::wrap_index(INT64_MIN, 5, &w));
  CHECK_FALSE(index_math::wrap_index(INT64_MAX, 5, &w));
  // scatter_add's sum: opmath, one rounding; bool is a logical or; integers wrap.
  CHECK(index_math::scatter_add_value<bool>(true, false));
  CHECK_FALSE(index_math::scatter_add_value<bool>(false, false));
  CHECK(index_math::scatter_add_value<int8_t>(127, 1) == -128);
  CHECK(static_cast<float>(index_math::scatter_add_value(Half(2048.0f), Half(1.0f))) == 2048.0f);
  using cuda::DeviceError;
  std::set<std::string> texts;
  for (DeviceError e : {DeviceError::IndexOutOfBounds, DeviceError::IndexSelectOutOfBounds,
                        DeviceError::EmbeddingOutOfBounds, DeviceError::GatherOutOfBounds,
                        DeviceError::ScatterOutOfBounds, DeviceError::IntegerDivisionByZero}) {
    const std::string t = cuda::device_error_text(e);
    CHECK(t != "an unknown device error");
    texts.insert(t);
  }
  CHECK(texts.size() == 6);
}

namespace {

// The gather kernel's loop on the host: the layout of (out, index, src with the dim's
// stride zeroed) over the index's shape, as kernels/cuda/index.cpp builds it.
Tensor emulate_gather(const Tensor& self, int d, const Tensor& index, bool* all_in_bounds) {
  Tensor out = empty(index.sizes(), {.dtype = self.dtype()});
  const Shape out_strides = contiguous_strides(index.sizes());
  Shape src_strides = self.strides();
  src_strides[d] = 0;
  const OperandGeometry geom[3] = {{&index.sizes(), &out_strides, out.element_size()},
                                   {&index.sizes(), &index.strides(), index.element_size()},
                                   {&index.sizes(), &src_strides, self.element_size()}};
  const StridedLayout L = make_strided_layout(index.sizes(), geom);
  *all_in_bounds = true;
  for (int64_t i = 0; i < L.numel; ++i) {
    int64_t off[3];
    element_offsets(L, i, off);
    int64_t v = 0;
    std::memcpy(&v, static_cast<const char*>(index.data_ptr()) + off[1], 8);
    int64_t w;
    if (!index_math::wrap_index(v, self.size(d), &w)) {
      *all_in_bounds = false;
      continue;
    }
    std::memcpy(static_cast<char*>(out.data_ptr()) + off[0],
                static_cast<const char*>(self.data_ptr()) + off[2] + w * self.strides()[d] * self.element_size(), 4);
  }
  return out;
}

// One line of the ordered scatter on the host, as the kernels run it under plan `p`:
// pass 1 for every chunk, then pass 2 for every owner; returns, per owner, the indices k
// it applies, in its order. targets[k]: index k's position, or -1 for a bad index.
std::vector<std::vector<int64_t>> ordered_scatter_line(const ScatterPlan& p, const std::vector<int64_t>& targets) {
  std::vector<std::vector<int64_t>> writes(static_cast<size_t>(p.owners));
  if (!scatter_bucketed(p)) {
    for (int64_t k = 0; k < p.length; ++k)
      if (targets[static_cast<size_t>(k)] >= 0) writes[0].push_back(k);
    return writes;
  }
  ScatterPlan one = p;  // this line's slice of the workspace only
  one.lines = 1;
  std::vector<int32_t> ws(static_cast<size_t>(scatter_workspace_ints(one)), -7);
  int32_t* ends = scatter_line_ends(one, ws.data(), 0);
  int32_t* perm = scatter_line_perm(one, ws.data(), 0);
  for (int64_t c = 0; c < p.chunks; ++c)
    scatter_bucket_chunk(p, c, [&](int64_t k) { return targets[static_cast<size_t>(k)]; }, ends, perm);
  for (int64_t b = 0; b < p.owners; ++b)
    scatter_apply_owner(p, b, ends, perm, [&](int64_t k) { writes[static_cast<size_t>(b)].push_back(k); });
  return writes;
}

// A bucketed plan with the given owners and chunks (small ones, to exercise the passes on
// small tensors).
ScatterPlan forced_scatter_plan(int64_t lines, int64_t length, int64_t positions, int64_t owners, int64_t chunks) {
  ScatterPlan p = make_scatter_plan(lines, length, positions);
  p.span = (positions + owners - 1) / owners;
  p.owners = (positions + p.span - 1) / p.span;
  p.chunk = (length + chunks - 1) / chunks;
  p.chunks = (length + p.chunk - 1) / p.chunk;
  return p;
}

// The ordered scatter_add kernel on the host: the layout of (out, index, src) over the index
// lines, each line applied as ordered_scatter_line orders it under plan `p`.
Tensor emulate_scatter_add(const Tensor& self, int d, const Tensor& index, const Tensor& src, const ScatterPlan& p) {
  Tensor out = self.clone();
  Shape space = index.sizes();
  space[d] = 1;
  Shape out_strides = out.strides();
  out_strides[d] = 0;
  const OperandGeometry geom[3] = {{&space, &out_strides, 4}, {&space, &index.strides(), 8}, {&space, &src.strides(), 4}};
  const StridedLayout L = make_strided_layout(space, geom);
  REQUIRE(p.lines == L.numel);
  REQUIRE(p.length == index.size(d));
  for (int64_t line = 0; line < L.numel; ++line) {
    int64_t off[3];
    element_offsets(L, line, off);
    std::vector<int64_t> targets;
    for (int64_t k = 0; k < index.size(d); ++k) {
      int64_t v, w = -1;
      std::memcpy(&v, static_cast<const char*>(index.data_ptr()) + off[1] + k * index.strides()[d] * 8, 8);
      REQUIRE(index_math::wrap_index(v, out.size(d), &w));
      targets.push_back(w);
    }
    for (const std::vector<int64_t>& ks : ordered_scatter_line(p, targets))
      for (int64_t k : ks) {
        const int64_t w = targets[static_cast<size_t>(k)];
        float* dst = reinterpret_cast<float*>(static_cast<char*>(out.data_ptr()) + off[0] + w * out.strides()[d] * 4);
        const float x = *reinterpret_cast<const float*>(static_cast<const char*>(src.data_ptr()) + off[2] +
                                                        k * src.strides()[d] * 4);
        *dst = index_math::scatter_add_value(*dst, x);
      }
  }
  return out;
}

}  // namespace

TEST_CASE("the gather and scatter_add layouts reproduce the CPU ops", "[device][index]") {
  Generator gen(5);
  const Tensor self = randn({4, 6, 5}, {}, &gen).transpose(0, 2);  // [5, 6, 4], strided
  for (int d = 0; d < 3; ++d) {
    Shape isz{3, 4, 2};
    Tensor raw = empty({isz[0], isz[1], isz[2] + 1}, {.dtype = kInt64});
    random_(raw, -self.size(d), self.size(d), &gen);
    const Tensor index = raw.narrow(2, 0, isz[2]);  // strided too
    bool ok = false;
    CHECK(same_bits(emulate_gather(self, d, index, &ok), gather(self, d, index)));
    CHECK(ok);
    const Tensor src = randn({4, 5, 3}, {}, &gen);
    const Tensor want = scatter_add(self.contiguous(), d, index, src);
    const int64_t lines = index.numel() / isz[d], length = isz[d], positions = self.size(d);
    CHECK(same_bits(emulate_scatter_add(self.contiguous(), d, index, src, make_scatter_plan(lines, length, positions)),
                    want));
    CHECK(same_bits(emulate_scatter_add(self.contiguous(), d, index, src,
                                        forced_scatter_plan(lines, length, positions, 2, 2)),
                    want));
  }
  bool ok = true;
  Tensor bad = full({2, 2, 2}, 9.0, {.dtype = kInt64});
  emulate_gather(self, 0, bad, &ok);
  CHECK_FALSE(ok);  // the device reports it; the CPU raises
  CHECK_THROWS_AS(gather(self, 0, bad), Error);
}

TEST_CASE("im2col/col2im window math: per-element mappings equal the CPU's walk", "[device][conv]") {
  std::mt19937 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    conv::Window w;
    for (int j = 0; j < 2; ++j) {
      w.k[j] = 1 + rng() % 3, w.s[j] = 1 + rng() % 3, w.p[j] = rng() % 3, w.d[j] = 1 + rng() % 2;
      w.in[j] = 1 + rng() % 7;
      const int64_t reach = w.d[j] * (w.k[j] - 1) + 1, padded = w.in[j] + 2 * w.p[j];
      if (padded < reach) w.in[j] += reach - padded;
      w.out[j] = (w.in[j] + 2 * w.p[j] - reach) / w.s[j] + 1;
    }
    std::vector<int64_t> source(static_cast<size_t>(w.taps()), -2);
    std::map<int64_t, std::vector<int64_t>> readers;  // input position -> columns, in walk order
    conv::for_each_tap(w, [&](int64_t col, int64_t i) {
      source[static_cast<size_t>(col)] = i;
      if (i >= 0) readers[i].push_back(col);
    });
    for (int64_t col = 0; col < w.taps(); ++col) REQUIRE(conv::im2col_source(w, col) == source[static_cast<size_t>(col)]);
    for (int64_t ii = 0; ii < w.in[0]; ++ii)
      for (int64_t ij = 0; ij < w.in[1]; ++ij) {
        std::vector<int64_t> got;
        conv::for_each_contribution(w, ii, ij, [&](int64_t col) { got.push_back(col); });
        REQUIRE(got == readers[ii * w.in[1] + ij]);  // same columns, same (increasing) order
      }
  }
}

TEST_CASE("scan plans: a long line is shared by many threads and each prefix is stored once", "[device][scan]") {
  SECTION("a 1-D cumsum of 10^6 elements is planned over many threads and blocks") {
    const ScanPlan p = make_scan_plan(1, 1000000);
    CHECK(scan_chunk_threads(p) >= 1024);
    CHECK(blocks_for(scan_chunk_threads(p)) >= 4);
    CHECK(scan_serial_steps(p) <= 1000000 / 100);
  }
  SECTION("short lines, and enough lines to fill the device, keep one thread per line (the CPU's order)") {
    CHECK(make_scan_plan(1, 3 * kScanMinChunk - 1).chunks == 1);
    CHECK(make_scan_plan(kScanTargetThreads, 100000).chunks == 1);
    CHECK(make_scan_plan(3, 0).chunks == 1);
    CHECK(scan_workspace_slots(make_scan_plan(1000, 50)) == 0);
  }
  SECTION("chunks cover each line once, none empty, within the limits") {
    for (int64_t lines : {int64_t{1}, int64_t{3}, int64_t{100}, int64_t{5000}})
      for (int64_t n : {int64_t{1}, int64_t{255}, int64_t{256}, int64_t{1000}, int64_t{12345}, int64_t{1000000},
                        int64_t{100000000}}) {
        const ScanPlan p = make_scan_plan(lines, n);
        REQUIRE(p.chunks >= 1);
        REQUIRE(p.chunks <= kScanMaxChunks);
        if (p.chunks > 1) REQUIRE(p.chunk >= kScanMinChunk);
        int64_t next = 0;
        for (int64_t c = 0; c < p.chunks; ++c) {
          int64_t first, end;
          scan_chunk_bounds(p, c, &first, &end);
          REQUIRE(first == next);
          REQUIRE(end > first);
          next = end;
        }
        REQUIRE(next == n);
        CHECK(scan_workspace_slots(p) == (p.chunks > 1 ? lines * p.chunks : 0));
      }
  }
  SECTION("the device order: wrapping integers exact; double sums and products within their error bounds") {
    std::mt19937_64 rng(11);
    const double u = std::ldexp(1.0, -53);
    for (int64_t n : {int64_t{1000}, int64_t{54321}}) {
      const ScanPlan p = make_scan_plan(1, n);
      REQUIRE(p.chunks > 1);
      std::vector<uint64_t> iv(static_cast<size_t>(n));
      for (uint64_t& v : iv) v = rng();  // sums and products wrap many times
      for (bool prod : {false, true}) {
        auto op = [prod](uint64_t a, uint64_t b) { return prod ? a * b : a + b; };
        std::vector<uint64_t> got(static_cast<size_t>(n), 0), seen(static_cast<size_t>(n), 0);
        scan_in_device_order(p, uint64_t{prod ? 1u : 0u}, op, [&](int64_t k) { return iv[static_cast<size_t>(k)]; },
                             [&](int64_t k, uint64_t acc) {
                               got[static_cast<size_t>(k)] = acc;
                               ++seen[static_cast<size_t>(k)];
                             });
        uint64_t acc = prod ? 1 : 0;
        for (int64_t k = 0; k < n; ++k) {
          acc = op(acc, iv[static_cast<size_t>(k)]);
          REQUIRE(got[static_cast<size_t>(k)] == acc);
          REQUIRE(seen[static_cast<size_t>(k)] == 1);
        }
      }
      std::uniform_real_distribution<double> sym(-1.0, 1.0), near1(0.999, 1.001);
      std::vector<double> x(static_cast<size_t>(n)), y(static_cast<size_t>(n)), sums(x.size()), prods(x.size());
      for (size_t i = 0; i < x.size(); ++i) x[i] = sym(rng), y[i] = near1(rng);
      auto add = [](double a, double b) { return a + b; };
      auto mul = [](double a, double b) { return a * b; };
      scan_in_device_order(p, 0.0, add, [&](int64_t k) { return x[static_cast<size_t>(k)]; },
                           [&](int64_t k, double a) { sums[static_cast<size_t>(k)] = a; });
      scan_in_device_order(p, 1.0, mul, [&](int64_t k) { return y[static_cast<size_t>(k)]; },
                           [&](int64_t k, double a) { prods[static_cast<size_t>(k)] = a; });
      // Both orders are within gamma_k = k u / (1 - k u) of the exact prefix, relative to the
      // sum of magnitudes (sums) or to the product itself (products): 2 gamma_k apart.
      double s = 0, a = 0, q = 1;
      int differ = 0;
      for (int64_t k = 0; k < n; ++k) {
        const size_t i = static_cast<size_t>(k);
        s += x[i], a += std::fabs(x[i]), q *= y[i];
        const double g2 = 2.0 * static_cast<double>(k) * u / (1.0 - static_cast<double>(k) * u);
        REQUIRE(std::fabs(sums[i] - s) <= g2 * a);
        REQUIRE(std::fabs(prods[i] - q) <= g2 * std::fabs(q) * (1 + g2));
        differ += sums[i] != s;
      }
      CHECK(differ > 0);  // the orders do differ: the bound is what holds
    }
  }
}

TEST_CASE("ordered scatter plans: owners of disjoint positions apply a long line in index order",
          "[device][index]") {
  SECTION("a 1-D scatter of 10^6 indices is planned over many threads") {
    const ScatterPlan p = make_scatter_plan(1, 1000000, 10000);
    REQUIRE(scatter_bucketed(p));
    CHECK(p.lines * p.chunks >= 128);  // pass 1's threads
    CHECK(p.lines * p.owners >= 256);  // pass 2's threads
    CHECK(2 * p.chunk + 2 * p.owners <= 1000000 / 50);  // pass 1's walk
    CHECK(p.chunks + 1000000 / p.owners <= 1000000 / 50);  // pass 2's, for targets spread evenly
  }
  SECTION("short lines, one position, and enough lines keep one thread per line") {
    CHECK_FALSE(scatter_bucketed(make_scatter_plan(1, kScatterMinChunk, 1000)));
    CHECK_FALSE(scatter_bucketed(make_scatter_plan(1, 100000, 1)));
    CHECK_FALSE(scatter_bucketed(make_scatter_plan(kScatterTargetThreads, 100000, 1000)));
    CHECK(scatter_workspace_ints(make_scatter_plan(1, 10, 10)) == 0);
  }
  SECTION("plans cover every index and position, and the workspace stays within 2 int32 per index") {
    for (int64_t lines : {int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{100000}})
      for (int64_t length : {int64_t{1}, int64_t{129}, int64_t{5000}, int64_t{1000000}})
        for (int64_t positions : {int64_t{1}, int64_t{2}, int64_t{300}, int64_t{1000000}}) {
          const ScatterPlan p = make_scatter_plan(lines, length, positions);
          if (!scatter_bucketed(p)) continue;
          REQUIRE(p.owners <= positions);
          REQUIRE(p.span * p.owners >= positions);
          REQUIRE((p.owners - 1) * p.span < positions);  // no owner without positions
          REQUIRE(p.chunk * p.chunks >= length);
          REQUIRE((p.chunks - 1) * p.chunk < length);  // no empty chunk
          REQUIRE(p.chunk <= kScatterMaxChunk);
          CHECK(scatter_workspace_ints(p) <= 2 * lines * length);
        }
  }
  SECTION("the two passes apply each valid index once, by its position's owner, in increasing k") {
    std::mt19937 rng(17);
    auto check = [&](const ScatterPlan& p, const std::vector<int64_t>& targets) {
      const std::vector<std::vector<int64_t>> writes = ordered_scatter_line(p, targets);
      std::vector<int> applied(targets.size(), 0);
      for (int64_t b = 0; b < p.owners; ++b) {
        int64_t last = -1;
        for (int64_t k : writes[static_cast<size_t>(b)]) {
          const int64_t w = targets[static_cast<size_t>(k)];
          REQUIRE(w >= b * p.span);
          REQUIRE(w < (b + 1) * p.span);
          REQUIRE(k > last);
          last = k;
          ++applied[static_cast<size_t>(k)];
        }
      }
      for (size_t k = 0; k < targets.size(); ++k) REQUIRE(applied[k] == (targets[k] >= 0 ? 1 : 0));
    };
    for (int64_t length : {int64_t{1000}, int64_t{20000}})
      for (int64_t positions : {int64_t{3}, int64_t{50}, int64_t{5000}}) {
        std::vector<int64_t> targets(static_cast<size_t>(length));
        for (size_t k = 0; k < targets.size(); ++k) {
          const uint32_t r = rng();
          // A few are bad, about half hit position 1 (a skewed line), the rest anywhere.
          targets[k] = r % 50 == 0 ? -1 : r % 2 ? 1 : static_cast<int64_t>(r % positions);
        }
        const ScatterPlan p = make_scatter_plan(1, length, positions);
        REQUIRE(scatter_bucketed(p));
        check(p, targets);
        check(forced_scatter_plan(1, length, positions, positions, 7), targets);  // one position per owner
        check(forced_scatter_plan(1, length, positions, 2, 1), targets);
      }
  }
}
