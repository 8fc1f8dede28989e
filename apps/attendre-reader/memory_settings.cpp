#include "memory_settings.hpp"

#include "core/fail.hpp"

#include <attendre/memory_names.hpp>

namespace reader {
namespace {

template <class T>
void check_list(const std::vector<T>& values, size_t blocks, const std::string& flag) {
  attendre::require(values.size() == 1 || values.size() == blocks,
                    flag + " takes one value or one per block (" + std::to_string(blocks) + "), got " +
                        std::to_string(values.size()));
}

// The policy `name` names (with an alias's sinks or window) into `kv`. The
// reader's sinks and windows of 0 leave an alias's defaults.
void set_policy(attendre::KvMemoryConfig& kv, const std::string& name, const MemorySettings& memory) {
  attendre::InitialScore initial;
  if (memory.init_const) initial = attendre::InitialScore::constant(*memory.init_const);
  else if (memory.init_k) initial = attendre::InitialScore::mean_minus_sigma(*memory.init_k);
  kv.policy = attendre::Policy{attendre::PolicyKind::fifo, memory.lambda, initial};
  const auto given = [](uint32_t value) { return value ? std::optional<uint32_t>(value) : std::nullopt; };
  attendre::apply_memory_name(kv, name, given(kv.n_sink), given(kv.n_recent)).or_throw();
  if (kv.policy.kind != attendre::PolicyKind::lfa) kv.policy.lambda = 0.0;
}

}  // namespace

bool is_policy_name(const std::string& name) { return attendre::is_memory_name(name); }

std::string policy_names() { return attendre::memory_names(); }

std::string label(const PolicyList& policies) {
  std::string text;
  for (const std::string& p : policies) text += (text.empty() ? "" : ",") + p;
  return text;
}

uint32_t per_block(const std::vector<uint32_t>& values, size_t block) {
  return values.size() == 1 ? values[0] : values.at(block);
}

attendre::StackConfig configure_stack(attendre::StackConfig shape, const MemorySettings& memory,
                                      const PolicyList& policies) {
  const size_t blocks = shape.blocks.size();
  check_list(memory.q_capacity, blocks, "--q-capacity");
  check_list(memory.kv_capacity, blocks, "--kv-capacity");
  check_list(memory.top_k, blocks, "--top-k");
  check_list(memory.sinks, blocks, "--sinks");
  check_list(memory.recent, blocks, "--recent");
  check_list(policies, blocks, "--policy");
  attendre::MemoryPlan plan;
  plan.chunk = memory.chunk;
  plan.flush_capable = memory.flush;
  plan.activations = memory.fp16_activations ? attendre::MemoryStorage::f16 : attendre::MemoryStorage::f32;
  for (size_t l = 0; l < blocks; ++l) {
    const attendre::BlockConfig& b = shape.blocks[l];
    attendre::MemorySetting s;
    s.mode = b.attention.retrieval.mode;
    s.causal = b.attention.retrieval.causal;
    s.lm_infinite = b.lm_infinite;
    s.q_capacity = per_block(memory.q_capacity, l);
    s.kv.capacity = per_block(memory.kv_capacity, l);
    s.top_k = per_block(memory.top_k, l);
    s.kv.n_sink = per_block(memory.sinks, l);
    s.kv.n_recent = per_block(memory.recent, l);
    set_policy(s.kv, policies.size() == 1 ? policies[0] : policies[l], memory);
    s.kv.storage = memory.fp16_memory ? attendre::MemoryStorage::f16 : attendre::MemoryStorage::f32;
    plan.blocks[static_cast<uint32_t>(l)] = s;
  }
  shape.weights = memory.fp16 ? attendre::WeightType::f16 : attendre::WeightType::f32;
  attendre::apply_memory(shape, plan).or_throw();
  return shape;
}

}  // namespace reader
