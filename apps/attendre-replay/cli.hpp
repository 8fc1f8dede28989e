// Command line of attendre-replay (spec section 6). Parsing is strict so
// that a typo in a recorded experiment's command fails loudly instead of
// silently replaying a different configuration.
#pragma once

#include "../common/arguments.hpp"

#include <attendre/config.hpp>

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace attendre::replay {

enum class Device { cpu, gpu };

using cli::UsageError;

struct Options {
  std::string q_path, k_path, v_path;
  std::optional<std::string> valid_path, positions_path, tags_path;
  std::string out_dir;

  uint32_t chunk = 0;        // S
  uint32_t q_capacity = 0;   // N
  uint32_t kv_capacity = 0;  // M
  uint32_t top_k = 0;        // K
  uint32_t sinks = 0;
  uint32_t recent = 0;  // W of the recent window
  PolicyKind policy = PolicyKind::fifo;
  std::optional<double> lambda;
  std::optional<double> init_k;
  std::optional<double> init_const;
  std::optional<double> scale;
  bool protect_new = true;
  bool causal = false;
  bool alibi = false;
  bool tag_mask = false;
  RetrievalMode retrieval = RetrievalMode::per_head;
  Device device = Device::cpu;

  bool verbose = false;  // kernel variants on stderr (gpu)
  bool help = false;  // everything else is unset when this is true
};

// Parses the arguments after argv[0]. Throws UsageError with a one-line
// message such as "--chunk: expected a positive integer, got 'x'", also for
// values that are integers but that no layer can count (N + S or M + S past
// 32 bits), naming the flags.
Options parse_args(std::span<const std::string> args);

std::string help_text();

// The layer configuration the options describe for one input shape. Does
// not validate: LayerConfig::validate() owns that, so the tool reports
// exactly what the library would refuse.
LayerConfig make_config(const Options& options, const AttentionShape& shape);

using cli::with_flag_names;

}  // namespace attendre::replay
