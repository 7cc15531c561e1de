// Warnings (runtime/warnings.h): the losses whose input and target shapes differ warn
// through the process's handler, which an application can replace or turn into errors;
// the default handler prints each distinct warning once. Also run under ThreadSanitizer
// (suite `threads`): handlers are installed while other threads warn.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

#include <catch2/catch.hpp>

#include <mixt/mixt.h>

using namespace mixt;
using Catch::Contains;
namespace F = nn::functional;

namespace {

// Collects the warnings reported while it is alive.
struct Recorder {
  std::vector<Warning> seen;
  WarningHandlerGuard guard{[this](const Warning& w) { seen.push_back(w); }};
};

// What the default handler writes to stderr while `fn` runs.
template <class Fn>
std::string captured_stderr(Fn fn) {
  std::fflush(stderr);
  FILE* tmp = std::tmpfile();
  REQUIRE(tmp != nullptr);
  const int saved = dup(2);
  dup2(fileno(tmp), 2);
  fn();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::rewind(tmp);
  std::string out;
  char buf[256];
  while (size_t n = std::fread(buf, 1, sizeof buf, tmp)) out.append(buf, n);
  std::fclose(tmp);
  return out;
}

}  // namespace

TEST_CASE("a loss of an [N, 1] input against an [N] target warns, naming the shapes") {
  const Tensor pred = from_vector<float>({1, 2, 3}, {3, 1});
  const Tensor target = from_vector<float>({1, 2, 3}, {3});
  Recorder r;
  const Tensor loss = F::mse_loss(pred, target);
  REQUIRE(r.seen.size() == 1);
  CHECK(r.seen[0].op == "mse_loss");
  CHECK_THAT(r.seen[0].message, Contains("[3]") && Contains("[3, 1]") && Contains("[3, 3]"));
  // It still computes what it was asked: the mean over the broadcast [3, 3] pairs.
  CHECK(loss.item<float>() == Approx(12.0 / 9.0));
  // Same shapes: no warning.
  (void)F::mse_loss(pred.reshape({3}), target);
  CHECK(r.seen.size() == 1);
}

TEST_CASE("every pairwise loss warns on differing shapes, on every device and dtype") {
  for (Device dev : {Device::cpu(), Device::meta()}) {
    for (ScalarType dt : {kFloat32, kBFloat16}) {
      const Tensor a = ones({4, 1}, {.dtype = dt, .device = dev}), b = ones({4}, {.dtype = dt, .device = dev});
      Recorder r;
      (void)F::mse_loss(a, b);
      (void)F::l1_loss(a, b);
      (void)F::smooth_l1_loss(a, b);
      (void)F::huber_loss(a, b);
      (void)F::kl_div(a, b);
      std::vector<std::string> ops;
      for (const Warning& w : r.seen) ops.push_back(w.op);
      CHECK(ops == std::vector<std::string>{"mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss", "kl_div"});
    }
  }
}

TEST_CASE("the margin and Poisson losses warn on operands that broadcast, as PyTorch does") {
  for (Device dev : {Device::cpu(), Device::meta()}) {
    const TensorOptions o{.device = dev};
    const Tensor col = ones({4, 1}, o), row = ones({4}, o), rows = ones({4, 3}, o);
    Recorder r;
    (void)F::poisson_nll_loss(col, row);
    (void)F::soft_margin_loss(col, row);
    (void)F::hinge_embedding_loss(col, row);
    (void)F::margin_ranking_loss(col, row.reshape({1, 4}), ones({4, 4}, o));
    (void)F::triplet_margin_loss(rows, ones({1, 3}, o), rows);
    (void)F::cosine_embedding_loss(rows, ones({1, 3}, o), ones({4}, o));
    std::vector<std::string> ops;
    for (const Warning& w : r.seen) ops.push_back(w.op);
    CHECK(ops == std::vector<std::string>{"poisson_nll_loss", "soft_margin_loss", "hinge_embedding_loss",
                                          "margin_ranking_loss", "triplet_margin_loss", "cosine_embedding_loss"});
    REQUIRE(r.seen.size() == 6);
    CHECK_THAT(r.seen[4].message, Contains("positive") && Contains("[1, 3]") && Contains("[4, 3]"));
    // Same shapes: no warning.
    (void)F::margin_ranking_loss(row, row, row);
    (void)F::cosine_embedding_loss(rows, rows, ones({4}, o));
    CHECK(r.seen.size() == 6);
  }
}

TEST_CASE("the binary cross-entropy losses refuse differing shapes instead") {
  Recorder r;
  const Tensor p = full({4, 1}, 0.5), y = ones({4});
  CHECK_THROWS_WITH(F::binary_cross_entropy(p, y), Contains("binary_cross_entropy") && Contains("[4, 1]"));
  CHECK_THROWS_WITH(F::binary_cross_entropy_with_logits(p, y), Contains("[4, 1]"));
  CHECK(r.seen.empty());
}

TEST_CASE("warnings_as_errors makes a warning raise before the op computes") {
  WarningHandlerGuard g(warnings_as_errors());
  const Tensor a = ones({2, 1}, {.requires_grad = true}), b = ones({2});
  CHECK_THROWS_AS(F::l1_loss(a, b), Error);
  CHECK_THROWS_WITH(F::l1_loss(a, b), Contains("l1_loss") && Contains("[2, 1]"));
  // Matching shapes pass.
  CHECK_NOTHROW(F::l1_loss(a.reshape({2}), b));
}

TEST_CASE("the default handler prints each distinct warning once; a guard restores the previous handler") {
  const Tensor a = ones({5, 1}), b = ones({5});
  const std::string out = captured_stderr([&] {
    for (int i = 0; i < 3; ++i) (void)F::huber_loss(a, b);
    (void)F::huber_loss(ones({6, 1}), ones({6}));  // another message: printed too
  });
  CHECK(out.find("mixt: warning: huber_loss: ") == 0);
  size_t lines = 0;
  for (char ch : out) lines += ch == '\n';
  CHECK(lines == 2);
  {
    Recorder r;
    (void)F::huber_loss(a, b);
    CHECK(r.seen.size() == 1);  // a handler sees every warning, not only the first
    (void)F::huber_loss(a, b);
    CHECK(r.seen.size() == 2);
  }
  // Back to the default: already printed, so silent.
  CHECK(captured_stderr([&] { (void)F::huber_loss(a, b); }).empty());
}

TEST_CASE("set_warning_handler returns the handler it replaces; an empty one restores the default") {
  int calls = 0;
  WarningHandler previous = set_warning_handler([&](const Warning&) { ++calls; });
  warn("test", "one");
  WarningHandler mine = set_warning_handler(std::move(previous));
  REQUIRE(mine);
  mine(Warning{"x", "y"});
  CHECK(calls == 2);
  CHECK(!set_warning_handler(nullptr));  // the default was in place: it is returned as empty
}

TEST_CASE("handlers are replaced while other threads warn") {
  std::atomic<int> counted{0};
  std::atomic<bool> stop{false};
  std::vector<std::thread> warners;
  for (int t = 0; t < 2; ++t)
    warners.emplace_back([&] {
      while (!stop.load()) warn("threads", "a warning from a thread");
    });
  for (int i = 0; i < 200; ++i) {
    WarningHandlerGuard g([&](const Warning& w) { counted.fetch_add(w.op == "threads" ? 1 : 0); });
  }
  {
    // The last handler sees the threads' warnings.
    std::atomic<int> last{0};
    WarningHandlerGuard g([&](const Warning& w) { last.fetch_add(w.message == "a warning from a thread" ? 1 : 0); });
    // Bounded: a handler that never sees a warning fails the check below instead of hanging.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (last.load() < 10 && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
    stop = true;
    for (auto& t : warners) t.join();
    CHECK(last.load() >= 10);
  }
}
