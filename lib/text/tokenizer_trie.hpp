// A byte trie over token texts in flat arrays: finds every key that is a
// prefix of a text in one walk. The unigram Viterbi asks it for all tokens
// starting at each position; the special-token splitter asks which special
// tokens occur in a text at all.
//
// Flat arrays (one node vector, one edge vector with each node's children
// contiguous and sorted) keep a 250K-token vocabulary at a few bytes per
// node with no allocation per node; building is iterative, so a token of
// any length cannot overflow the stack.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace attendre::tokenizer {

class ByteTrie {
 public:
  struct Entry {
    std::string_view key;  // non-empty
    int32_t value = 0;     // >= 0
  };

  ByteTrie() = default;
  // Keys must be distinct (of equal keys, the first in `entries` order wins).
  explicit ByteTrie(std::vector<Entry> entries);

  // Calls visit(length, value) for each key that is a prefix of `text`,
  // shortest first.
  template <typename Visit>
  void for_each_prefix(std::string_view text, Visit&& visit) const {
    if (nodes_.empty()) return;
    uint32_t node = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      const int64_t next = child(node, static_cast<uint8_t>(text[i]));
      if (next < 0) return;
      node = static_cast<uint32_t>(next);
      if (nodes_[node].value >= 0) visit(i + 1, nodes_[node].value);
    }
  }

 private:
  struct Node {
    int32_t value = -1;  // the value of the key ending here, -1 when none
    uint32_t first_edge = 0;
    uint32_t edge_count = 0;
  };
  int64_t child(uint32_t node, uint8_t byte) const;  // -1 when absent

  std::vector<Node> nodes_;             // nodes_[0] is the root
  std::vector<uint8_t> edge_bytes_;     // sorted within each node's range
  std::vector<uint32_t> edge_targets_;  // node index of each edge
};

}  // namespace attendre::tokenizer
