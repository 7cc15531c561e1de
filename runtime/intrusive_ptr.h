// A minimal intrusive reference-counted pointer: one allocation per object, an
// atomic count inside it. T must have a `std::atomic<int32_t> refcount_` member.
#pragma once

#include <atomic>
#include <cstdint>
#include <utility>

namespace mixt {

template <class T>
class IntrusivePtr {
 public:
  IntrusivePtr() = default;
  explicit IntrusivePtr(T* p) : p_(p) { retain(); }
  IntrusivePtr(const IntrusivePtr& o) : p_(o.p_) { retain(); }
  IntrusivePtr(IntrusivePtr&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  IntrusivePtr& operator=(const IntrusivePtr& o) {
    IntrusivePtr(o).swap(*this);
    return *this;
  }
  IntrusivePtr& operator=(IntrusivePtr&& o) noexcept {
    IntrusivePtr(std::move(o)).swap(*this);
    return *this;
  }
  ~IntrusivePtr() { release(); }

  T* get() const { return p_; }
  T* operator->() const { return p_; }
  T& operator*() const { return *p_; }
  explicit operator bool() const { return p_ != nullptr; }
  void swap(IntrusivePtr& o) noexcept { std::swap(p_, o.p_); }
  void reset() { IntrusivePtr().swap(*this); }
  int32_t use_count() const { return p_ ? p_->refcount_.load(std::memory_order_relaxed) : 0; }
  bool operator==(const IntrusivePtr& o) const { return p_ == o.p_; }

  template <class... A>
  static IntrusivePtr make(A&&... a) { return IntrusivePtr(new T(std::forward<A>(a)...)); }

 private:
  void retain() {
    if (p_) p_->refcount_.fetch_add(1, std::memory_order_relaxed);
  }
  void release() {
    if (p_ && p_->refcount_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete p_;
  }
  T* p_ = nullptr;
};

}  // namespace mixt
