// attendre-bench's command line.
#pragma once

#include "../common/arguments.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace bench {

// A bad command line (the tools' one, apps/common): main prints it on one
// line and exits 2.
using attendre::cli::UsageError;

// --filter: comma-separated names. A name selects a kernel (score, topk,
// attend, policy_lru, evict_select, compact, matmul, norm_rms, ...), a
// preset (mobile, desktop) or `scaling`; a prefix before '_' selects a
// family (policy selects every policy_<p>); `kernels`, `layer` (the layer
// kernels), `blocks` (the block kernels) and `presets` select groups.
// Empty selects everything. The device limits are always measured.
class Filter {
 public:
  Filter() = default;
  explicit Filter(const std::string& text);
  bool empty() const { return names_.empty(); }
  bool layer_kernel(const std::string& name) const;
  bool block_kernel(const std::string& name) const;
  bool preset(const std::string& name) const;
  bool scaling() const;
  // Whether any layer kernel / any block kernel could pass.
  bool any_layer_kernel() const;
  bool any_block_kernel() const;

 private:
  bool named(const std::string& name) const;
  std::vector<std::string> names_;
};

struct Options {
  bool help = false;
  bool quick = false;
  bool dispatches = false;  // --dispatches: print every dispatch of one timed step per measurement
  std::string json;      // --json FILE
  std::string svg;       // --svg DIR
  std::string filter_text;
  Filter filter;
  std::string device;    // --device: index or name substring (else ATTENDRE_DEVICE)
  int32_t layers = -1;   // --layers: blocks per preset (0: the model's depth; -1: the mode's default)
  uint32_t lm_infinite = 0;  // --lm-infinite: n_local of the presets' LM-Infinite cap (0: off)
  bool fp16_memory = false;  // --fp16-memory: the presets' K/V and Q memories in fp16
  bool fp16_activations = false;  // --fp16-activations: the presets' StackConfig::activations in fp16
};

Options parse_options(int argc, char** argv);
std::string usage_text();

}  // namespace bench
