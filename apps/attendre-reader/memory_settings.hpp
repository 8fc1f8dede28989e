// The memory the reader puts into the model's stack: chunk S, per block N,
// M, K and sinks, the eviction policy (for the whole stack or per block),
// LFA's lambda, the initial score, drain or flush, fp16 weight storage,
// fp16 memories and activations.
// Flag names follow attendre-replay's, so a reader run can be replayed.
#pragma once

#include <attendre/config.hpp>
#include <attendre/memory_text.hpp>
#include <attendre/stack.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace reader {

// Policies by the names the command line takes: the seven of spec 2.4 and
// the aliases of attendre/memory_names.hpp (sinks and streamingllm: 4 sinks
// unless --sinks says; h2o: a window of W = (M - sinks) / 2 unless --recent
// says).
bool is_policy_name(const std::string& name);
std::string policy_names();  // "fifo, lru, ..., sinks, streamingllm, tova, h2o"

// The reader's flags, which start from the library's "reader" preset
// (attendre::reader_memory_preset(): S = 32, N = 32, M = 256, K = 32, LFA's
// lambda 1e-3) and become a MemoryPlan in configure_stack.
struct MemorySettings {
  static const attendre::MemoryPlan& preset() { return attendre::reader_memory_preset().plan; }
  uint32_t chunk = preset().chunk;  // S
  // One value for every block, or one per block.
  std::vector<uint32_t> q_capacity{preset().all.q_capacity};   // N
  std::vector<uint32_t> kv_capacity{preset().all.kv.capacity};  // M
  std::vector<uint32_t> top_k{preset().all.top_k};             // K
  std::vector<uint32_t> sinks{preset().all.kv.n_sink};
  std::vector<uint32_t> recent{preset().all.kv.n_recent};  // W of the recent window
  double lambda = preset().all.kv.policy.lambda;  // LFA-10^-3, the paper's
  std::optional<double> init_k;      // mu - k*sigma (spec default k = 1)
  std::optional<double> init_const;  // a constant initial score instead
  bool flush = false;                // finish by flushing instead of draining
  bool fp16 = false;                 // fp16 weight storage where the device has it
  bool fp16_memory = false;          // K/V and Q memories in fp16 (KvMemoryConfig::storage)
  bool fp16_activations = false;     // the products' input rows in fp16 (StackConfig::activations)
};

// One name per block, or one name for the whole stack.
using PolicyList = std::vector<std::string>;

// "lra_sum", or "fifo,lra_sum,lra_sum" for a per-block list.
std::string label(const PolicyList& policies);

// `shape` with the memory applied to every block, through the library's
// MemoryPlan (the blocks' retrieval mode, causal mask and LM-Infinite kept as
// the backend set them). Throws invalid_argument naming the flag whose list
// does not have 1 or `blocks` entries; the stack's own validation then
// judges the values.
attendre::StackConfig configure_stack(attendre::StackConfig shape, const MemorySettings& memory,
                                      const PolicyList& policies);

// The per-block value a list gives.
uint32_t per_block(const std::vector<uint32_t>& values, size_t block);

}  // namespace reader
