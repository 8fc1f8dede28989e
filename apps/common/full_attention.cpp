#include "full_attention.hpp"

#include "core/fail.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

namespace attendre::apps {

FullAttention::FullAttention(const AttentionShape& shape, double scale) : shape_(shape), scale_(scale) {}

void FullAttention::add_query(int64_t position, std::span<const float> q, int64_t horizon) {
  require(!keys_started_, "FullAttention: queries must be registered before the first key");
  require(q.size() == shape_.q_row(), "FullAttention: a query needs heads_q * head_dim values");
  require(queries_.empty() || queries_.back().position < position, "FullAttention: queries must come in order");
  Query query;
  query.position = position;
  query.horizon = horizon;
  query.q.assign(q.begin(), q.end());
  query.max.assign(shape_.heads_q, -std::numeric_limits<double>::infinity());
  query.sum.assign(shape_.heads_q, 0.0);
  queries_.push_back(std::move(query));
}

double FullAttention::logit(const Query& query, uint32_t head, std::span<const float> k) const {
  const uint32_t D = shape_.head_dim;
  const double* q = query.q.data() + uint64_t{head} * D;
  const float* key = k.data() + uint64_t{head / shape_.group()} * D;
  double dot = 0.0;
  for (uint32_t d = 0; d < D; ++d) dot += q[d] * static_cast<double>(key[d]);
  return scale_ * dot;
}

void FullAttention::add_key(int64_t position, std::span<const float> k) {
  require(position > last_key_, "FullAttention: keys must come in increasing positions");
  require(k.size() == shape_.kv_row(), "FullAttention: a key needs heads_kv * head_dim values");
  keys_started_ = true;
  last_key_ = position;
  for (Query& query : queries_) {
    if (query.horizon < position) continue;
    for (uint32_t h = 0; h < shape_.heads_q; ++h) {
      // Online log-sum-exp: rescale the running sum when the maximum moves.
      const double l = logit(query, h, k);
      if (l > query.max[h]) {
        query.sum[h] = query.sum[h] * std::exp(query.max[h] - l) + 1.0;
        query.max[h] = l;
      } else {
        query.sum[h] += std::exp(l - query.max[h]);
      }
    }
  }
}

const FullAttention::Query* FullAttention::lookup(int64_t position) const {
  const auto it = std::lower_bound(queries_.begin(), queries_.end(), position,
                                   [](const Query& q, int64_t p) { return q.position < p; });
  return it != queries_.end() && it->position == position ? &*it : nullptr;
}


double FullAttention::mass(int64_t query_position, std::span<const int64_t> keys, const KeyLookup& key) const {
  const Query* found = lookup(query_position);
  require(found != nullptr, "FullAttention: no query registered at position " + std::to_string(query_position));
  const Query& query = *found;
  double mass = 0.0;
  for (int64_t j : keys) {
    if (j < 0 || j > query.horizon || j > last_key_) continue;  // out of full attention's reach: weight 0
    const std::span<const float> k = key(j);
    for (uint32_t h = 0; h < shape_.heads_q; ++h)
      mass += std::exp(logit(query, h, k) - query.max[h] - std::log(query.sum[h]));
  }
  return mass / shape_.heads_q;
}

}  // namespace attendre::apps
