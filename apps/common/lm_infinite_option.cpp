#include "lm_infinite_option.hpp"

namespace attendre::cli {

LmInfinite LmInfiniteRequest::resolve(uint32_t context_length) const {
  if (!enabled) return {};
  return {true, n_local.value_or(context_length)};
}

Option lm_infinite_option(LmInfiniteRequest& target) {
  Option option{true, false, [&target](const std::string& flag, const std::string& value) {
                  target.enabled = true;
                  if (!value.empty()) target.n_local = parse_count(flag, value, true);
                }};
  option.value_optional = true;
  return option;
}

const char* lm_infinite_help() {
  return "  --lm-infinite [N]     LM-Infinite: RoPE distances capped at N (default: the model's context length)\n";
}

}  // namespace attendre::cli
