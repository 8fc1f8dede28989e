// Memory settings as text and as JSON, for every tool, the reader and the
// bindings alike (the setting itself is memory_plan.hpp's MemorySetting /
// MemoryPlan; its names and aliases are memory_names.hpp's):
// - `key=value[,key=value...]` fields, as --layer BLOCKS:FIELDS takes them;
// - named presets of a whole plan (the reader's defaults);
// - the JSON form of the memories a stack runs with (the tools' --json).
#pragma once

#include <attendre/memory_plan.hpp>
#include <attendre/stack.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace attendre {

// What `key=value` text sets; absent fields keep what they are applied to.
// Keys: q-capacity (N), kv-capacity (M, > 0), top-k (K, > 0), sinks, recent
// (W), policy (one of spec 2.4's seven), lambda (>= 0), init-k.
struct MemoryFields {
  std::optional<uint32_t> q_capacity, kv_capacity, top_k, sinks, recent;
  std::optional<PolicyKind> policy;
  std::optional<double> lambda, init_k;
};

// "q-capacity=4,policy=lfa" into fields. invalid_argument naming the
// problem: "expected NAME=VALUE, got 'x'", "unknown setting 'x' (q-capacity,
// ...)", "q-capacity: expected a non-negative integer, got 'x'", or "no
// setting" for empty text.
Result<MemoryFields> parse_memory_fields(std::string_view text);
// The keys, comma-separated, as the messages list them.
std::string memory_field_names();
// Sets what `fields` set. A policy, lambda or init-k sets the policy anew
// from them and the setting's current kind, lambda and k (initial score
// mu - k*sigma).
void apply_memory_fields(MemorySetting& setting, const MemoryFields& fields);

// A named plan of defaults, printed by the tools that use it.
struct MemoryPreset {
  std::string_view name;
  MemoryPlan plan;
  std::string_view why;  // one line: what the preset is for
};
// "reader": attendre-reader's defaults, S = 32, N = 32, M = 256, K = 32 and
// LFA's lambda 1e-3 (the paper's LFA-10^-3) whenever lfa is named: a
// document read in a small memory, each query waiting a chunk for later
// keys. (The other tools start from a model's own plan, Model::default_memory:
// S = 64, N = 0, M = the trained context, K = M.)
const MemoryPreset& reader_memory_preset();
// "S=32 N=32 M=256 K=32 lambda=0.001" (the plan's `all` setting).
std::string describe(const MemoryPlan& plan);

// {"chunk": S, "flush": bool, "activations": "f32"|"f16", "blocks": [{"N",
// "M", "K", "policy", "lambda", "sinks", "recent", "storage", "causal",
// "lm_infinite"}, ...]} as JSON text: the memories `config` runs with.
std::string memory_json(const StackConfig& config, bool flush);
// One block's object of memory_json().
std::string memory_block_json(const BlockConfig& block);

}  // namespace attendre
