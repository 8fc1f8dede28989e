// Shared by the stack tests: small random stack configurations, token
// streams, and a driver that feeds a stack chunk by chunk.
#pragma once

#include <attendre/stack.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <vector>

namespace attendre::test {

struct TokenStream {
  std::vector<uint32_t> tokens;
  std::vector<int64_t> positions;
  std::vector<uint8_t> valid;
  uint32_t rows() const { return static_cast<uint32_t>(tokens.size()); }
  StackChunk chunk(uint32_t first, uint32_t count) const {
    StackChunk c;
    c.rows = count;
    c.tokens = std::span<const uint32_t>(tokens).subspan(first, count);
    c.positions = std::span<const int64_t>(positions).subspan(first, count);
    c.valid = std::span<const uint8_t>(valid).subspan(first, count);
    return c;
  }
};

inline TokenStream random_tokens(uint32_t rows, uint32_t vocab, uint64_t seed, double invalid_fraction = 0.0) {
  std::mt19937_64 rng(seed);
  TokenStream s;
  for (uint32_t r = 0; r < rows; ++r) {
    s.tokens.push_back(static_cast<uint32_t>(rng() % vocab));
    s.positions.push_back(r);
    s.valid.push_back(static_cast<double>(rng() % 1000) / 1000.0 < invalid_fraction ? 0 : 1);
  }
  return s;
}

// One position for decode(), holding the token and position it points at.
struct OnePosition {
  uint32_t token = 0;
  int64_t position = 0;
  StackChunk chunk() const {
    StackChunk c;
    c.rows = 1;
    c.tokens = std::span<const uint32_t>(&token, 1);
    c.positions = std::span<const int64_t>(&position, 1);
    return c;
  }
};

// A stack of `layers` identical small blocks; callers adjust what they test.
inline StackConfig small_stack(uint32_t layers, AttentionShape shape, uint32_t chunk, uint32_t N, uint32_t M,
                               uint32_t K, Policy policy) {
  StackConfig c;
  c.hidden = 24;
  c.vocab = 37;
  c.chunk = chunk;
  for (uint32_t l = 0; l < layers; ++l) {
    BlockConfig b;
    b.attention.shape = shape;
    b.attention.q_capacity = N;
    b.attention.kv.capacity = M;
    b.attention.kv.policy = policy;
    b.attention.retrieval.top_k = K;
    b.ffn = 40;
    c.blocks.push_back(b);
  }
  return c;
}

// Per output position: the step it left the stack and its hidden state.
struct Emitted {
  size_t step = 0;
  std::vector<float> hidden;
  std::vector<float> logits;
};

// Feeds the stream in chunks of S, then finish(); one entry per position.
inline std::map<int64_t, Emitted> run_stack(TransformerStack& stack, const TokenStream& s, bool flush = false,
                                            StackRequest request = {}) {
  std::map<int64_t, Emitted> out;
  const StackConfig& c = stack.config();
  size_t step = 0;
  auto keep = [&](const StackOutput& o) {
    for (size_t i = 0; i < o.positions.size(); ++i) {
      Emitted e;
      e.step = step;
      if (!o.hidden.empty()) e.hidden.assign(o.hidden.begin() + i * c.hidden, o.hidden.begin() + (i + 1) * c.hidden);
      if (!o.logits.empty()) e.logits.assign(o.logits.begin() + i * c.vocab, o.logits.begin() + (i + 1) * c.vocab);
      out.emplace(o.positions[i], std::move(e));
    }
  };
  for (uint32_t first = 0; first < s.rows(); first += c.chunk, ++step)
    keep(stack.step(s.chunk(first, std::min(c.chunk, s.rows() - first)), request).value_or_throw());
  keep(stack.finish(request, flush).value_or_throw());
  return out;
}

}  // namespace attendre::test
