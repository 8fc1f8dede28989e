// Full attention as the yardstick a bounded memory is measured against (the
// demo's and the reader's "retained attention mass"): for chosen queries, the
// softmax over every key up to the query's horizon, i.e. what an unbounded
// K/V memory would hold under the same wait. Keys stream by in position
// order and only each query's normalizer is kept, so the memory is
// O(queries) whatever the stream's length; float64 throughout.
#pragma once

#include <attendre/config.hpp>

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

namespace attendre::apps {

class FullAttention {
 public:
  // A key's vector [heads_kv][head_dim] by position; called only for
  // positions the caller asked about.
  using KeyLookup = std::function<std::span<const float>(int64_t position)>;

  FullAttention(const AttentionShape& shape, double scale);

  // Registers the query at `position` (q: [heads_q][head_dim]); it attends
  // to every key at a position <= horizon. All queries come before the
  // first key, so that each normalizer sees every key in its reach.
  void add_query(int64_t position, std::span<const float> q, int64_t horizon);
  // The next key in stream order (positions increasing): joins the
  // normalizer of every query whose horizon reaches it.
  void add_key(int64_t position, std::span<const float> k);

  // The weight full attention from query `query` (a registered position)
  // puts on the keys at `keys`, averaged over heads, in [0, 1]. Keys past
  // the query's horizon weigh 0: full attention could not see them either.
  double mass(int64_t query, std::span<const int64_t> keys, const KeyLookup& key) const;

  size_t queries() const { return queries_.size(); }
  bool has_query(int64_t position) const { return lookup(position) != nullptr; }

 private:
  struct Query {
    int64_t position = 0, horizon = 0;
    std::vector<double> q;               // [heads_q][head_dim]
    std::vector<double> max, sum;        // per head: running log-sum-exp as max + log(sum)
  };
  const Query* lookup(int64_t position) const;
  double logit(const Query& query, uint32_t head, std::span<const float> k) const;

  AttentionShape shape_;
  double scale_;
  std::vector<Query> queries_;  // ascending by position
  int64_t last_key_ = -1;
  bool keys_started_ = false;
};

}  // namespace attendre::apps
