// Shape: a list of up to kMaxDims int64 values stored inline (sizes, strides,
// dim lists). No heap, so OpCall attribute blocks stay allocation-free.
// See Note [Fixed maximum rank].
#pragma once

#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace mixt {

constexpr int kMaxDims = 8;

class Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> v) { assign(v.begin(), static_cast<int64_t>(v.size())); }
  Shape(std::span<const int64_t> v) { assign(v.data(), static_cast<int64_t>(v.size())); }
  Shape(const std::vector<int64_t>& v) { assign(v.data(), static_cast<int64_t>(v.size())); }
  // A shape of `n` copies of `value`.
  static Shape filled(int n, int64_t value);

  int size() const { return n_; }
  bool empty() const { return n_ == 0; }
  int64_t operator[](int i) const { return d_[i]; }
  int64_t& operator[](int i) { return d_[i]; }
  const int64_t* data() const { return d_; }
  int64_t* data() { return d_; }
  const int64_t* begin() const { return d_; }
  const int64_t* end() const { return d_ + n_; }
  int64_t* begin() { return d_; }
  int64_t* end() { return d_ + n_; }
  int64_t back() const { return d_[n_ - 1]; }
  std::span<const int64_t> span() const { return {d_, static_cast<size_t>(n_)}; }
  std::vector<int64_t> vec() const { return {begin(), end()}; }

  // Appends one value; throws mixt::Error beyond kMaxDims.
  void push_back(int64_t v);
  // Inserts `v` before position `i`.
  void insert(int i, int64_t v);
  // Removes position `i`.
  void erase(int i);
  // Sets the length (new entries are `fill`).
  void resize(int n, int64_t fill = 0);
  // Product of the values (1 for an empty shape).
  int64_t numel() const;
  // "[2, 3]".
  std::string str() const;

  bool operator==(const Shape& o) const;
  bool operator!=(const Shape& o) const { return !(*this == o); }

 private:
  void assign(const int64_t* p, int64_t n);
  int64_t d_[kMaxDims] = {};
  int8_t n_ = 0;
};

// Row-major (C-order) strides for `sizes`.
Shape contiguous_strides(const Shape& sizes);
// Broadcast of two shapes, or throws mixt::Error naming `op`.
Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op);
// `shape` with its one -1 entry (if any) inferred from `numel`; throws when the
// sizes cannot hold exactly `numel` elements.
Shape infer_size(const Shape& shape, int64_t numel, const char* op);
// Strides that let `new_sizes` view the elements of (sizes, strides) in the same
// order, or nullopt when the memory cannot be described that way.
std::optional<Shape> view_strides(const Shape& sizes, const Shape& strides, const Shape& new_sizes);
// Wraps a possibly negative dim into [0, ndim); throws mixt::Error naming `op`.
int64_t wrap_dim(int64_t dim, int64_t ndim, const char* op);

// Prints Shape::str() (fmt: <mixt/runtime/formatters.h>).
std::ostream& operator<<(std::ostream& os, const Shape& s);

}  // namespace mixt
