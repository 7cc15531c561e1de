// StateDict: named tensors (in insertion order) plus string metadata — what
// modules, optimizers and the grad scaler save, and what checkpoints store.
#pragma once

#include <cstddef>
#include <deque>
#include <initializer_list>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <mixt/runtime/tensor.h>

namespace mixt::io {

// Note [StateDict index]: StateDict::tensors is a sequence of (name, tensor) pairs
// in insertion order, used like a std::vector, with a hash index from each name to
// its first entry: find and set take constant time, so building or loading N
// entries costs O(N) (a linear scan per call made it O(N^2)). The name in each pair
// is const, so nothing can rename an entry behind the index's back; appending keeps
// the index in step, erasing rebuilds it. A name may be appended twice (savers
// refuse that); lookups find the first. The pairs live in a deque, whose elements
// never move, so the index keys are views of the stored names.

// The tensors of a StateDict (Note [StateDict index]).
class NamedTensorList {
 public:
  using value_type = std::pair<const std::string, Tensor>;
  using Items = std::deque<value_type>;  // grows without copying the (const) names
  using iterator = Items::iterator;
  using const_iterator = Items::const_iterator;
  using size_type = size_t;
  static constexpr size_t npos = static_cast<size_t>(-1);

  NamedTensorList() = default;
  NamedTensorList(std::initializer_list<value_type> items) { append(items.begin(), items.end()); }
  NamedTensorList(const NamedTensorList& other) { append(other.begin(), other.end()); }
  NamedTensorList(NamedTensorList&& other) = default;  // a deque's elements stay put: the index stays valid
  NamedTensorList& operator=(const NamedTensorList& other) {
    if (this != &other) *this = NamedTensorList(other);
    return *this;
  }
  NamedTensorList& operator=(NamedTensorList&& other) = default;
  NamedTensorList& operator=(std::initializer_list<value_type> items) { return *this = NamedTensorList(items); }

  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }
  const_iterator cbegin() const { return items_.cbegin(); }
  const_iterator cend() const { return items_.cend(); }
  value_type& operator[](size_t i) { return items_[i]; }
  const value_type& operator[](size_t i) const { return items_[i]; }
  value_type& at(size_t i) { return items_.at(i); }
  const value_type& at(size_t i) const { return items_.at(i); }
  value_type& front() { return items_.front(); }
  const value_type& front() const { return items_.front(); }
  value_type& back() { return items_.back(); }
  const value_type& back() const { return items_.back(); }
  // Prepares the index for `n` entries.
  void reserve(size_t n) { index_.reserve(n); }

  // Appends an entry (a repeated name is kept; lookups find the first).
  template <class... A>
  value_type& emplace_back(A&&... args) {
    value_type& e = items_.emplace_back(std::forward<A>(args)...);
    index_.try_emplace(std::string_view(e.first), items_.size() - 1);
    return e;
  }
  void push_back(value_type e) { emplace_back(std::move(e)); }
  // Removes entries, keeping the order of the rest (O(size)).
  iterator erase(const_iterator first, const_iterator last) {
    const auto at = first - items_.cbegin();
    NamedTensorList kept;
    kept.reserve(items_.size() - static_cast<size_t>(last - first));
    kept.append(items_.cbegin(), first);
    kept.append(last, items_.cend());
    *this = std::move(kept);
    return items_.begin() + at;
  }
  iterator erase(const_iterator pos) { return erase(pos, pos + 1); }
  void pop_back() { erase(items_.cend() - 1); }
  void clear() {
    items_.clear();
    index_.clear();
  }
  // Position of the first entry called `name`, or npos.
  size_t index_of(std::string_view name) const {
    const auto it = index_.find(name);
    return it == index_.end() ? npos : it->second;
  }

 private:
  template <class It>
  void append(It first, It last) {
    for (; first != last; ++first) emplace_back(*first);
  }

  Items items_;
  std::unordered_map<std::string_view, size_t> index_;  // views of the names in items_
};

struct StateDict {
  NamedTensorList tensors;
  std::map<std::string, std::string> metadata;

  // The tensor called `name`, or nullptr.
  const Tensor* find(std::string_view name) const {
    const size_t i = tensors.index_of(name);
    return i == NamedTensorList::npos ? nullptr : &tensors[i].second;
  }
  // Adds (or replaces) a tensor.
  void set(std::string name, Tensor t) {
    const size_t i = tensors.index_of(name);
    if (i == NamedTensorList::npos)
      tensors.emplace_back(std::move(name), std::move(t));
    else
      tensors[i].second = std::move(t);
  }
  // Entries of `other` under `prefix` (tensors and metadata keys alike).
  void merge(const StateDict& other, const std::string& prefix) {
    for (const auto& [n, t] : other.tensors) set(prefix + n, t);
    for (const auto& [k, v] : other.metadata) metadata[prefix + k] = v;
  }
  // The entries whose names start with `prefix`, with the prefix removed.
  StateDict extract(const std::string& prefix) const {
    StateDict out;
    for (const auto& [n, t] : tensors)
      if (n.compare(0, prefix.size(), prefix) == 0) out.tensors.emplace_back(n.substr(prefix.size()), t);
    for (const auto& [k, v] : metadata)
      if (k.compare(0, prefix.size(), prefix) == 0) out.metadata[k.substr(prefix.size())] = v;
    return out;
  }
};

}  // namespace mixt::io
