#include "feeder.hpp"

namespace bench {
namespace {

std::vector<float> normal(size_t count, std::mt19937_64& rng) {
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = dist(rng);
  return v;
}

}  // namespace

LayerFeeder::LayerFeeder(const attendre::AttentionShape& shape, uint32_t rows, uint64_t seed)
    : shape_(shape), rows_(rows), positions_(rows) {
  std::mt19937_64 rng(seed);
  q_ = normal(size_t{kPool} * rows * shape.q_row(), rng);
  k_ = normal(size_t{kPool} * rows * shape.kv_row(), rng);
  v_ = normal(size_t{kPool} * rows * shape.kv_row(), rng);
}

attendre::ChunkView LayerFeeder::next() {
  for (uint32_t r = 0; r < rows_; ++r) positions_[r] = next_position_++;
  const size_t q_row = shape_.q_row(), kv_row = shape_.kv_row(), t = turn_++ % kPool;
  attendre::ChunkView c;
  c.rows = rows_;
  c.q = std::span<const float>(q_).subspan(t * rows_ * q_row, rows_ * q_row);
  c.k = std::span<const float>(k_).subspan(t * rows_ * kv_row, rows_ * kv_row);
  c.v = std::span<const float>(v_).subspan(t * rows_ * kv_row, rows_ * kv_row);
  c.positions = positions_;
  return c;
}

StackFeeder::StackFeeder(const attendre::StackConfig& config, uint64_t seed)
    : rows_(config.chunk), hidden_(config.hidden), tokens_(config.vocab > 0), positions_(config.chunk) {
  std::mt19937_64 rng(seed);
  if (tokens_) {
    ids_.resize(size_t{kPool} * rows_);
    for (uint32_t& id : ids_) id = static_cast<uint32_t>(rng() % config.vocab);
  } else {
    embeddings_ = normal(size_t{kPool} * rows_ * hidden_, rng);
  }
}

attendre::StackChunk StackFeeder::next() {
  for (uint32_t r = 0; r < rows_; ++r) positions_[r] = next_position_++;
  const size_t t = turn_++ % kPool;
  attendre::StackChunk c;
  c.rows = rows_;
  if (tokens_) c.tokens = std::span<const uint32_t>(ids_).subspan(t * rows_, rows_);
  else c.embeddings = std::span<const float>(embeddings_).subspan(t * rows_ * hidden_, size_t{rows_} * hidden_);
  c.positions = positions_;
  return c;
}

}  // namespace bench
