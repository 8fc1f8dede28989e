#include "arguments.hpp"

#include "human_bytes.hpp"

#include "core/number_text.hpp"

#include <attendre/error.hpp>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <new>
#include <string_view>
#include <system_error>
#include <vector>

#include <sys/stat.h>

namespace attendre::cli {

void usage(const std::string& message) { throw UsageError(message); }

uint32_t parse_count(const std::string& flag, const std::string& text, bool positive) {
  Result<uint32_t> value = parse_count_text(flag, text, positive);
  if (!value.ok()) usage(value.status().message());
  return value.value();
}

uint64_t parse_u64(const std::string& flag, const std::string& text) {
  uint64_t value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || end != text.data() + text.size() || ec != std::errc{})
    usage(flag + ": expected an integer in [0, 2^64), got '" + text + "'");
  return value;
}

double parse_number(const std::string& flag, const std::string& text, bool non_negative) {
  Result<double> value = parse_number_text(flag, text, non_negative);
  if (!value.ok()) usage(value.status().message());
  return value.value();
}

std::string nonempty_path(const std::string& flag, const std::string& text) {
  if (text.empty()) usage(flag + ": empty path");
  return text;
}

Option path_option(std::string& target) {
  return {true, false, [&target](const std::string& f, const std::string& v) { target = nonempty_path(f, v); }};
}

Option text_option(std::string& target) {
  return {true, false, [&target](const std::string&, const std::string& v) { target = v; }};
}

std::string read_text_file(const std::string& flag, const std::string& path, uint64_t max_bytes) {
  const std::string where = flag + " " + path;
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"), std::fclose);
  if (!file) throw Error(ErrorCode::io_error, where + ": cannot open: " + std::generic_category().message(errno));
  // Linux opens a folder for reading and its reads fail, which a stream
  // takes for an empty text: the prompt would silently be nothing.
  struct stat status {};
  if (::fstat(::fileno(file.get()), &status) == 0 && S_ISDIR(status.st_mode))
    throw Error(ErrorCode::io_error, where + ": is a folder, not a text file");
  std::string text;
  if (S_ISREG(status.st_mode) && static_cast<uint64_t>(status.st_size) <= max_bytes)
    text.reserve(static_cast<size_t>(status.st_size));
  std::vector<char> block(size_t{1} << 16);
  for (;;) {
    const size_t got = std::fread(block.data(), 1, block.size(), file.get());
    if (got > max_bytes - text.size())
      throw Error(ErrorCode::io_error, where + ": longer than " + apps::human_bytes(max_bytes) + " (" +
                                           std::to_string(max_bytes) + " bytes), the most a text file may hold");
    text.append(block.data(), got);
    if (got < block.size()) break;
  }
  if (std::ferror(file.get())) throw Error(ErrorCode::io_error, where + ": read failed: " + std::generic_category().message(errno));
  return text;
}

Option count_option(uint32_t& target, bool positive) {
  return {true, false, [&target, positive](const std::string& f, const std::string& v) {
            target = parse_count(f, v, positive);
          }};
}

Option switch_option(bool& target, bool value) {
  return {false, false, [&target, value](const std::string&, const std::string&) { target = value; }};
}

std::set<std::string> parse_options(const OptionTable& table, std::span<const std::string> args) {
  std::set<std::string> seen;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string arg = args[i] == "-h" && table.count("--help") ? "--help" : args[i];
    const size_t eq = arg.find('=');
    const std::string name = arg.substr(0, eq);
    const auto it = table.find(name);
    if (arg.rfind("--", 0) != 0 || it == table.end()) {
      if (arg.rfind("-", 0) == 0) usage("unknown option '" + name + "'");
      usage("unexpected argument '" + arg + "'");
    }
    if (!seen.insert(name).second && !it->second.repeatable) usage(name + ": given more than once");
    std::string value;
    if (!it->second.takes_value) {
      if (eq != std::string::npos) usage(name + ": takes no value");
    } else if (eq != std::string::npos) {
      value = arg.substr(eq + 1);
    } else {
      // A following option is a forgotten value, not a path named "--causal".
      // An optional value is never a dash word ("-h" stays an option).
      const bool value_follows = i + 1 < args.size() && args[i + 1].rfind(it->second.value_optional ? "-" : "--", 0) != 0;
      if (value_follows) value = args[++i];
      else if (!it->second.value_optional) usage(name + ": missing value");
    }
    it->second.apply(name, value);
  }
  return seen;
}

std::string with_flag_names(const std::string& message) {
  struct Field {
    std::string_view symbol, flag;
  };
  static constexpr Field kFields[] = {
      {"N", "--q-capacity"}, {"M", "--kv-capacity"}, {"S", "--chunk"}, {"K", "--top-k"}, {"n_sink", "--sinks"}, {"W", "--recent"}};
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

void report(const std::string& tool, const std::string& message) {
  // Scripts grep stderr line by line, so a message never spans lines.
  std::string line = tool + ": " + message;
  for (char& c : line)
    if (c == '\n' || c == '\r') c = ' ';
  std::fprintf(stderr, "%s\n", line.c_str());
}

int run_main(const std::string& tool, int argc, char** argv, const std::function<int(std::span<const std::string>)>& body) {
  try {
    const std::vector<std::string> args(argv + (argc > 0 ? 1 : 0), argv + argc);
    return body(args);
  } catch (const UsageError& e) {
    report(tool, std::string(e.what()) + " (see --help)");
    return 2;
  } catch (const Error& e) {
    report(tool, e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    // Sizes a tool can foresee are refused up front with their figures;
    // this is what slipped past them, so no flag is blamed.
    report(tool, "out of host memory");
    return 1;
  } catch (const std::exception& e) {
    report(tool, e.what());
    return 1;
  } catch (...) {
    report(tool, "unknown error");
    return 1;
  }
}

}  // namespace attendre::cli
