#include "memory_settings.hpp"

#include "core/fail.hpp"

#include <array>

namespace reader {
namespace {

constexpr std::array<const char*, 8> kPolicies = {"fifo", "sinks", "lru", "lfu", "lra_last", "lra_max", "lra_sum", "lfa"};
constexpr uint32_t kStreamingLlmSinks = 4;

template <class T>
void check_list(const std::vector<T>& values, size_t blocks, const std::string& flag) {
  attendre::require(values.size() == 1 || values.size() == blocks,
                    flag + " takes one value or one per block (" + std::to_string(blocks) + "), got " +
                        std::to_string(values.size()));
}

attendre::Policy make_policy(const std::string& name, const MemorySettings& memory) {
  attendre::InitialScore initial;
  if (memory.init_const) initial = attendre::InitialScore::constant(*memory.init_const);
  else if (memory.init_k) initial = attendre::InitialScore::mean_minus_sigma(*memory.init_k);
  if (name == "sinks") return attendre::Policy::fifo();
  const std::optional<attendre::PolicyKind> kind = attendre::parse_policy(name);
  attendre::require(kind.has_value(), "unknown policy '" + name + "' (policies: " + policy_names() + ")");
  attendre::Policy policy{*kind, 0.0, initial};
  if (*kind == attendre::PolicyKind::lfa) policy.lambda = memory.lambda;
  return policy;
}

}  // namespace

bool is_policy_name(const std::string& name) {
  for (const char* p : kPolicies)
    if (name == p) return true;
  return false;
}

std::string policy_names() {
  std::string names;
  for (const char* p : kPolicies) names += (names.empty() ? "" : ", ") + std::string(p);
  return names;
}

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
  check_list(policies, blocks, "--policy");
  shape.chunk = memory.chunk;
  shape.flush_capable = memory.flush;
  shape.weights = memory.fp16 ? attendre::WeightType::f16 : attendre::WeightType::f32;
  shape.activations = memory.fp16_activations ? attendre::MemoryStorage::f16 : attendre::MemoryStorage::f32;
  for (size_t l = 0; l < blocks; ++l) {
    attendre::LayerConfig& a = shape.blocks[l].attention;
    const std::string& name = policies.size() == 1 ? policies[0] : policies[l];
    a.q_capacity = per_block(memory.q_capacity, l);
    a.kv.capacity = per_block(memory.kv_capacity, l);
    a.retrieval.top_k = per_block(memory.top_k, l);
    a.kv.policy = make_policy(name, memory);
    a.kv.n_sink = per_block(memory.sinks, l);
    a.kv.storage = memory.fp16_memory ? attendre::MemoryStorage::f16 : attendre::MemoryStorage::f32;
    if (name == "sinks" && a.kv.n_sink == 0) a.kv.n_sink = kStreamingLlmSinks;
  }
  return shape;
}

}  // namespace reader
