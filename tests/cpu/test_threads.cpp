// mixt from several threads at once: dispatch (its first use too), custom-op
// registration while other threads dispatch, per-thread autocast scopes and cast
// caches, backward passes into shared leaves and through shared graphs, the CPU
// allocator's per-thread block cache, and the shared Philox generator. Every
// test asserts exact results; CI also runs this suite under ThreadSanitizer.
// Catch2's assertions are not thread-safe: threads record, the main thread checks.
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <functional>
#include <future>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <mixt/mixt.h>

#include "test_util.h"

using namespace mixt;
using namespace mixt::testing;
using Catch::Contains;

namespace {

// Runs body(i) on n threads that start together; returns the messages of the
// exceptions they threw (empty when none did).
std::vector<std::string> run_threads(int n, const std::function<void(int)>& body) {
  std::latch start(n);
  std::mutex m;
  std::vector<std::string> errors;
  std::vector<std::thread> threads;
  for (int i = 0; i < n; ++i)
    threads.emplace_back([&, i] {
      start.arrive_and_wait();
      try {
        body(i);
      } catch (const std::exception& e) {
        std::lock_guard lock(m);
        errors.push_back(e.what());
      }
    });
  for (auto& t : threads) t.join();
  return errors;
}

// A float32 tensor of `shape` holding `first`, `first + 1`, ... (small integers: exact in every float type).
Tensor counting(const Shape& shape, float first = 0) {
  std::vector<float> v(static_cast<size_t>(shape.numel()));
  for (size_t i = 0; i < v.size(); ++i) v[i] = first + static_cast<float>(i);
  return from_vector(v, shape);
}

// Number of elements of `t` that differ from `want`.
int64_t mismatches(const Tensor& t, double want) {
  int64_t n = 0;
  for (double v : values(t)) n += v != want;
  return n;
}

// A custom op's kernel: in[0] + the op's id, so a result names the op that ran.
void add_op_id(OpCall& c, DispatchKeySet) { c.out[0] = add(c.in[0], static_cast<double>(static_cast<int>(c.op))); }

// A custom op's kernel: its input, unchanged (a copy).
void identity(OpCall& c, DispatchKeySet) { c.out[0] = mul(c.in[0], 1.0); }

Tensor call1(OpId id, const Tensor& x) {
  OpCall c(id);
  c.push(x);
  return call_op(c);
}

}  // namespace

// First in the file: the process's very first dispatch happens on 8 threads at once.
TEST_CASE("ops dispatch from several threads at once, the first dispatch included", "[threads][dispatch]") {
  std::atomic<int64_t> wrong{0};
  const auto errors = run_threads(8, [&](int t) {
    const Tensor a = counting({3, 4}, static_cast<float>(t)), b = from_vector(std::vector<float>(8, 1.f), {4, 2});
    for (int it = 0; it < 100; ++it) {
      // Row i of a·1 sums 4 consecutive values starting at t + 4i: 4t + 16i + 6.
      const auto p = values(mm(a, b));
      for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 2; ++j) wrong += p[static_cast<size_t>(2 * i + j)] != 4.0 * t + 16.0 * i + 6.0;
      wrong += values(sum(a))[0] != 12.0 * t + 66.0;
      wrong += mismatches(sub(add(a, a), mul(a, 2.0)), 0.0);
      wrong += values(a.to(kFloat16).to(kFloat64)) != values(a);
    }
  });
  CHECK(errors.empty());
  CHECK(wrong == 0);
}

TEST_CASE("custom ops are registered on several threads while others dispatch", "[threads][registry]") {
  constexpr int kRegistrars = 4, kDispatchers = 4, kOpsEach = 25;
  std::atomic<int> registrars_left{kRegistrars};
  std::atomic<int64_t> wrong{0}, dispatched{0};
  const auto errors = run_threads(kRegistrars + kDispatchers, [&](int t) {
    const Tensor x = counting({2, 3});
    if (t < kRegistrars) {
      for (int i = 0; i < kOpsEach; ++i) {
        const std::string name = "threads::op_" + std::to_string(t) + "_" + std::to_string(i);
        const OpId id = register_op({.name = name, .min_inputs = 1, .max_inputs = 1, .outputs = 1});
        register_kernel(id, DispatchKey::CPU, add_op_id);
        autocast::set_policy(DeviceType::CPU, id, autocast::Policy::Fp32);
        wrong += op_name(id) != name || find_op(name) != id;
        wrong += mismatches(sub(call1(id, x), x), static_cast<double>(static_cast<int>(id)));
      }
      --registrars_left;
      return;
    }
    // The other threads dispatch built-in ops, half of them under autocast (which reads the policy table).
    autocast::Guard g({.device = DeviceType::CPU, .dtype = kBFloat16, .enabled = t % 2 == 0});
    while (registrars_left > 0 || dispatched < 200) {
      const Tensor y = mm(x, transpose(x, 0, 1));  // [[5, 14], [14, 50]]
      wrong += values(y) != std::vector<double>{5, 14, 14, 50};
      wrong += y.dtype() != (t % 2 == 0 ? kBFloat16 : kFloat32);
      ++dispatched;
    }
  });
  CHECK(errors.empty());
  CHECK(wrong == 0);
  CHECK(dispatched >= 200);
}

TEST_CASE("an op name registered from several threads at once is registered once", "[threads][registry]") {
  constexpr int kNames = 100, kThreads = 4;
  std::vector<std::atomic<int>> won(kNames);
  std::atomic<int> refused{0};
  const auto errors = run_threads(kThreads, [&](int) {
    for (int i = 0; i < kNames; ++i) {
      try {
        register_op({.name = "threads::same_" + std::to_string(i), .min_inputs = 1, .max_inputs = 1});
        ++won[static_cast<size_t>(i)];
      } catch (const Error& e) {
        refused += std::string(e.what()).find("already exists") != std::string::npos;
      }
    }
  });
  CHECK(errors.empty());
  int names_won_once = 0;
  for (const auto& w : won) names_won_once += w == 1;
  CHECK(names_won_once == kNames);
  CHECK(refused == kNames * (kThreads - 1));
}

TEST_CASE("op names are exact while other threads register ops", "[threads][registry]") {
  constexpr int kRegistrars = 3, kReaders = 3, kOpsEach = 40;
  std::vector<std::string> builtin(kNumBuiltinOps);
  for (int i = 0; i < kNumBuiltinOps; ++i) builtin[static_cast<size_t>(i)] = std::string(op_name(static_cast<OpId>(i)));
  std::vector<std::vector<std::pair<OpId, std::string>>> made(kRegistrars);
  std::atomic<int> registrars_left{kRegistrars};
  std::atomic<int64_t> wrong{0}, names_read{0};
  const auto errors = run_threads(kRegistrars + kReaders, [&](int t) {
    if (t < kRegistrars) {
      for (int i = 0; i < kOpsEach; ++i) {
        const std::string name = "threads::named_" + std::to_string(t) + "_" + std::to_string(i);
        made[static_cast<size_t>(t)].emplace_back(register_op({.name = name, .min_inputs = 1, .max_inputs = 1}), name);
      }
      --registrars_left;
      return;
    }
    // Every id below num_ops() has its name, the one find_op gives back, while ops are added.
    while (registrars_left > 0 || names_read < 2000) {
      const int n = num_ops();
      for (int i = 0; i < n; ++i) {
        const std::string_view name = op_name(static_cast<OpId>(i));
        if (i < kNumBuiltinOps) wrong += name != builtin[static_cast<size_t>(i)];
        else wrong += name.substr(0, 9) != "threads::";
        ++names_read;
      }
      wrong += op_name(static_cast<OpId>(kMaxOps)) != "<invalid op>";
    }
  });
  CHECK(errors.empty());
  CHECK(wrong == 0);
  CHECK(names_read >= 2000);
  for (const auto& ops : made)
    for (const auto& [id, name] : ops) {
      CHECK(op_name(id) == name);
      CHECK(find_op(name) == id);
    }
}

// Note [Op names without a lock]: kernels name their op on every call (dtype dispatch,
// broadcasting, errors); none of it, nor dispatch itself, may wait for a registration.
TEST_CASE("op names, op counts and dispatch never wait for the registry's lock", "[threads][registry]") {
  init();
  const OpId custom = register_op({.name = "threads::named_while_locked", .min_inputs = 1, .max_inputs = 1});
  register_kernel(custom, DispatchKey::CPU, identity);
  const Tensor a = counting({2, 2}), ints = from_vector(std::vector<int64_t>{1, 2});
  std::future<std::string> result;
  bool finished = false;
  {
    detail::RegistryLockForTesting hold;  // as a registration on another thread would
    result = std::async(std::launch::async, [&] {
      std::vector<std::string> words{std::string(op_name(OpId::mm)), std::string(op_name(custom))};
      words.emplace_back(num_ops() > kNumBuiltinOps && find_op("mm") == OpId::mm ? "counted" : "miscounted");
      for (const Tensor& t : {add(a, a), sum(a), mul(ints, 2.5), call1(custom, a)})
        words.push_back(std::to_string(values(t).back()));
      try {
        mm(a, counting({3, 3}));
      } catch (const Error& e) {
        words.push_back(e.op());  // the kernel's error names its op
      }
      std::string s;
      for (const std::string& w : words) s += (s.empty() ? "" : " ") + w;
      return s;
    });
    finished = result.wait_for(std::chrono::seconds(10)) == std::future_status::ready;
  }
  CHECK(finished);
  CHECK(result.get() == "mm threads::named_while_locked counted 6.000000 6.000000 5.000000 3.000000 mm");
}

TEST_CASE("an op's autocast policy changes while other threads run it", "[threads][autocast]") {
  static const OpId id = [] {
    const OpId op = register_op({.name = "threads::toggled", .min_inputs = 1, .max_inputs = 1});
    register_kernel(op, DispatchKey::CPU, identity);
    return op;
  }();
  const Tensor x = counting({2, 2});
  std::atomic<bool> done{false};
  std::atomic<int64_t> wrong{0}, lowered{0}, kept{0};
  const auto errors = run_threads(4, [&](int t) {
    if (t == 0) {
      for (int i = 0; i < 2000 || lowered + kept < 300; ++i) {  // until the others made 300 calls
        autocast::set_policy(DeviceType::CPU, id, i % 2 ? autocast::Policy::Lower : autocast::Policy::PassThrough);
        if (i % 500 == 0) autocast::reset_policies();
      }
      done = true;
      return;
    }
    autocast::Guard g({.device = DeviceType::CPU, .dtype = kBFloat16});
    while (!done) {
      const Tensor y = call1(id, x);  // bfloat16 under `lower`, float32 passed through
      (y.dtype() == kBFloat16 ? lowered : kept) += 1;
      wrong += (y.dtype() != kBFloat16 && y.dtype() != kFloat32) || values(y) != std::vector<double>{0, 1, 2, 3};
    }
  });
  autocast::reset_policies();
  CHECK(errors.empty());
  CHECK(wrong == 0);
  CHECK(lowered + kept >= 300);
}

TEST_CASE("an autocast scope affects only the ops of its own thread", "[threads][autocast]") {
  const Tensor a = counting({4, 4}, -8);  // -8..7: exact in bfloat16 and float16, and so are the products
  const std::vector<double> want = values(mm(a.to(kFloat64), a.to(kFloat64)));
  std::atomic<int64_t> wrong{0};
  const auto errors = run_threads(5, [&](int t) {
    for (int it = 0; it < 50; ++it) {
      Tensor y;
      ScalarType expected = kFloat32;
      switch (t) {
        case 0: {
          autocast::Guard g({.device = DeviceType::CPU, .dtype = kBFloat16});
          y = mm(a, a);
          expected = kBFloat16;
          break;
        }
        case 1: {
          autocast::Guard g({.device = DeviceType::CPU, .dtype = kFloat16});
          y = mm(a, a);
          expected = kFloat16;
          break;
        }
        case 2: {
          autocast::Guard g({.device = DeviceType::CPU, .dtype = kBFloat16});
          autocast::Disable off;
          y = mm(a, a);
          break;
        }
        case 3: {
          autocast::Guard g({.device = DeviceType::CPU, .dtype = kFloat16});
          autocast::Island island;
          y = mm(a, a);
          break;
        }
        default:
          y = mm(a, a);  // no scope at all
      }
      wrong += y.dtype() != expected;
      wrong += values(y) != want;
      wrong += autocast::is_enabled(DeviceType::CPU);  // every scope closed again
    }
  });
  CHECK(errors.empty());
  CHECK(wrong == 0);
  CHECK_FALSE(autocast::is_enabled(DeviceType::CPU));
}

TEST_CASE("each thread casts a shared parameter once per scope, and its gradient adds up", "[threads][autocast]") {
  constexpr int kThreads = 4, kRounds = 20, kUses = 10;
  Tensor w = counting({4, 4}, -8).set_requires_grad(true);
  const Tensor x = from_vector(std::vector<float>(8, 1.f), {2, 4});
  std::atomic<int64_t> wrong{0};
  const auto errors = run_threads(kThreads, [&](int) {
    for (int r = 0; r < kRounds; ++r) {
      autocast::reset_cache_stats();
      Tensor loss;
      {
        autocast::Guard g({.device = DeviceType::CPU, .dtype = kBFloat16, .cache = true});
        for (int u = 0; u < kUses; ++u) {
          const Tensor y = sum(mm(x, w));
          loss = loss.defined() ? add(loss, y) : y;
        }
        const autocast::CacheStats s = autocast::cache_stats();
        wrong += s.misses != 1 || s.hits != kUses - 1 || s.entries != 1;
      }
      wrong += autocast::cache_stats().entries != 0;  // cleared by the outermost exit
      loss.backward();
    }
  });
  CHECK(errors.empty());
  CHECK(wrong == 0);
  // d(sum(x·w))/dw = 2 everywhere (x holds ones and has 2 rows), per use, per round, per thread.
  CHECK(mismatches(w.grad(), 2.0 * kUses * kRounds * kThreads) == 0);
}

TEST_CASE("concurrent backward passes into a shared leaf lose no update", "[threads][autograd]") {
  constexpr int kThreads = 4, kIters = 200;
  Tensor w = zeros({100000}, {.dtype = kFloat32, .requires_grad = true});
  const Tensor x = ones({100000});
  int post_hook_calls = 0;  // a plain int: post-accumulate hooks of a leaf run one at a time
  autograd::register_post_accumulate_grad_hook(w, [&](const Tensor&) { ++post_hook_calls; });
  const auto errors = run_threads(kThreads, [&](int) {
    for (int i = 0; i < kIters; ++i) sum(w * x).backward();
  });
  CHECK(errors.empty());
  CHECK(mismatches(w.grad(), kThreads * kIters) == 0);
  CHECK(post_hook_calls == kThreads * kIters);
}

TEST_CASE("backward passes on several threads share one retained graph", "[threads][autograd]") {
  constexpr int kThreads = 4, kIters = 50;
  Tensor w = ones({1000}, {.dtype = kFloat32, .requires_grad = true});
  const Tensor h = w * 2.0;  // recorded once, on this thread: its node is shared by every pass
  autograd::retain_grad(h);
  const Tensor x = full({1000}, 3.0);
  const auto errors = run_threads(kThreads, [&](int) {
    for (int i = 0; i < kIters; ++i) sum(h * x).backward({}, /*retain_graph=*/true);
  });
  CHECK(errors.empty());
  CHECK(mismatches(h.grad(), 3.0 * kThreads * kIters) == 0);
  CHECK(mismatches(w.grad(), 6.0 * kThreads * kIters) == 0);
}

TEST_CASE("a graph freed by one backward pass raises in the passes racing it", "[threads][autograd]") {
  constexpr int kThreads = 4;
  for (int round = 0; round < 20; ++round) {
    Tensor w = ones({1000}, {.dtype = kFloat32, .requires_grad = true});
    const Tensor root = sum(w * full({1000}, 5.0));
    std::atomic<int> succeeded{0};
    const auto errors = run_threads(kThreads, [&](int) {
      root.backward();
      ++succeeded;
    });
    REQUIRE(succeeded == 1);
    REQUIRE(errors.size() == kThreads - 1);
    for (const auto& e : errors) CHECK_THAT(e, Contains("retain_graph"));
    CHECK(mismatches(w.grad(), 5.0) == 0);
  }
}

TEST_CASE("the CPU allocator: blocks made on one thread are freed and reused on another", "[threads][allocator]") {
  constexpr int kBlocks = 32;
  const MemoryStats before = cpu_memory_stats();
  std::vector<Tensor> handed;
  std::thread maker([&] {
    for (int i = 0; i < kBlocks; ++i) {
      // 4000 bytes (the 4096 class) and 80000 bytes (rounded to 81920, whole pages).
      for (int64_t n : {int64_t{1000}, int64_t{20000}}) {
        Tensor t = empty({n}, of(kFloat32));
        auto* p = static_cast<float*>(t.data_ptr());
        for (int64_t j = 0; j < n; ++j) p[j] = static_cast<float>(i * 7 + j % 5);
        handed.push_back(std::move(t));
      }
    }
  });
  maker.join();
  const int64_t held = kBlocks * (4096 + 81920);
  CHECK(cpu_memory_stats().allocated_bytes - before.allocated_bytes == held);
  CHECK(cpu_memory_stats().allocations - before.allocations == 2 * kBlocks);
  int64_t wrong = 0, cached_after_free = -1, cached_after_reuse = -1, allocated_while_reusing = -1;
  std::thread user([&] {
    for (int i = 0; i < 2 * kBlocks; ++i) {
      const auto* p = static_cast<const float*>(handed[static_cast<size_t>(i)].data_ptr());
      for (int64_t j = 0; j < handed[static_cast<size_t>(i)].numel(); ++j)
        wrong += p[j] != static_cast<float>(i / 2 * 7 + j % 5);
    }
    handed.clear();  // freed here: the blocks go to this thread's cache
    cached_after_free = cpu_memory_stats().cached_bytes;
    std::vector<Tensor> again;
    for (int i = 0; i < kBlocks; ++i) {
      again.push_back(empty({1000}, of(kFloat32)));
      again.push_back(empty({20000}, of(kFloat32)));
    }
    cached_after_reuse = cpu_memory_stats().cached_bytes;  // every block came from the cache
    allocated_while_reusing = cpu_memory_stats().allocated_bytes - before.allocated_bytes;
    again.clear();
    release_cpu_cache();
  });
  user.join();
  CHECK(wrong == 0);
  CHECK(cached_after_free == held);
  CHECK(cached_after_reuse == 0);
  CHECK(allocated_while_reusing == held);
  CHECK(cpu_memory_stats().allocated_bytes == before.allocated_bytes);
  CHECK(cpu_memory_stats().cached_bytes == before.cached_bytes);  // this thread's cache was not touched
}

TEST_CASE("the CPU allocator: threads pass tensors around while they allocate", "[threads][allocator]") {
  constexpr int kThreads = 4, kPerThread = 300;
  const int64_t allocated_before = cpu_memory_stats().allocated_bytes;
  std::mutex m;
  std::vector<std::deque<Tensor>> inbox(kThreads);
  std::atomic<int64_t> wrong{0}, received{0};
  const auto errors = run_threads(kThreads, [&](int t) {
    for (int i = 0; i < kPerThread; ++i) {
      Tensor mine = empty({64 + (i % 3) * 5000}, of(kInt32));  // three size classes
      auto* p = static_cast<int32_t*>(mine.data_ptr());
      for (int64_t j = 0; j < mine.numel(); ++j) p[j] = t * 1000000 + i;
      Tensor got;
      {
        std::lock_guard lock(m);
        inbox[static_cast<size_t>((t + 1) % kThreads)].push_back(std::move(mine));
        if (!inbox[static_cast<size_t>(t)].empty()) {
          got = std::move(inbox[static_cast<size_t>(t)].front());
          inbox[static_cast<size_t>(t)].pop_front();
        }
      }
      if (!got.defined()) continue;
      const auto* q = static_cast<const int32_t*>(got.data_ptr());
      for (int64_t j = 1; j < got.numel(); ++j) wrong += q[j] != q[0];
      wrong += q[0] / 1000000 != (t + kThreads - 1) % kThreads;
      ++received;
    }  // `got` is freed here, on another thread than the one that allocated it
    release_cpu_cache();
  });
  CHECK(errors.empty());
  CHECK(wrong == 0);
  CHECK(received > 0);
  for (auto& box : inbox) box.clear();
  CHECK(cpu_memory_stats().allocated_bytes == allocated_before);
}

TEST_CASE("threads drawing from one Philox generator get disjoint parts of its stream", "[threads][random]") {
  constexpr int kThreads = 4, kDraws = 100;
  Generator own(1234);
  for (Generator* shared : {&own, &default_generator()}) {
    shared->manual_seed(1234);
    std::mutex m;
    std::vector<std::vector<double>> drawn;
    const auto errors = run_threads(kThreads, [&](int) {
      for (int i = 0; i < kDraws; ++i) {
        std::vector<double> v = values(rand({8}, {}, shared == &own ? &own : nullptr));
        std::lock_guard lock(m);
        drawn.push_back(std::move(v));
      }
    });
    REQUIRE(errors.empty());
    // The same draws, one after the other, from a fresh generator with the same seed.
    Generator fresh(1234);
    std::vector<std::vector<double>> want;
    for (int i = 0; i < kThreads * kDraws; ++i) want.push_back(values(rand({8}, {}, &fresh)));
    std::sort(drawn.begin(), drawn.end());
    std::sort(want.begin(), want.end());
    CHECK(drawn == want);
    CHECK(shared->offset() == fresh.offset());
  }
}
