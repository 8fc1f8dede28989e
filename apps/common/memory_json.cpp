#include "memory_json.hpp"

namespace attendre::cli {

nlohmann::json memory_json(const StackConfig& config, bool flush) {
  nlohmann::json blocks = nlohmann::json::array();
  for (const BlockConfig& b : config.blocks) {
    const LayerConfig& a = b.attention;
    blocks.push_back({{"N", a.q_capacity},
                      {"M", a.kv.capacity},
                      {"K", a.retrieval.top_k},
                      {"policy", std::string(to_string(a.kv.policy.kind))},
                      {"lambda", a.kv.policy.lambda},
                      {"sinks", a.kv.n_sink},
                      {"storage", std::string(to_string(a.kv.storage))},
                      {"causal", a.retrieval.causal},
                      // A sliding window's distance mask, null where none hides keys.
                      {"window", a.retrieval.window > 0 ? nlohmann::json(a.retrieval.window) : nlohmann::json()},
                      // LM-Infinite's window, null where distances are not capped.
                      {"lm_infinite", b.lm_infinite.enabled ? nlohmann::json(b.lm_infinite.n_local) : nlohmann::json()}});
  }
  return {{"chunk", config.chunk},
          {"flush", flush},
          {"activations", std::string(to_string(config.activations))},
          {"blocks", blocks}};
}

}  // namespace attendre::cli
