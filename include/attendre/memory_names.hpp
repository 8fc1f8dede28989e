// Named memory settings: the equivalences of spec 2.4 under the names users
// know them by, as every tool's --policy / --compare and the C API take them.
//   fifo, lru, lfu, lra_last, lra_max, lra_sum, lfa   the policies
//   sinks, streamingllm   fifo with 4 pinned sinks (StreamingLLM)
//   tova                  lra_last (TOVA)
//   h2o                   lfa with lambda 0 and a recent window of
//                         W = (M - n_sink) / 2 (H2O splits its budget
//                         equally between heavy hitters and recent tokens)
#pragma once

#include <attendre/config.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace attendre {

inline constexpr uint32_t kStreamingLlmSinks = 4;

// Whether `name` is a policy or one of the aliases above.
bool is_memory_name(std::string_view name);
// "fifo, lru, lfu, lra_last, lra_max, lra_sum, lfa, sinks, streamingllm, tova, h2o".
std::string memory_names();
// The aliases alone: "sinks, streamingllm, tova, h2o".
std::string memory_alias_names();

// Sets kv.policy.kind for `name` (lambda and the initial score stay the
// caller's, except h2o's lambda 0) and an alias's sinks or window: `sinks`
// and `recent` are the caller's explicit values, which win; absent, the
// alias's defaults apply (a policy name leaves n_sink and n_recent as they
// are). invalid_argument naming the known names for any other name.
Status apply_memory_name(KvMemoryConfig& kv, std::string_view name, std::optional<uint32_t> sinks = std::nullopt,
                         std::optional<uint32_t> recent = std::nullopt);

// H2O's default window for a memory of `capacity` with `sinks` pinned entries.
uint32_t h2o_recent(uint32_t capacity, uint32_t sinks);

}  // namespace attendre
