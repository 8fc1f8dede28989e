// Float64 reference of the K/V memory: insertion with eviction (spec 2.1),
// top-K retrieval and attend (2.2, 2.3) and the policy updates (2.4).
#include "core/half.hpp"
#include "reference/ops.hpp"
#include "core/numerics.hpp"
#include "core/positions.hpp"
#include "core/fail.hpp"

#include <attendre/error.hpp>
#include <attendre/reference/layer.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace attendre::reference {
namespace {

// Spec 2.2: larger logit first, then smaller position.
struct ByLogitThenPosition {
  const std::vector<double>& logit;
  const std::vector<KeyValueMemory::Entry>& entries;
  bool operator()(uint32_t a, uint32_t b) const {
    if (logit[a] != logit[b]) return logit[a] > logit[b];
    return entries[a].position < entries[b].position;
  }
};

}  // namespace

KeyValueMemory::KeyValueMemory(const AttentionShape& shape, const KvMemoryConfig& config, uint32_t max_insert)
    : shape_(shape), config_(config) {
  LayerConfig check;
  check.shape = shape;
  check.chunk = max_insert;
  check.kv = config;
  check.retrieval.top_k = 1;
  check.check().or_throw();
  // Entries grow with what is held: M may be far larger than any stream.
}

void KeyValueMemory::note_gap(double kept, double dropped) const {
  // Relative to the magnitude, with 1 as the floor so gaps near 0 stay absolute.
  const double gap = std::abs(kept - dropped) / std::max({1.0, std::abs(kept), std::abs(dropped)});
  if (gap > 0.0) min_gap_ = std::min(min_gap_, gap);
}

double KeyValueMemory::attention_initial_score() const {
  const InitialScore& init = config_.policy.initial;
  if (init.kind == InitialScore::Kind::constant) return init.value;
  // Population statistics over the held, unpinned entries; none gives 0.
  double sum = 0.0;
  size_t n = 0;
  for (const Entry& e : entries_)
    if (!pinned(e.position)) sum += e.score, ++n;
  if (n == 0) return 0.0;
  const double mean = sum / static_cast<double>(n);
  double squares = 0.0;
  for (const Entry& e : entries_)
    if (!pinned(e.position)) squares += (e.score - mean) * (e.score - mean);
  // The device stores scores in fp32: the clamp keeps both backends equal
  // (and finite) when k * sigma leaves the fp32 range.
  return numerics::clamp_to_float32(mean - init.k * std::sqrt(squares / static_cast<double>(n)));
}

double KeyValueMemory::initial_score(int64_t position, double attention_initial) const {
  switch (config_.policy.kind) {
    case PolicyKind::fifo:
    case PolicyKind::lru: return static_cast<double>(position);
    case PolicyKind::lfu: return 0.0;
    default: return attention_initial;
  }
}

EvictedEntries KeyValueMemory::insert(const ChunkView& chunk) {
  // fp32 inputs as every backend reads them: subnormals are zero.
  std::vector<double> k, v;
  for (float x : chunk.k) k.push_back(numerics::flush_subnormal(x));
  for (float x : chunk.v) v.push_back(numerics::flush_subnormal(x));
  return insert_rows(k, v, chunk.positions, chunk.valid, chunk.tags);
}

EvictedEntries KeyValueMemory::insert_rows(std::span<const double> k, std::span<const double> v,
                                           std::span<const int64_t> positions, std::span<const uint8_t> valid,
                                           std::span<const uint32_t> tags) {
  const size_t kv_row = shape_.kv_row();
  const double attention_initial = attention_initial_score();  // over entries held before insertion
  std::vector<Entry> fresh;
  for (size_t r = 0; r < positions.size(); ++r) {
    if (!valid.empty() && valid[r] == 0) continue;
    Entry e;
    e.position = positions[r];
    e.score = initial_score(e.position, attention_initial);
    e.tag = tags.empty() ? 0u : tags[r];
    // Stored as the device stores them (fp16 memories round here).
    for (size_t i = r * kv_row; i < (r + 1) * kv_row; ++i) {
      e.key.push_back(half::stored_value(k[i], config_.storage));
      e.value.push_back(half::stored_value(v[i], config_.storage));
    }
    fresh.push_back(std::move(e));
  }

  const size_t held = entries_.size();
  std::vector<Entry> all = std::move(entries_);
  for (Entry& e : fresh) all.push_back(std::move(e));
  entries_.clear();

  std::vector<bool> evict(all.size(), false);
  const size_t total = all.size();
  if (total > config_.capacity) {
    const size_t needed = total - config_.capacity;
    // The recent window ends at the newest position held after insertion.
    int64_t newest = all.front().position;
    for (const Entry& e : all) newest = std::max(newest, e.position);
    std::vector<uint32_t> eligible;
    for (uint32_t i = 0; i < total; ++i) {
      const bool is_new = i >= held;
      if (pinned(all[i].position) || (is_new && config_.protect_new)) continue;
      if (in_recent_window(all[i].position, newest, config_.n_recent)) continue;
      eligible.push_back(i);
    }
    if (eligible.size() < needed) {
      entries_ = std::move(all);
      entries_.resize(held);  // the memory is left as it was before this insertion
      infeasible_insertion(needed, eligible.size()).or_throw();
    }
    // Lowest priority first; ties: smaller position (the older entry) first.
    std::partial_sort(eligible.begin(), eligible.begin() + static_cast<std::ptrdiff_t>(needed), eligible.end(),
                      [&](uint32_t a, uint32_t b) {
                        if (all[a].score != all[b].score) return all[a].score < all[b].score;
                        return all[a].position < all[b].position;
                      });
    for (size_t i = 0; i < needed; ++i) evict[eligible[i]] = true;
    if (eligible.size() > needed) {
      const auto next = std::min_element(eligible.begin() + static_cast<std::ptrdiff_t>(needed), eligible.end(),
                                         [&](uint32_t a, uint32_t b) { return all[a].score < all[b].score; });
      note_gap(all[eligible[needed - 1]].score, all[*next].score);
    }
  }

  std::vector<const Entry*> gone;
  for (size_t i = 0; i < total; ++i)
    if (evict[i]) gone.push_back(&all[i]);
  std::sort(gone.begin(), gone.end(), [](const Entry* a, const Entry* b) { return a->position < b->position; });
  EvictedEntries evicted;
  for (const Entry* e : gone) {
    evicted.positions.push_back(e->position);
    evicted.scores.push_back(e->score);
    for (double x : e->key) evicted.keys.push_back(static_cast<float>(x));
    for (double x : e->value) evicted.values.push_back(static_cast<float>(x));
  }
  for (size_t i = 0; i < total; ++i)
    if (!evict[i]) entries_.push_back(std::move(all[i]));
  return evicted;
}

Retrieval KeyValueMemory::retrieve(const QueryBatch& queries, const RetrievalConfig& retrieval, double scale,
                                   const PairDot& pair_dot) const {
  const uint32_t heads = shape_.heads_q, dim = shape_.head_dim, group = shape_.group();
  if (retrieval.bias == BiasKind::t5) positions::check(retrieval.t5, heads, true, "").or_throw();
  const size_t n = entries_.size();
  Retrieval out;
  out.queries = static_cast<uint32_t>(queries.size());
  out.heads = heads;
  out.selected.resize(out.queries * heads);
  out.logits.resize(out.queries * heads);
  out.weights.resize(out.queries * heads);
  out.outputs.assign(static_cast<size_t>(out.queries) * heads * dim, 0.0);

  std::vector<std::vector<double>> logit(heads, std::vector<double>(n));
  std::vector<double> summed(n);
  for (uint32_t qi = 0; qi < out.queries; ++qi) {
    const int64_t pq = queries.positions[qi];
    std::vector<uint32_t> unmasked;
    for (uint32_t j = 0; j < n; ++j) {
      const Entry& e = entries_[j];
      if (retrieval.causal && e.position > pq) continue;
      if (retrieval.window > 0 && pq - e.position >= int64_t{retrieval.window}) continue;
      if (retrieval.tag_mask && e.tag != queries.tags[qi]) continue;
      unmasked.push_back(j);
    }
    for (uint32_t h = 0; h < heads; ++h) {
      const double* q = &queries.q[(static_cast<size_t>(qi) * heads + h) * dim];
      for (uint32_t j : unmasked) {
        const Entry& e = entries_[j];
        const double* k = &e.key[static_cast<size_t>(h / group) * dim];
        double dot = 0.0;
        if (pair_dot) dot = pair_dot(h, q, pq, e);
        else for (uint32_t d = 0; d < dim; ++d) dot += q[d] * k[d];
        logit[h][j] = ops::soft_cap(scale * dot, retrieval.soft_cap) + positions::logit_bias(retrieval, h, heads, pq, e.position);
      }
    }
    const size_t keep = std::min<size_t>(retrieval.top_k, unmasked.size());
    std::vector<uint32_t> shared_set;
    if (retrieval.mode == RetrievalMode::shared) {
      for (uint32_t j : unmasked) {
        summed[j] = 0.0;
        for (uint32_t h = 0; h < heads; ++h) summed[j] += logit[h][j];
      }
      shared_set = unmasked;
      std::sort(shared_set.begin(), shared_set.end(), ByLogitThenPosition{summed, entries_});
      if (keep > 0 && keep < shared_set.size()) note_gap(summed[shared_set[keep - 1]], summed[shared_set[keep]]);
      shared_set.resize(keep);
    }
    for (uint32_t h = 0; h < heads; ++h) {
      const size_t row = static_cast<size_t>(qi) * heads + h;
      std::vector<uint32_t> set = shared_set;
      if (retrieval.mode == RetrievalMode::per_head) {
        set = unmasked;
        std::sort(set.begin(), set.end(), ByLogitThenPosition{logit[h], entries_});
        if (keep > 0 && keep < set.size()) note_gap(logit[h][set[keep - 1]], logit[h][set[keep]]);
        set.resize(keep);
      }
      std::vector<double> l(set.size()), w(set.size());
      double top = -std::numeric_limits<double>::infinity();
      for (size_t r = 0; r < set.size(); ++r) l[r] = logit[h][set[r]], top = std::max(top, l[r]);
      double total = 0.0;
      for (size_t r = 0; r < set.size(); ++r) w[r] = std::exp(l[r] - top), total += w[r];
      double* o = &out.outputs[row * dim];
      for (size_t r = 0; r < set.size(); ++r) {
        w[r] /= total;
        const double* v = &entries_[set[r]].value[static_cast<size_t>(h / group) * dim];
        for (uint32_t d = 0; d < dim; ++d) o[d] += w[r] * v[d];
      }
      out.selected[row] = std::move(set);
      out.logits[row] = std::move(l);
      out.weights[row] = std::move(w);
    }
  }
  return out;
}

void KeyValueMemory::update_scores(const QueryBatch& queries, const Retrieval& retrieval) {
  if (queries.size() == 0) return;  // spec 2.4: no query, no change, no decay
  const size_t n = entries_.size(), heads = retrieval.heads;
  // u(q,j) = (1/H_q) sum_h a(q,h,j); used(q,j) = j in R(q,h) for some h.
  std::vector<std::vector<double>> usage(queries.size(), std::vector<double>(n, 0.0));
  std::vector<std::vector<bool>> used(queries.size(), std::vector<bool>(n, false));
  for (size_t qi = 0; qi < queries.size(); ++qi) {
    for (size_t h = 0; h < heads; ++h) {
      const size_t row = qi * heads + h;
      for (size_t r = 0; r < retrieval.selected[row].size(); ++r) {
        usage[qi][retrieval.selected[row][r]] += retrieval.weights[row][r];
        used[qi][retrieval.selected[row][r]] = true;
      }
    }
    for (double& x : usage[qi]) x *= 1.0 / static_cast<double>(heads);
  }

  const int64_t step_max = queries.positions.back();  // queries come in stream order
  const int64_t i_max = seen_queries_ ? std::max(max_query_position_, step_max) : step_max;
  const int64_t i_prev = seen_queries_ ? max_query_position_ : i_max;
  const double lambda = config_.policy.lambda;

  for (size_t j = 0; j < n; ++j) {
    double& s = entries_[j].score;
    switch (config_.policy.kind) {
      case PolicyKind::fifo: break;
      case PolicyKind::lru:
        for (size_t qi = 0; qi < queries.size(); ++qi)
          if (used[qi][j]) s = std::max(s, static_cast<double>(queries.positions[qi]));
        break;
      case PolicyKind::lfu:
        for (size_t qi = 0; qi < queries.size(); ++qi) s += used[qi][j] ? 1.0 : 0.0;
        break;
      case PolicyKind::lra_last: s = usage.back()[j]; break;
      case PolicyKind::lra_max:
        s = 0.0;
        for (size_t qi = 0; qi < queries.size(); ++qi) s = std::max(s, usage[qi][j]);
        break;
      case PolicyKind::lra_sum:
        s = 0.0;
        for (size_t qi = 0; qi < queries.size(); ++qi) s += usage[qi][j];
        break;
      case PolicyKind::lfa: {
        double fresh = 0.0;
        for (size_t qi = 0; qi < queries.size(); ++qi)
          fresh += usage[qi][j] * std::exp(lambda * static_cast<double>(queries.positions[qi] - i_max));
        s = s * std::exp(lambda * static_cast<double>(i_prev - i_max)) + fresh;
        break;
      }
    }
  }
  seen_queries_ = true;
  max_query_position_ = i_max;
}

MemorySnapshot KeyValueMemory::snapshot() const {
  std::vector<uint32_t> order(entries_.size());
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return entries_[a].position < entries_[b].position; });
  MemorySnapshot snap;
  for (uint32_t i : order) {
    snap.positions.push_back(entries_[i].position);
    snap.scores.push_back(entries_[i].score);
  }
  return snap;
}

}  // namespace attendre::reference
