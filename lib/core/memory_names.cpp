
#include <attendre/memory_names.hpp>

#include <array>

namespace attendre {
namespace {

constexpr std::array<std::string_view, 4> kAliases = {"sinks", "streamingllm", "tova", "h2o"};
constexpr std::array<PolicyKind, 7> kPolicies = {PolicyKind::fifo,    PolicyKind::lru,     PolicyKind::lfu,
                                                 PolicyKind::lra_last, PolicyKind::lra_max, PolicyKind::lra_sum,
                                                 PolicyKind::lfa};

}  // namespace

bool is_memory_name(std::string_view name) {
  for (std::string_view alias : kAliases)
    if (name == alias) return true;
  return parse_policy(name).has_value();
}

std::string memory_alias_names() {
  std::string names;
  for (std::string_view alias : kAliases) names += (names.empty() ? "" : ", ") + std::string(alias);
  return names;
}

std::string memory_names() {
  std::string names;
  for (PolicyKind kind : kPolicies) names += std::string(to_string(kind)) + ", ";
  return names + memory_alias_names();
}

uint32_t h2o_recent(uint32_t capacity, uint32_t sinks) { return capacity > sinks ? (capacity - sinks) / 2 : 0; }

Status apply_memory_name(KvMemoryConfig& kv, std::string_view name, std::optional<uint32_t> sinks,
                         std::optional<uint32_t> recent) {
  if (sinks) kv.n_sink = *sinks;
  if (recent) kv.n_recent = *recent;
  if (const std::optional<PolicyKind> kind = parse_policy(name)) {
    kv.policy.kind = *kind;
    return {};
  }
  if (name == "sinks" || name == "streamingllm") {
    kv.policy.kind = PolicyKind::fifo;
    if (!sinks) kv.n_sink = kStreamingLlmSinks;
  } else if (name == "tova") {
    kv.policy.kind = PolicyKind::lra_last;
  } else if (name == "h2o") {
    kv.policy.kind = PolicyKind::lfa;
    kv.policy.lambda = 0.0;
    if (!recent) kv.n_recent = h2o_recent(kv.capacity, kv.n_sink);
  } else {
    return {ErrorCode::invalid_argument, "unknown policy '" + std::string(name) +
                                             "' (fifo, lru, lfu, lra_last, lra_max, lra_sum, lfa, or an alias: " +
                                             memory_alias_names() + ")"};
  }
  return {};
}

}  // namespace attendre
