#include "options.hpp"

#include <charconv>
#include <string_view>

namespace demo {
namespace {

// Bounds keep the defaults' story intact: too short a stream has room for no
// needle, and full attention on the CPU is quadratic in the tokens.
constexpr uint32_t kMinTokens = 128, kMaxTokens = 32768;
// M >= chunk + sinks is what protect_new needs for the StreamingLLM row.
constexpr uint32_t kMinMemory = 20, kMaxMemory = 65536;

uint32_t parse_count(std::string_view option, std::string_view text, uint32_t lo, uint32_t hi) {
  uint32_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size())
    throw UsageError(std::string(option) + " expects a whole number, got '" + std::string(text) + "'");
  if (value < lo || value > hi)
    throw UsageError(std::string(option) + " must be between " + std::to_string(lo) + " and " +
                     std::to_string(hi) + ", got " + std::to_string(value));
  return value;
}

}  // namespace

Options parse_options(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view value;
    bool has_value = false;
    // Both "--tokens 512" and "--tokens=512".
    if (const size_t eq = arg.find('='); arg.starts_with("--") && eq != std::string_view::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_value = true;
    }
    auto take_value = [&]() -> std::string_view {
      if (has_value) return value;
      if (i + 1 >= argc) throw UsageError(std::string(arg) + " needs a value");
      return argv[++i];
    };
    if (arg == "--help" || arg == "-h") {
      if (has_value) throw UsageError("--help takes no value");
      options.help = true;
    } else if (arg == "--tokens") {
      options.tokens = parse_count(arg, take_value(), kMinTokens, kMaxTokens);
    } else if (arg == "--memory") {
      options.memory = parse_count(arg, take_value(), kMinMemory, kMaxMemory);
    } else if (arg == "--device") {
      const std::string_view device = take_value();
      if (device != "cpu" && device != "gpu")
        throw UsageError("--device expects cpu or gpu, got '" + std::string(device) + "'");
      options.gpu = device == "gpu";
    } else {
      throw UsageError("unknown option '" + std::string(arg) + "'");
    }
  }
  return options;
}

std::string usage_text() {
  return "usage: attendre-demo [--tokens T] [--memory M] [--device cpu|gpu] [--help]\n"
         "\n"
         "Streams a generated sequence with planted, heavily attended 'needle' keys\n"
         "through one ATTENDRE layer under every eviction policy, and prints how much\n"
         "each policy keeps of what full attention would look at.\n"
         "\n"
         "  --tokens T         stream length, " + std::to_string(kMinTokens) + ".." + std::to_string(kMaxTokens) +
         " (default 1536)\n"
         "  --memory M         K/V memory capacity, " + std::to_string(kMinMemory) + ".." +
         std::to_string(kMaxMemory) + " (default 128)\n"
         "  --device cpu|gpu   gpu (default) runs the Vulkan layer; cpu the float64\n"
         "                     reference. Without a usable Vulkan device the demo\n"
         "                     falls back to cpu.\n"
         "\n"
         "ATTENDRE_DEVICE picks the Vulkan device; ATTENDRE_VALIDATION=1 enables the\n"
         "Khronos validation layer with its synchronization checks (core: without\n"
         "them; gpu: GPU-assisted checks too); any message makes the demo exit 3.\n";
}

}  // namespace demo
