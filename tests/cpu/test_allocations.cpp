// What the dispatch path allocates, counted: this program replaces the global
// operator new (all forms) with one that counts the calls made on this thread inside a
// counted scope. Building and dispatching an OpCall allocates nothing (Note [One
// kernel signature], Note [Fixed maximum rank]); autocast's decide(), as its kernel calls
// it, allocates nothing beyond its result (Note [Autocast decisions]).
#include <cstdlib>
#include <new>
#include <span>

#include <catch2/catch.hpp>

#include <mixt/autocast/autocast.h>
#include <mixt/autocast/decision.h>
#include <mixt/dispatcher/op_check.h>
#include <mixt/mixt.h>

namespace {
thread_local bool g_counting = false;
thread_local long g_news = 0;

// One counted allocation of `n` bytes aligned to `align` (0: the default); null on failure.
void* try_counted_alloc(std::size_t n, std::size_t align) noexcept {
  if (g_counting) ++g_news;
  if (n == 0) n = 1;
  return align > alignof(std::max_align_t) ? std::aligned_alloc(align, (n + align - 1) / align * align)
                                           : std::malloc(n);
}

void* counted_alloc(std::size_t n, std::size_t align) {
  void* p = try_counted_alloc(n, align);
  if (!p) throw std::bad_alloc();
  return p;
}
}  // namespace

// Every form is replaced, nothrow ones included, so that no allocation reaches the
// runtime's own operator new (a sanitizer's, which would not match our free()).
void* operator new(std::size_t n) { return counted_alloc(n, 0); }
void* operator new[](std::size_t n) { return counted_alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a) { return counted_alloc(n, static_cast<std::size_t>(a)); }
void* operator new[](std::size_t n, std::align_val_t a) { return counted_alloc(n, static_cast<std::size_t>(a)); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept { return try_counted_alloc(n, 0); }
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept { return try_counted_alloc(n, 0); }
void* operator new(std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return try_counted_alloc(n, static_cast<std::size_t>(a));
}
void* operator new[](std::size_t n, std::align_val_t a, const std::nothrow_t&) noexcept {
  return try_counted_alloc(n, static_cast<std::size_t>(a));
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete(void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, std::align_val_t, const std::nothrow_t&) noexcept { std::free(p); }

using namespace mixt;

namespace {

// The number of operator new calls `f` makes on this thread.
template <class F>
long news_during(F&& f) {
  g_news = 0;
  g_counting = true;
  f();
  g_counting = false;
  return g_news;
}

// Attributes of every kind, the largest shape included: all stored inline.
MIXT_ATTRS_STRUCT(PassAttrs, (Shape, sizes, {})(Scalar, scale, 1)(int64_t, dim, 0))

// A kernel that does no work of its own: out = in (a reference count, no allocation).
void pass_through(OpCall& c, DispatchKeySet) { c.out[0] = c.in[0]; }

OpId pass_through_op() {
  static const OpId id = [] {
    OpId op = register_op({.name = "test::pass_through",
                           .min_inputs = 1,
                           .max_inputs = 3,
                           .outputs = 1,
                           .attrs = &PassAttrs::kSchema});
    register_kernel(op, DispatchKey::CPU, pass_through);
    return op;
  }();
  return id;
}

}  // namespace

TEST_CASE("the counter sees allocations", "[allocations]") {
  // (Calls of the function itself: a new-expression's allocation may be elided.)
  CHECK(news_during([] { ::operator delete(::operator new(16)); }) == 1);
  CHECK(news_during([] { ::operator delete(::operator new(64, std::align_val_t{64}), std::align_val_t{64}); }) == 1);
  CHECK(news_during([] { Tensor t = empty({4}); }) > 0);
}

TEST_CASE("building and dispatching a call allocates nothing", "[allocations]") {
  const OpId op = pass_through_op();
  const Tensor a = ones({2, 3}), b = ones({3});
  Tensor got;
  dispatch_keys(OpCall(op));  // first use: registration happens outside the count
  const long n = news_during([&] {
    OpCall c(op);
    c.push(a);
    c.push(b);
    c.attrs.get<PassAttrs>() = {Shape{2, 3, 4, 5, 6, 7, 8, 9}, 2.5, -1};  // the largest shape is stored inline
    got = call_op(c);
  });
  CHECK(n == 0);
  CHECK(got.is_same(a));
}

TEST_CASE("autocast's decide() allocates nothing beyond its result, as the kernel calls it", "[allocations][autocast]") {
  autocast::State st;
  st.enabled[static_cast<int>(DeviceType::CPU)] = true;
  autocast::InputInfo in[2];
  for (auto& i : in) {
    i.defined = true;
    i.dtype = kFloat32;
  }
  const Attrs attrs;
  autocast::Decision d;
  // As the autocast kernel calls it: without predicting the output dtype (explain does that).
  const long n = news_during(
      [&] { d = autocast::decide(DeviceType::CPU, OpId::mm, std::span(in), {}, attrs, st, /*predict=*/false); });
  CHECK(n == 0);
  CHECK(d.cast_to[0] == kBFloat16);  // mm is lowered: a real decision was made
  CHECK(d.cast_to[1] == kBFloat16);
}

TEST_CASE("an in-place op on existing tensors allocates nothing at all", "[allocations]") {
  Tensor a = ones({64}), b = full({64}, 0.5);
  add_(a, b);  // first use: registrations happen outside the count
  CHECK(news_during([&] { add_(a, b); }) == 0);
  CHECK(news_during([&] { mul_(a, b); }) == 0);
  CHECK(a.to_vector<float>()[0] == 1.0f);  // ((1 + 0.5) + 0.5) * 0.5
}
