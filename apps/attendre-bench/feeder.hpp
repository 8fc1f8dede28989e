// Random input for timing runs: a few chunks of random rows reused in
// turn, at ever increasing positions. Timing does not depend on the
// values (every kernel is data-oblivious up to ties), only on the shapes.
#pragma once

#include <attendre/layer.hpp>
#include <attendre/stack.hpp>

#include <cstdint>
#include <random>
#include <vector>

namespace bench {

class LayerFeeder {
 public:
  LayerFeeder(const attendre::AttentionShape& shape, uint32_t rows, uint64_t seed);
  // The next `rows` positions (a full chunk).
  attendre::ChunkView next();
  int64_t position() const { return next_position_; }
  // The next chunk starts at `position` (> position()): a gap in the stream.
  void jump_to(int64_t position) { next_position_ = position; }

 private:
  static constexpr uint32_t kPool = 4;  // chunks of distinct data
  attendre::AttentionShape shape_;
  uint32_t rows_;
  std::vector<float> q_, k_, v_;
  std::vector<int64_t> positions_;
  int64_t next_position_ = 0;
  uint32_t turn_ = 0;
};

class StackFeeder {
 public:
  StackFeeder(const attendre::StackConfig& config, uint64_t seed);
  attendre::StackChunk next();

 private:
  static constexpr uint32_t kPool = 4;
  uint32_t rows_, hidden_;
  bool tokens_;
  std::vector<uint32_t> ids_;
  std::vector<float> embeddings_;
  std::vector<int64_t> positions_;
  int64_t next_position_ = 0;
  uint32_t turn_ = 0;
};

}  // namespace bench
