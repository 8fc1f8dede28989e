// The K/V memory on its own (paper Table 1): the device memory's insert()
// and retrieve() against the float64 reference memory, with evicted entries
// copied out, on randomized inserts and queries.
#include "dense_attention.hpp"
#include "support.hpp"

#include <attendre/gpu.hpp>
#include <attendre/reference/layer.hpp>

#include <doctest/doctest.h>

#include <numeric>

using namespace attendre;

TEST_CASE("key-value memory: device insert and retrieve match the reference, evicted entries included") {
  const AttentionShape shape{4, 2, 8};
  for (PolicyKind kind : {PolicyKind::lru, PolicyKind::lra_sum, PolicyKind::lfa}) {
    INFO(to_string(kind));
    KvMemoryConfig kv;
    kv.capacity = 11;
    kv.n_sink = 2;
    kv.policy = Policy{kind, kind == PolicyKind::lfa ? 0.02 : 0.0, {}};
    kv.copy_out_evicted = true;
    RetrievalConfig retrieval;
    retrieval.top_k = 4;
    retrieval.causal = kind == PolicyKind::lru;
    const uint32_t max_insert = 5, max_queries = 6;
    for (uint64_t attempt = 0;; ++attempt) {
      const test::Stream keys = test::random_stream(shape, 60, 300 + attempt, {0.1});
      const test::Stream queries = test::random_stream(shape, 60, 400 + attempt, {0.2});
      reference::KeyValueMemory cpu(shape, kv, max_insert);
      // Queries of the reference in its own batch type, valid rows only.
      auto batch = [&](uint32_t first, uint32_t count) {
        reference::QueryBatch b;
        for (uint32_t r = first; r < first + count; ++r) {
          if (!queries.valid[r]) continue;
          b.positions.push_back(keys.positions[std::min<uint32_t>(r, keys.rows - 1)]);
          b.tags.push_back(0);
          for (uint32_t i = 0; i < shape.q_row(); ++i) b.q.push_back(queries.q[uint64_t{r} * shape.q_row() + i]);
        }
        return b;
      };
      // Pass 1 on the reference only: skip streams with near-ties fp32 cannot resolve.
      uint32_t k_at = 0, q_at = 0;
      std::vector<std::pair<uint32_t, uint32_t>> inserts, retrievals;
      for (uint32_t step = 0; k_at < keys.rows; ++step) {
        const uint32_t n = 1 + step % max_insert, take = std::min(n, keys.rows - k_at);
        inserts.emplace_back(k_at, take);
        k_at += take;
        const uint32_t m = 1 + (step * 7) % max_queries, ask = std::min(m, queries.rows - q_at);
        retrievals.emplace_back(q_at, ask);
        q_at = (q_at + ask) % (queries.rows - max_queries);
      }
      std::vector<reference::Retrieval> expected_out;
      std::vector<EvictedEntries> expected_evicted;
      for (size_t i = 0; i < inserts.size(); ++i) {
        expected_evicted.push_back(cpu.insert(keys.chunk(inserts[i].first, inserts[i].second)));
        const reference::QueryBatch b = batch(retrievals[i].first, retrievals[i].second);
        expected_out.push_back(cpu.retrieve(b, retrieval, 1.0 / std::sqrt(8.0)));
        cpu.update_scores(b, expected_out.back());
      }
      if (cpu.min_decision_gap() < 2e-5 && attempt < 6) continue;

      auto device_owner = gpu::KeyValueMemory::create(test::gpu(), shape, kv, retrieval, max_insert, max_queries).value_or_throw();
      gpu::KeyValueMemory& device = *device_owner;
      reference::KeyValueMemory replay(shape, kv, max_insert);
      for (size_t i = 0; i < inserts.size(); ++i) {
        INFO("step " << i);
        const EvictedEntries evicted = device.insert(keys.chunk(inserts[i].first, inserts[i].second)).value_or_throw();
        CHECK(evicted.positions == expected_evicted[i].positions);
        CHECK(evicted.keys == expected_evicted[i].keys);
        CHECK(evicted.values == expected_evicted[i].values);
        // The device retrieves with queries placed at the key stream's positions (for the causal mask).
        ChunkView q = queries.chunk(retrievals[i].first, retrievals[i].second);
        std::vector<int64_t> at;
        for (uint32_t r = retrievals[i].first; r < retrievals[i].first + retrievals[i].second; ++r)
          at.push_back(keys.positions[std::min<uint32_t>(r, keys.rows - 1)]);
        q.positions = at;
        const std::vector<float> out = device.retrieve(q).value_or_throw();
        const std::vector<double>& want = expected_out[i].outputs;
        REQUIRE(out.size() == want.size());
        for (size_t j = 0; j < out.size(); ++j) CHECK(out[j] == doctest::Approx(want[j]).epsilon(2e-4).scale(1.0));
        const reference::QueryBatch b = batch(retrievals[i].first, retrievals[i].second);
        replay.insert(keys.chunk(inserts[i].first, inserts[i].second));
        replay.update_scores(b, replay.retrieve(b, retrieval, 1.0 / std::sqrt(8.0)));
        const MemorySnapshot e = replay.snapshot(), a = device.snapshot().value_or_throw();
        CHECK(a.positions == e.positions);
        for (size_t j = 0; j < e.scores.size() && j < a.scores.size(); ++j)
          CHECK(a.scores[j] == doctest::Approx(e.scores[j]).epsilon(2e-4).scale(1.0));
      }
      break;
    }
  }
  test::check_no_validation_messages(test::gpu());
}

// fifo with K >= M reads no per-entry weight: retrieval takes flash_attend
// (one pass, no logits), whose split slots are what lets lavapipe attend to
// more entries than its loop limit allows one invocation (score + attend
// refuse past about 20,000).
TEST_CASE("key-value memory: fifo full attention over 50000 entries matches dense attention") {
  const AttentionShape shape{4, 2, 8};
  const uint32_t M = 50000, max_insert = 512, queries = 4;
  KvMemoryConfig kv;
  kv.capacity = M;
  kv.policy = Policy::fifo();
  RetrievalConfig retrieval;
  retrieval.top_k = M;
  test::Stream s = test::random_stream(shape, M, 900);
  const test::Stream q = test::random_stream(shape, queries, 901);
  auto device_owner = gpu::KeyValueMemory::create(test::gpu(), shape, kv, retrieval, max_insert, queries).value_or_throw();
  gpu::KeyValueMemory& device = *device_owner;
  for (uint32_t first = 0; first < M; first += max_insert) device.insert(s.chunk(first, std::min(max_insert, M - first))).value_or_throw();
  const std::vector<float> out = device.retrieve(q.chunk(0, queries)).value_or_throw();
  // dense_attention reads query rows from s.q: the queries replace its first rows.
  std::copy(q.q.begin(), q.q.end(), s.q.begin());
  std::vector<uint32_t> all(M);
  std::iota(all.begin(), all.end(), 0u);
  REQUIRE(out.size() == uint64_t{queries} * shape.q_row());
  for (uint32_t i = 0; i < queries; ++i) {
    const std::vector<double> want = test::dense_attention(s, i, all);
    for (uint32_t j = 0; j < shape.q_row(); ++j)
      CHECK(out[uint64_t{i} * shape.q_row() + j] == doctest::Approx(want[j]).epsilon(2e-4).scale(1.0));
  }
  test::check_no_validation_messages(test::gpu());
}
