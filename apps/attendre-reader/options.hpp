// attendre-reader's command line. Everything has a default: run bare, it
// reads the built-in haystack under four policies.
#pragma once

#include "common/arguments.hpp"
#include "common/lm_infinite_option.hpp"

#include "haystack.hpp"
#include "memory_settings.hpp"

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace reader {

enum class InputKind { builtin, haystack, text };

struct Options {
  InputKind input = InputKind::builtin;
  std::string text_path;
  HaystackSpec haystack;
  std::optional<std::string> question;
  std::string template_text;  // empty: kDefaultTemplate

  std::optional<std::string> model_path;
  uint32_t answer_tokens = 32;  // --answer-tokens: the answer's budget (with --model)
  attendre::cli::LmInfiniteRequest lm_infinite;  // --lm-infinite [N_LOCAL] (with --model)
  MemorySettings memory;
  // Runs in order, each a policy list: --compare's policies, --policy's list,
  // or the default comparison.
  std::vector<PolicyList> runs;
  std::string device = "gpu";  // gpu, cpu, or a Vulkan device's index or name

  std::optional<std::string> json_path, report_path, export_dir;
  bool quiet = false;
  bool verbose = false;
  bool help = false;
};

// The policies compared when neither --policy nor --compare is given.
inline const std::vector<std::string> kDefaultComparison = {"fifo", "sinks", "lra_sum", "lfa"};

// A bad command line: main prints the message on one line and exits 2.
using UsageError = attendre::cli::UsageError;

// Parses the arguments after argv[0]; throws UsageError naming the flag.
Options parse_options(const std::vector<std::string>& args);

std::string help_text();

}  // namespace reader
