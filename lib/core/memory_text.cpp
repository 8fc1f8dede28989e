#include "core/number_text.hpp"
#include "core/try.hpp"

#include <attendre/memory_text.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <string>

namespace attendre {
namespace {

Status invalid(std::string message) { return {ErrorCode::invalid_argument, std::move(message)}; }

// A JSON number that reads back as `value` and stays a number with a
// fraction (0.0, not 0), as a JSON library writes a double.
std::string json_double(double value) {
  std::string text = shortest_text(value);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

// Names only (policies, storage kinds): nothing to escape.
std::string json_string(std::string_view text) {
  std::string quoted(1, '"');
  return quoted.append(text).append(1, '"');
}

MemoryPreset make_reader_preset() {
  MemoryPlan plan;
  plan.chunk = 32;
  plan.all.q_capacity = 32;
  plan.all.kv.capacity = 256;
  plan.all.top_k = 32;
  plan.all.kv.policy.lambda = 1e-3;  // applies when lfa is named
  return {"reader", plan, "a document read in a small memory, each query waiting a chunk for later keys"};
}

}  // namespace

std::string memory_field_names() { return "q-capacity, kv-capacity, top-k, sinks, recent, policy, lambda, init-k"; }

Result<MemoryFields> parse_memory_fields(std::string_view text) {
  MemoryFields f;
  bool any = false;
  // Split at commas; a trailing comma ends the list, an empty field is refused.
  for (size_t start = 0; start < text.size();) {
    const size_t comma = std::min(text.find(',', start), text.size());
    const std::string_view field = text.substr(start, comma - start);
    start = comma + 1;
    const size_t eq = field.find('=');
    if (eq == std::string_view::npos) return invalid("expected NAME=VALUE, got '" + std::string(field) + "'");
    const std::string_view name = field.substr(0, eq), value = field.substr(eq + 1);
    if (name == "q-capacity") { ATTENDRE_TRY_ASSIGN(f.q_capacity, parse_count_text(name, value, false)); }
    else if (name == "kv-capacity") { ATTENDRE_TRY_ASSIGN(f.kv_capacity, parse_count_text(name, value, true)); }
    else if (name == "top-k") { ATTENDRE_TRY_ASSIGN(f.top_k, parse_count_text(name, value, true)); }
    else if (name == "sinks") { ATTENDRE_TRY_ASSIGN(f.sinks, parse_count_text(name, value, false)); }
    else if (name == "recent") { ATTENDRE_TRY_ASSIGN(f.recent, parse_count_text(name, value, false)); }
    else if (name == "lambda") { ATTENDRE_TRY_ASSIGN(f.lambda, parse_number_text(name, value, true)); }
    else if (name == "init-k") { ATTENDRE_TRY_ASSIGN(f.init_k, parse_number_text(name, value, false)); }
    else if (name == "policy") {
      f.policy = parse_policy(value);
      if (!f.policy)
        return invalid("policy: expected one of fifo, lru, lfu, lra_last, lra_max, lra_sum, lfa, got '" +
                       std::string(value) + "'");
    } else {
      return invalid("unknown setting '" + std::string(name) + "' (" + memory_field_names() + ")");
    }
    any = true;
  }
  if (!any) return invalid("no setting");
  return f;
}

void apply_memory_fields(MemorySetting& s, const MemoryFields& f) {
  if (f.q_capacity) s.q_capacity = *f.q_capacity;
  if (f.kv_capacity) s.kv.capacity = *f.kv_capacity;
  if (f.top_k) s.top_k = *f.top_k;
  if (f.sinks) s.kv.n_sink = *f.sinks;
  if (f.recent) s.kv.n_recent = *f.recent;
  if (f.policy || f.lambda || f.init_k) {
    Policy& p = s.kv.policy;
    p.kind = f.policy.value_or(p.kind);
    p.lambda = f.lambda.value_or(p.lambda);
    p.initial = InitialScore::mean_minus_sigma(f.init_k.value_or(p.initial.k));
  }
}

const MemoryPreset& reader_memory_preset() {
  static const MemoryPreset preset = make_reader_preset();
  return preset;
}

std::string describe(const MemoryPlan& plan) {
  const MemorySetting& s = plan.all;
  return "S=" + std::to_string(plan.chunk) + " N=" + std::to_string(s.q_capacity) + " M=" +
         std::to_string(s.kv.capacity) + " K=" + (s.top_k ? std::to_string(s.top_k) : std::string("M")) +
         " lambda=" + shortest_text(s.kv.policy.lambda);
}

std::string memory_block_json(const BlockConfig& b) {
  const LayerConfig& a = b.attention;
  std::string j = "{";
  const auto field = [&j](std::string_view name, const std::string& value) {
    if (j.size() > 1) j += ',';
    j.append("\"").append(name).append("\":").append(value);
  };
  field("N", std::to_string(a.q_capacity));
  field("M", std::to_string(a.kv.capacity));
  field("K", std::to_string(a.retrieval.top_k));
  field("policy", json_string(to_string(a.kv.policy.kind)));
  field("lambda", json_double(a.kv.policy.lambda));
  field("sinks", std::to_string(a.kv.n_sink));
  field("recent", std::to_string(a.kv.n_recent));
  field("storage", json_string(to_string(a.kv.storage)));
  field("causal", a.retrieval.causal ? "true" : "false");
  // A sliding window's distance mask, null where none hides keys.
  field("window", a.retrieval.window > 0 ? std::to_string(a.retrieval.window) : "null");
  // LM-Infinite's window, null where distances are not capped.
  field("lm_infinite", b.lm_infinite.enabled ? std::to_string(b.lm_infinite.n_local) : "null");
  return j + "}";
}

std::string memory_json(const StackConfig& config, bool flush) {
  std::string blocks;
  for (const BlockConfig& b : config.blocks) {
    if (!blocks.empty()) blocks += ',';
    blocks += memory_block_json(b);
  }
  std::string j = "{\"chunk\":";
  j.append(std::to_string(config.chunk)).append(",\"flush\":").append(flush ? "true" : "false");
  j.append(",\"activations\":").append(json_string(to_string(config.activations)));
  return j.append(",\"blocks\":[").append(blocks).append("]}");
}

}  // namespace attendre
