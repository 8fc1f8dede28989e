#include "flag_names.hpp"

#include <string_view>

namespace attendre::apps {

std::string with_flag_names(const std::string& message) {
  struct Field {
    std::string_view symbol, flag;
  };
  static constexpr Field kFields[] = {
      {"N", "--q-capacity"}, {"M", "--kv-capacity"}, {"S", "--chunk"}, {"K", "--top-k"}, {"n_sink", "--sinks"}};
  // A field counts when it stands alone as a word: "M=5", "(M=5", "lower K or M",
  // "M >= S" - not the K of "K/V" nor the M of "MiB".
  const auto mentions = [&](std::string_view symbol) {
    for (size_t at = message.find(symbol); at != std::string::npos; at = message.find(symbol, at + 1)) {
      const size_t end = at + symbol.size();
      const bool starts = at == 0 || message[at - 1] == ' ' || message[at - 1] == '(';
      const bool ends = end == message.size() || std::string_view("= ,);").find(message[end]) != std::string_view::npos;
      if (starts && ends) return true;
    }
    return false;
  };
  std::string names;
  for (const Field& field : kFields)
    if (mentions(field.symbol))
      names += (names.empty() ? "" : ", ") + std::string(field.symbol) + " is " + std::string(field.flag);
  return names.empty() ? message : message + " (" + names + ")";
}

}  // namespace attendre::apps
