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

// The variant of one kernel family this context runs, and why: e.g.
// {"matmul (block types)", "direct, 8 lanes share decodes", "subgroup shuffle"}.
struct KernelVariant {
  std::string family, variant, reason;
};
// One per kernel family whose variant depends on the device (features,
// limits, driver quirks, switches), as the kernels choose them.
std::vector<KernelVariant> kernel_variants(const Context& context);
// "family: variant (reason)" lines of kernel_variants(), then one
// "quirk name: reason" line per driver quirk (DeviceCaps::quirks).
std::vector<std::string> describe_variants(const Context& context);

}  // namespace attendre
