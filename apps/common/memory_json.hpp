// The memory settings a run used, as JSON for the tools' --json outputs.
#pragma once

#include <attendre/stack.hpp>

#include <nlohmann/json.hpp>

namespace attendre::cli {

// {"chunk": S, "flush": bool, "blocks": [{"N", "M", "K", "policy", "lambda", "sinks", "recent", "causal"}, ...]}
nlohmann::json memory_json(const StackConfig& config, bool flush);

}  // namespace attendre::cli
