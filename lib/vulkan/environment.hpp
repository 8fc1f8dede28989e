// The library's environment variables, read only where the application's
// options leave a choice unset; a malformed value is an error naming the
// variable, never a silent default.
#pragma once

#include <attendre/status.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace attendre::vk {

// The variable's value, empty when unset.
std::string env_string(const char* name);
// A 0/1 switch (unset or empty: 0); anything else is an error, so a typo
// never silently leaves a switch off.
Result<bool> env_flag(const char* name);
// A positive 32-bit count, or nothing when unset or empty.
Result<std::optional<uint32_t>> env_count(const char* name);

}  // namespace attendre::vk
