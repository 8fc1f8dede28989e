#include "core/fail.hpp"

#include <attendre/memory_plan.hpp>

#include <algorithm>
#include <limits>

namespace attendre {

MemorySetting MemorySetting::full_context(uint64_t positions, uint32_t chunk) {
  // M past 32 bits cannot be counted by the memories; validate() names it.
  const uint64_t capacity = std::max<uint64_t>(positions, chunk);
  require(capacity <= std::numeric_limits<uint32_t>::max(),
          "a full context of " + std::to_string(positions) + " positions needs M past 2^32");
  MemorySetting s;
  s.q_capacity = 0;
  s.kv.capacity = static_cast<uint32_t>(capacity);
  s.kv.policy = Policy::fifo();
  s.top_k = s.kv.capacity;
  s.causal = true;
  return s;
}

const MemorySetting& MemoryPlan::for_block(uint32_t block) const {
  const auto it = blocks.find(block);
  return it == blocks.end() ? all : it->second;
}

void apply_memory(StackConfig& config, const MemoryPlan& plan) {
  for (const auto& [block, setting] : plan.blocks)
    require(block < config.blocks.size(), "a memory override names block " + std::to_string(block) + " of a stack of " +
                                              std::to_string(config.blocks.size()) + " blocks");
  config.chunk = plan.chunk;
  config.flush_capable = plan.flush_capable;
  for (uint32_t l = 0; l < config.blocks.size(); ++l) {
    const MemorySetting& s = plan.for_block(l);
    LayerConfig& a = config.blocks[l].attention;
    a.q_capacity = s.q_capacity;
    a.kv = s.kv;
    a.retrieval.top_k = s.top_k == 0 ? s.kv.capacity : s.top_k;
    a.retrieval.mode = s.mode;
    a.retrieval.causal = s.causal;
  }
}

}  // namespace attendre
