#include "core/try.hpp"

#include <attendre/memory_plan.hpp>

#include <algorithm>
#include <limits>

namespace attendre {

Result<MemorySetting> MemorySetting::full_context(uint64_t positions, uint32_t chunk) {
  // M past 32 bits cannot be counted by the memories.
  const uint64_t capacity = std::max<uint64_t>(positions, chunk);
  ATTENDRE_REQUIRE(capacity <= std::numeric_limits<uint32_t>::max(),
                   "a full context of " + std::to_string(positions) + " positions needs M past 2^32");
  MemorySetting s;
  s.q_capacity = 0;
  s.kv.capacity = static_cast<uint32_t>(capacity);
  s.kv.policy = Policy::fifo();
  s.top_k = s.kv.capacity;
  s.causal = true;
  return s;
}

Result<MemorySetting> MemorySetting::full_bidirectional(uint64_t positions, uint32_t chunk) {
  ATTENDRE_TRY_ASSIGN(MemorySetting s, full_context(positions, chunk));
  s.q_capacity = s.kv.capacity;  // >= positions: every query waits until the last one is in
  s.causal = false;
  return s;
}

Result<MemorySetting> MemorySetting::sliding_window(uint32_t window, uint32_t rows) {
  ATTENDRE_REQUIRE(window >= 1, "a sliding window must hold at least 1 position");
  const uint64_t capacity = uint64_t{window} + std::max<uint32_t>(rows, 1) - 1;
  ATTENDRE_REQUIRE(capacity <= 0x7FFFFFFFu, "a sliding window of " + std::to_string(window) + " positions read " +
                                                std::to_string(rows) + " rows at a time needs M past 2^31");
  MemorySetting s;
  s.kv.capacity = static_cast<uint32_t>(capacity);
  s.kv.policy = Policy::fifo();
  s.top_k = s.kv.capacity;
  s.causal = true;
  s.window = window;
  return s;
}

const MemorySetting& MemoryPlan::for_block(uint32_t block) const {
  const auto it = blocks.find(block);
  return it == blocks.end() ? all : it->second;
}

Status apply_memory(StackConfig& config, const MemoryPlan& plan) {
  for (const auto& [block, setting] : plan.blocks)
    ATTENDRE_REQUIRE(block < config.blocks.size(), "a memory override names block " + std::to_string(block) + " of a stack of " +
                                              std::to_string(config.blocks.size()) + " blocks");
  bool rope = false, lm_infinite = false;
  for (uint32_t l = 0; l < config.blocks.size(); ++l) {
    rope = rope || config.blocks[l].rope;
    lm_infinite = lm_infinite || plan.for_block(l).lm_infinite.enabled;
  }
  ATTENDRE_REQUIRE(!lm_infinite || rope, "LM-Infinite caps RoPE distances, and no block of this stack uses RoPE");
  StackConfig next = config;  // config changes only on success
  next.chunk = plan.chunk;
  next.flush_capable = plan.flush_capable;
  next.activations = plan.activations;
  for (uint32_t l = 0; l < next.blocks.size(); ++l) {
    const MemorySetting& s = plan.for_block(l);
    BlockConfig& b = next.blocks[l];
    apply_memory(b.attention, s);
    if (b.rope) b.lm_infinite = s.lm_infinite;
  }
  // The model's windows, sized once every block's N is set: a flush hands a
  // block all the rows the blocks above held (StackConfig::max_rows_in).
  for (uint32_t l = 0; l < next.blocks.size(); ++l) {
    BlockConfig& b = next.blocks[l];
    if (!plan.model_windows || b.sliding_window == 0 || b.cross_attention || plan.blocks.count(l)) continue;
    ATTENDRE_TRY_ASSIGN(MemorySetting s, MemorySetting::sliding_window(b.sliding_window, next.max_rows_in(l)));
    s.kv.storage = plan.all.kv.storage;
    s.mode = plan.all.mode;
    s.lm_infinite = plan.all.lm_infinite;
    apply_memory(b.attention, s);
    if (b.rope) b.lm_infinite = s.lm_infinite;
  }
  // LongRoPE: llama.cpp turns with the long factors where its context (its
  // K/V cache) exceeds the original context, so the long table here where
  // some block's K/V memory holds more entries than that (one table for
  // the whole model, as llama.cpp's).
  uint32_t longest_memory = 0;
  for (const BlockConfig& b : next.blocks)
    if (b.rope && b.rope_scaling.long_rope) longest_memory = std::max(longest_memory, b.attention.kv.capacity);
  for (BlockConfig& b : next.blocks)
    if (b.rope_scaling.long_rope) b.rope_scaling.long_factors = longest_memory > b.rope_scaling.original_context;
  config = std::move(next);
  return {};
}

Status apply_encoder_decoder_memory(EncoderDecoderConfig& config, const EncoderDecoderPlan& plan) {
  ATTENDRE_TRY(apply_memory(config.encoder, plan.encoder));
  config.encoder_memory = plan.encoder_memory;
  StackConfig& d = config.decoder;
  d.chunk = 1;
  d.flush_capable = false;
  d.activations = plan.encoder.activations;  // both stacks store their activations alike
  for (BlockConfig& b : d.blocks) {
    LayerConfig& a = b.attention;
    a.q_capacity = 0;
    a.kv = KvMemoryConfig{};
    a.kv.storage = plan.encoder.all.kv.storage;  // the decoder's memories store as the encoder's
    a.kv.capacity = b.cross_attention ? plan.encoder_memory : plan.decoder_positions;
    a.kv.policy = Policy::fifo();
    a.retrieval.top_k = a.kv.capacity;
    a.retrieval.mode = RetrievalMode::per_head;
    a.retrieval.causal = !b.cross_attention;  // encoder and decoder positions are not comparable
  }
  return {};
}

void apply_memory(LayerConfig& config, const MemorySetting& s) {
  config.q_capacity = s.q_capacity;
  config.kv = s.kv;
  config.retrieval.top_k = s.top_k == 0 ? s.kv.capacity : s.top_k;
  config.retrieval.mode = s.mode;
  config.retrieval.causal = s.causal;
  config.retrieval.window = s.window;
}

}  // namespace attendre
