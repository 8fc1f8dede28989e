// Byte counts as people read them in the tools' messages and tables.
#pragma once

#include <cstdint>
#include <string>

namespace attendre::apps {

// "512 bytes", "3.0 KiB", "25.6 GiB": one decimal, binary units.
std::string human_bytes(uint64_t bytes);

}  // namespace attendre::apps
