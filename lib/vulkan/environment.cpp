#include "vulkan/environment.hpp"

#include <attendre/error.hpp>

#include <cstdlib>
#include <cstring>

namespace attendre::vk {

std::string env_string(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

// A 0/1 switch; anything else is an error, so a typo never silently
// leaves a switch off.
Result<bool> env_flag(const char* name) {
  const char* value = std::getenv(name);
  if (!value || std::strcmp(value, "0") == 0 || *value == '\0') return false;
  if (std::strcmp(value, "1") == 0) return true;
  return invalid_argument(std::string(name) + " must be 0 or 1, got '" + value + "'");
}

Result<std::optional<uint32_t>> env_count(const char* name) {
  const std::string value = env_string(name);
  if (value.empty()) return std::optional<uint32_t>{};
  char* end = nullptr;
  const unsigned long long n = std::strtoull(value.c_str(), &end, 10);
  if (*end != '\0' || value[0] == '-' || n == 0 || n > 0xFFFFFFFFull)
    return invalid_argument(std::string(name) + " must be a positive 32-bit count, got '" + value + "'");
  return std::optional<uint32_t>{static_cast<uint32_t>(n)};
}

}  // namespace attendre::vk
