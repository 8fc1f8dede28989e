#include "text/tokenizer_trie.hpp"

#include <algorithm>

namespace attendre::tokenizer {

ByteTrie::ByteTrie(std::vector<Entry> entries) {
  // Sorting makes each node's keys a contiguous range whose children are
  // the runs of equal bytes at the node's depth, already in byte order
  // (char_traits<char> compares as unsigned char). Stable, so that of equal
  // keys the first one given comes first and wins.
  std::stable_sort(entries.begin(), entries.end(),
                   [](const Entry& a, const Entry& b) { return a.key < b.key; });
  struct Work {
    uint32_t node;
    size_t begin, end, depth;  // entries [begin, end) share their first `depth` bytes
  };
  nodes_.emplace_back();
  std::vector<Work> stack{{0, 0, entries.size(), 0}};
  while (!stack.empty()) {
    const Work work = stack.back();
    stack.pop_back();
    size_t i = work.begin;
    if (i < work.end && entries[i].key.size() == work.depth) {
      nodes_[work.node].value = entries[i].value;
      while (i < work.end && entries[i].key.size() == work.depth) ++i;  // later duplicates lose
    }
    const auto first_edge = static_cast<uint32_t>(edge_bytes_.size());
    while (i < work.end) {
      const auto byte = static_cast<uint8_t>(entries[i].key[work.depth]);
      size_t run_end = i + 1;
      while (run_end < work.end && static_cast<uint8_t>(entries[run_end].key[work.depth]) == byte) ++run_end;
      const auto child = static_cast<uint32_t>(nodes_.size());
      nodes_.emplace_back();
      edge_bytes_.push_back(byte);
      edge_targets_.push_back(child);
      stack.push_back({child, i, run_end, work.depth + 1});
      i = run_end;
    }
    nodes_[work.node].first_edge = first_edge;
    nodes_[work.node].edge_count = static_cast<uint32_t>(edge_bytes_.size()) - first_edge;
  }
}

int64_t ByteTrie::child(uint32_t node, uint8_t byte) const {
  const Node& parent = nodes_[node];
  const auto first = edge_bytes_.begin() + parent.first_edge;
  const auto last = first + parent.edge_count;
  const auto found = std::lower_bound(first, last, byte);
  if (found == last || *found != byte) return -1;
  return edge_targets_[static_cast<size_t>(found - edge_bytes_.begin())];
}

}  // namespace attendre::tokenizer
