// The retained attention mass of a read, defined as in attendre-demo: for a
// query of block 0, the share of full attention's weight (over every key
// up to the query's horizon, averaged over heads) that falls on the keys
// block 0's memory held when that query retrieved; the mean over queries.
// 1 for a memory that never evicts. Block 0 only: its queries and keys
// depend on the tokens alone, so the host computes them exactly, while a
// deeper block's depend on what the memories above it kept.
//
// The queries are those block 0 lets retrieve at sampled steps (where the
// read takes its snapshots), thinned to a budget of query-key pairs so that
// the float64 yardstick stays a small part of a long read.
#pragma once

#include "backend.hpp"
#include "common/full_attention.hpp"
#include "document.hpp"
#include "schedule.hpp"

#include <attendre/config.hpp>

#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace reader {

class Yardstick {
 public:
  static constexpr uint64_t kMaxPairs = 5'000'000;

  // Two walks over the document: one for the chosen queries, one streaming
  // every key past them. `shape` and `scale` are block 0's.
  Yardstick(const Backend& backend, Document& document, const Schedule& schedule,
            const attendre::AttentionShape& shape, double scale);

  // The chosen queries block 0 retrieves with at input step `step`.
  std::span<const int64_t> queries_at(uint64_t step) const;
  size_t queries() const { return full_.queries(); }

  double mass(int64_t query, std::span<const int64_t> held, const attendre::apps::FullAttention::KeyLookup& key) const {
    return full_.mass(query, held, key);
  }

 private:
  attendre::apps::FullAttention full_;
  std::map<uint64_t, std::vector<int64_t>> by_step_;
};

// Block 0's keys of the positions a read may still ask about: those held
// at the last snapshot and those fed since, so the yardstick's lookups cost
// no recomputation and the memory stays O(M + stride * S).
class KeyWindow {
 public:
  explicit KeyWindow(const attendre::AttentionShape& shape) : shape_(shape) {}
  void add(const Backend& backend, const Token& token, int64_t position);
  // Forgets every position not in `held` (ascending).
  void keep_only(std::span<const int64_t> held);
  std::span<const float> key(int64_t position) const;

 private:
  attendre::AttentionShape shape_;
  std::map<int64_t, std::vector<float>> keys_;
  std::vector<float> q_, v_;  // scratch for first_block_qkv
};

}  // namespace reader
