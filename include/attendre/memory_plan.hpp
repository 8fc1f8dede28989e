// The caller's half of a stack configuration: how much each block's memories
// hold and how they evict (S, N, M, K, policy, sinks, masks), as opposed to
// the model's half (shapes, norms, RoPE, scale), which a model file fixes.
// One setting applies to every block, with per-block overrides.
#pragma once

#include <attendre/config.hpp>
#include <attendre/stack.hpp>

#include <cstdint>
#include <map>

namespace attendre {

// A LayerConfig without its shape, chunk and model-defined logit scale and bias.
struct MemorySetting {
  uint32_t q_capacity = 0;  // N: how many positions each query waits
  KvMemoryConfig kv;        // M, policy, sinks, protect_new
  uint32_t top_k = 0;       // K; 0 means K = M (full attention over the memory)
  RetrievalMode mode = RetrievalMode::per_head;
  bool causal = true;

  // The unbounded reference setting for a stream of `positions` positions read
  // in chunks of `chunk`: N = 0, causal, fifo, M = max(positions, chunk), K = M.
  // Nothing is ever evicted, so the stack equals ordinary causal attention.
  static MemorySetting full_context(uint64_t positions, uint32_t chunk);
};

struct MemoryPlan {
  uint32_t chunk = 64;  // S: positions fed per step
  MemorySetting all;    // every block, unless overridden
  std::map<uint32_t, MemorySetting> blocks;  // overrides by block index
  bool flush_capable = false;  // finish() may flush (see StackConfig::flush_capable)

  const MemorySetting& for_block(uint32_t block) const;
};

// Sets config.chunk, flush_capable and every block's N, M, K, policy, sinks,
// retrieval mode and causal mask from `plan`, leaving shapes, scale and bias
// as the model set them. Throws invalid_argument for an override of a block
// the stack does not have; feasibility is StackConfig::validate()'s.
void apply_memory(StackConfig& config, const MemoryPlan& plan);

}  // namespace attendre
