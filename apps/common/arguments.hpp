// Command-line parsing shared by the tools: a table of long options, strict
// values, and one-line messages that name the flag. Strict so that a typo in
// a recorded command fails loudly instead of running something else.
#pragma once

#include <attendre/error.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <span>
#include <stdexcept>
#include <string>

namespace attendre::cli {

// A mistake on the command line; run_main() reports it with exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void usage(const std::string& message);

// Unsigned 32-bit integers ("-1" is refused, not wrapped); `positive` refuses 0.
uint32_t parse_count(const std::string& flag, const std::string& text, bool positive);
uint64_t parse_u64(const std::string& flag, const std::string& text);
// Finite numbers only (inf and nan would only move the failure elsewhere).
double parse_number(const std::string& flag, const std::string& text, bool non_negative);
std::string nonempty_path(const std::string& flag, const std::string& text);

struct Option {
  bool takes_value = true;
  bool repeatable = false;  // else a second occurrence is refused
  std::function<void(const std::string& flag, const std::string& value)> apply;
  // A value that may be left out ("--lm-infinite" or "--lm-infinite 512"):
  // the next argument is the value unless it is an option; absent, apply()
  // gets "". The tools take no positional arguments, so nothing else could
  // be meant by a following word.
  bool value_optional = false;
};
using OptionTable = std::map<std::string, Option, std::less<>>;

// Option builders over the caller's fields.
Option path_option(std::string& target);
Option text_option(std::string& target);  // any text, empty included
Option count_option(uint32_t& target, bool positive);
Option switch_option(bool& target, bool value);

// The most bytes a text file may hold: what the tokenizer encodes at once.
inline constexpr uint64_t kMaxTextFileBytes = (uint64_t{1} << 31) - 1;

// The bytes of the file at `path`, given by `flag` (io_error naming both).
// FIFOs and /dev/stdin are read like files; a folder is refused, and a
// source longer than `max_bytes` (/dev/zero) is refused once that many bytes
// are in, so memory stays bounded by the limit.
std::string read_text_file(const std::string& flag, const std::string& path, uint64_t max_bytes = kMaxTextFileBytes);

// Applies `args` (after argv[0]) to `table`: "--name value", "--name=value",
// switches without values, optional values, "-h" for "--help". Returns the
// names given.
std::set<std::string> parse_options(const OptionTable& table, std::span<const std::string> args);

// The library names configuration fields (N, M, S, K, n_sink) in its
// messages; the user typed flags. Appends which flag each field mentioned in
// `message` is, e.g. "... got M=5 S=4 (M is --kv-capacity, S is --chunk)".
std::string with_flag_names(const std::string& message);

// Runs `work`, rethrowing the library's errors with the flags named for the
// configuration fields they mention.
template <class Work>
auto naming_flags(Work&& work) {
  try {
    return work();
  } catch (const Error& e) {
    throw Error(e.code(), with_flag_names(e.what()));
  }
}

// Runs a tool's body and turns what escapes it into one line on stderr,
// "<tool>: <message>", and an exit status: 2 for a UsageError (with " (see
// --help)"), 1 for anything else.
int run_main(const std::string& tool, int argc, char** argv, const std::function<int(std::span<const std::string>)>& body);
// One line on stderr, "<tool>: <message>", newlines flattened.
void report(const std::string& tool, const std::string& message);

}  // namespace attendre::cli
