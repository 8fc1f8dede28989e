// DataOnlyMemory (paper Table 1, spec section 1): a FIFO of capacity N whose
// insert() returns what overflowed, oldest first. The Q memory of a layer and
// the encoder output memory (spec 5) are both this structure.
#pragma once

#include <cstddef>
#include <deque>
#include <vector>

namespace attendre {

template <class T>
class DataOnlyMemory {
 public:
  explicit DataOnlyMemory(size_t capacity) : capacity_(capacity) {}

  // Appends `items` in order; evicts and returns the oldest count - N entries
  // in insertion order. With N = 0 everything inserted comes straight back.
  std::vector<T> insert(std::vector<T> items) {
    for (T& item : items) entries_.push_back(std::move(item));
    std::vector<T> evicted;
    while (entries_.size() > capacity_) {
      evicted.push_back(std::move(entries_.front()));
      entries_.pop_front();
    }
    return evicted;
  }

  // The residual entries in insertion order (used by flush).
  std::vector<T> get_all() const { return {entries_.begin(), entries_.end()}; }
  // Removes every entry, returning them in insertion order.
  std::vector<T> take_all() {
    std::vector<T> all(std::make_move_iterator(entries_.begin()), std::make_move_iterator(entries_.end()));
    entries_.clear();
    return all;
  }

  size_t size() const { return entries_.size(); }
  size_t capacity() const { return capacity_; }
  const std::deque<T>& entries() const { return entries_; }

 private:
  size_t capacity_;
  std::deque<T> entries_;
};

}  // namespace attendre
