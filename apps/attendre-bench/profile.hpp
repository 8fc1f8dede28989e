// Per-dispatch GPU times (Layer/Stack::last_profile(), labelled by shader)
// mapped to the bench's kernel names: score, topk, attend, policy_<p>,
// evict_select, compact, and the block kernels by shader (matmul, norm_rms,
// rope, ...), each block kernel with its role in the block.
#pragma once

#include <attendre/context.hpp>

#include <string>
#include <vector>

namespace bench {

struct Dispatch {
  std::string name;       // the bench kernel name
  std::string role;       // block kernels: q, k, v, o, gate, up, down (matmul); attn, ffn, final (norm);
                          // q, k (rope); ffn (activation); tokens (embedding); residual (add)
  std::string precision;  // "f16" for the _f16 shader variants, else "f32"
  double ms = 0.0;
  uint32_t pieces = 1;            // dispatches it was cut into (the watchdog bound)
  double longest_piece_ms = 0.0;  // the longest of them: what a watchdog sees
};

// Classifies one submission's dispatches, in order. `policy_name` names the
// usage and policy_update dispatches ("policy_lra_sum"). A select_merge
// belongs to the select (top-K or eviction) dispatched before it.
std::vector<Dispatch> classify(const std::vector<attendre::KernelTime>& profile, const std::string& policy_name);

// --dispatches: one line per dispatch of one step (shader, bench name, ms), for
// explaining a kernel's time with the dispatches behind it.
void print_dispatches(const std::string& title, const std::vector<attendre::KernelTime>& profile,
                      const std::vector<Dispatch>& dispatches);

// Milliseconds per kernel name over one submission, in first-seen order.
std::vector<std::pair<std::string, double>> sum_by_name(const std::vector<Dispatch>& dispatches);

}  // namespace bench
