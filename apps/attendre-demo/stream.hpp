// The demo's synthetic stream: random background keys and queries, plus a
// few planted "needle" keys that many later queries attend to heavily, so
// that an eviction policy's choices show up in the numbers.
#pragma once

#include <attendre/config.hpp>
#include <attendre/layer.hpp>

#include <cstdint>
#include <vector>

namespace demo {

struct StreamParams {
  attendre::AttentionShape shape{4, 2, 32};
  uint32_t tokens = 1536;
  uint32_t needles = 16;  // fewer are planted when the stream is too short for them
  uint32_t topics = 4;
  // Needles sit along a topic direction with this norm, topic queries carry
  // the direction with query_strength: their logit is about
  // needle_strength * query_strength / sqrt(head_dim) above the background,
  // enough for a handful of needles to outweigh thousands of random keys.
  double needle_strength = 8.0;
  double query_strength = 6.0;
  double topic_query_fraction = 0.5;
  uint64_t seed = 20240229;
};

struct Stream {
  attendre::AttentionShape shape;
  uint32_t tokens = 0;
  std::vector<float> q, k, v;       // row-major [tokens][heads][head_dim]
  std::vector<int64_t> positions;   // 0 .. tokens-1
  std::vector<int64_t> needles;     // planted positions, ascending

  // Rows [first, first + count) as a layer chunk; all rows are valid.
  attendre::ChunkView chunk(uint32_t first, uint32_t count) const;
};

// Deterministic for a given seed: the demo prints the same table every run.
Stream generate_stream(const StreamParams& params);

}  // namespace demo
