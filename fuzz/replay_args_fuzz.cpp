// Fuzz target: attendre-replay's command line. The input is split at NUL
// bytes into arguments. Every argument list is either refused with a
// one-line UsageError, or yields options within the flags' domains whose
// layer configuration the library accepts or refuses with a one-line
// message, to which the tool's flag names can be added.
#include "cli.hpp"
#include "fuzz_check.hpp"

#include <attendre/error.hpp>

#include <limits>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attendre;
  std::vector<std::string> args;
  if (size > 0) args.emplace_back();  // no bytes, no arguments
  for (size_t i = 0; i < size; ++i) {
    if (data[i] == '\0')
      args.emplace_back();
    else
      args.back() += static_cast<char>(data[i]);
  }
  // Messages quote what the user typed; only the tool's own text must be one line.
  bool typed_newline = false;
  for (const std::string& arg : args) typed_newline = typed_newline || arg.find('\n') != std::string::npos;

  replay::Options options;
  try {
    options = replay::parse_args(args);
  } catch (const replay::UsageError& e) {
    if (!typed_newline) fuzz::check_one_line(e.what());
    return 0;
  }
  if (options.help) {
    fuzz::check(!replay::help_text().empty(), "--help has text");
    return 0;
  }
  constexpr uint64_t kMaxRows = std::numeric_limits<uint32_t>::max();
  fuzz::check(options.chunk >= 1 && options.kv_capacity >= 1 && options.top_k >= 1, "S, M and K are positive");
  fuzz::check(uint64_t{options.q_capacity} + options.chunk <= kMaxRows, "N + S fits 32 bits");
  fuzz::check(uint64_t{options.kv_capacity} + options.chunk <= kMaxRows, "M + S fits 32 bits");
  fuzz::check(!options.q_path.empty() && !options.k_path.empty() && !options.v_path.empty() &&
                  !options.out_dir.empty(),
              "required paths are present");
  fuzz::check(!options.lambda || options.policy == PolicyKind::lfa, "--lambda only with lfa");
  fuzz::check(!options.tag_mask || options.tags_path, "--tag-mask only with --tags");

  const LayerConfig config = replay::make_config(options, AttentionShape{4, 2, 8});
  try {
    config.check().or_throw();
  } catch (const Error& e) {
    fuzz::check(e.code() == ErrorCode::infeasible_config || e.code() == ErrorCode::invalid_argument,
                "configuration errors are infeasible_config or invalid_argument", e.what());
    fuzz::check_one_line(e.what());
    const std::string named = replay::with_flag_names(e.what());
    fuzz::check_one_line(named);
    // Every infeasible configuration is about M, S, n_sink or W: it names flags.
    if (e.code() == ErrorCode::infeasible_config)
      fuzz::check(named.find(" is --") != std::string::npos, "infeasible configurations name flags", named);
  }
  return 0;
}
