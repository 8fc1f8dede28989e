// The library names configuration fields in its messages (N, M, S, K,
// n_sink); the tools' users typed flags, the same in every tool.
#pragma once

#include <string>

namespace attendre::apps {

// Appends which flag each field mentioned in `message` is, e.g. "... got
// M=5 S=4 (M is --kv-capacity, S is --chunk)"; `message` unchanged when it
// mentions none.
std::string with_flag_names(const std::string& message);

}  // namespace attendre::apps
