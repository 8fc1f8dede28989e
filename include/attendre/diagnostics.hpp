// Diagnostics of a Context for tools and tests: what the Khronos validation
// layer reported (when ContextOptions::validation or ATTENDRE_VALIDATION
// turned it on). Applications need none of it to run.
#pragma once

#include <attendre/context.hpp>

#include <string>
#include <vector>

namespace attendre {

// Validation messages (warnings and errors) recorded since the last clear.
std::vector<std::string> validation_messages(const Context& context);
void clear_validation_messages(Context& context);

}  // namespace attendre
