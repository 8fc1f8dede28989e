#include "memory_json.hpp"

#include <attendre/memory_text.hpp>

namespace attendre::cli {

nlohmann::json memory_json(const StackConfig& config, bool flush) {
  return nlohmann::json::parse(attendre::memory_json(config, flush));  // the library writes the form
}

}  // namespace attendre::cli
