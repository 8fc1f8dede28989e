#include "stream.hpp"

#include "common/needle_placement.hpp"
#include "common/rng.hpp"

#include <algorithm>
#include <cmath>
#include <span>

namespace demo {
namespace {

using attendre::apps::Rng;

std::vector<double> unit_vector(Rng& rng, uint32_t dim) {
  std::vector<double> x(dim);
  double norm = 0.0;
  for (double& e : x) {
    e = rng.normal();
    norm += e * e;
  }
  for (double& e : x) e /= std::sqrt(norm);
  return x;
}

}  // namespace

attendre::ChunkView Stream::chunk(uint32_t first, uint32_t count) const {
  attendre::ChunkView c;
  c.rows = count;
  c.q = std::span<const float>(q).subspan(uint64_t{first} * shape.q_row(), uint64_t{count} * shape.q_row());
  c.k = std::span<const float>(k).subspan(uint64_t{first} * shape.kv_row(), uint64_t{count} * shape.kv_row());
  c.v = std::span<const float>(v).subspan(uint64_t{first} * shape.kv_row(), uint64_t{count} * shape.kv_row());
  c.positions = std::span<const int64_t>(positions).subspan(first, count);
  return c;
}

Stream generate_stream(const StreamParams& params) {
  const attendre::AttentionShape& shape = params.shape;
  const uint32_t D = shape.head_dim;
  const uint32_t T = params.tokens;
  Rng rng(params.seed);

  Stream s;
  s.shape = shape;
  s.tokens = T;
  s.q.resize(uint64_t{T} * shape.q_row());
  s.k.resize(uint64_t{T} * shape.kv_row());
  s.v.resize(uint64_t{T} * shape.kv_row());
  for (float& x : s.q) x = static_cast<float>(rng.normal());
  for (float& x : s.k) x = static_cast<float>(rng.normal());
  for (float& x : s.v) x = static_cast<float>(rng.normal());
  for (uint32_t p = 0; p < T; ++p) s.positions.push_back(p);

  // One direction per topic and key/value head, shared by needles and queries.
  std::vector<std::vector<double>> topic(uint64_t{params.topics} * shape.heads_kv);
  for (auto& t : topic) t = unit_vector(rng, D);
  auto direction = [&](uint32_t t, uint32_t g) -> const std::vector<double>& { return topic[t * shape.heads_kv + g]; };

  // Needles spread over the first 80% of the stream, so that most of them
  // stay relevant for hundreds of positions: a policy that keeps only the
  // recent past has long lost them by the end. At least 32 positions apart.
  const uint32_t needles = std::min(params.needles, T / 32);
  s.needles = attendre::apps::spread_positions(needles, 0.8 * T, 0.5, rng);
  std::vector<uint32_t> needle_topic;
  for (uint32_t i = 0; i < needles; ++i) {
    const int64_t p = s.needles[i];
    const uint32_t t = i % params.topics;
    needle_topic.push_back(t);
    for (uint32_t g = 0; g < shape.heads_kv; ++g) {
      float* key = s.k.data() + uint64_t(p) * shape.kv_row() + uint64_t{g} * D;
      // A little of the background noise remains, so needles are not clones.
      for (uint32_t d = 0; d < D; ++d)
        key[d] = static_cast<float>(params.needle_strength * direction(t, g)[d] + 0.5 * key[d]);
    }
  }

  // A topic query asks about a topic whose first needle it has passed: the
  // question refers back to something already planted in the stream.
  for (uint32_t p = 0; p < T; ++p) {
    if (rng.uniform() >= params.topic_query_fraction) continue;
    uint32_t known = 0;
    for (uint32_t i = 0; i < needles && s.needles[i] <= p; ++i) known = std::max(known, needle_topic[i] + 1);
    if (known == 0) continue;
    const uint32_t t = rng.below(known);
    for (uint32_t h = 0; h < shape.heads_q; ++h) {
      float* query = s.q.data() + uint64_t{p} * shape.q_row() + uint64_t{h} * D;
      const std::vector<double>& dir = direction(t, h / shape.group());
      for (uint32_t d = 0; d < D; ++d) query[d] += static_cast<float>(params.query_strength * dir[d]);
    }
  }
  return s;
}

}  // namespace demo
