#include "json_output.hpp"

#include <attendre/memory_text.hpp>

#include <nlohmann/json.hpp>

namespace reader {
namespace {

using nlohmann::json;

json range(const PositionRange& r) { return r.empty() ? json(nullptr) : json::array({r.first, r.last}); }

json configuration(const Session& s) {
  json blocks = json::array();
  for (const attendre::BlockConfig& b : s.config.blocks) {
    // The library's memory form (N, M, K, sinks, recent, storage, lm_infinite, ...),
    // with the shape and this schema's longer names of N, M and K.
    const attendre::LayerConfig& a = b.attention;
    json block = json::parse(attendre::memory_block_json(b));
    block.update({{"heads_q", a.shape.heads_q},
                  {"heads_kv", a.shape.heads_kv},
                  {"head_dim", a.shape.head_dim},
                  {"q_capacity", a.q_capacity},
                  {"kv_capacity", a.kv.capacity},
                  {"top_k", a.retrieval.top_k}});
    blocks.push_back(std::move(block));
  }
  const MemorySettings& m = s.memory;
  const json initial = m.init_const ? json{{"kind", "constant"}, {"value", *m.init_const}}
                                    : json{{"kind", "mean_minus_k_sigma"}, {"k", m.init_k.value_or(1.0)}};
  return {{"preset", std::string(attendre::reader_memory_preset().name)},
          {"chunk", s.config.chunk},     {"finish", m.flush ? "flush" : "drain"}, {"weights", s.weights},
          {"hidden", s.config.hidden},   {"lambda", m.lambda},                     {"initial_score", initial},
          {"activations", std::string(attendre::to_string(s.config.activations))},
          {"blocks", blocks}};
}

json run_json(const Session& s, size_t index) {
  const RunResult& r = s.runs[index];
  json policies = json::array(), recent = json::array();
  for (size_t l = 0; l < r.config.blocks.size(); ++l) policies.push_back(r.policies.size() == 1 ? r.policies[0] : r.policies[l]);
  for (const attendre::BlockConfig& b : r.config.blocks) recent.push_back(b.attention.kv.n_recent);
  json needles = json::array();
  uint32_t kept = 0;
  for (const NeedleInfo& n : s.needles) {
    json per_block = json::array();
    for (const BlockRetention& b : r.blocks) per_block.push_back(b.held_in(n.positions.first, n.positions.last));
    const bool retained = r.last_block().held_in(n.positions.first, n.positions.last) > 0;
    kept += retained ? 1u : 0u;
    needles.push_back({{"retained", retained}, {"held_per_block", per_block}});
  }
  json blocks = json::array();
  for (const BlockRetention& b : r.blocks) blocks.push_back({{"capacity", b.capacity}, {"held", b.positions}, {"scores", b.scores}});
  json passages = json::array();
  for (const Passage& p : s.passages[index])
    passages.push_back({{"first", p.first},
                        {"last", p.last},
                        {"held", p.held},
                        {"question", p.question},
                        {"needle", p.needle >= 0 ? json(p.needle) : json(nullptr)},
                        {"text", p.text}});
  json memory = nullptr;
  if (r.device_bytes) memory = {{"total", *r.device_bytes}, {"blocks", r.block_device_bytes}};
  json mass = nullptr;
  if (r.mass) mass = {{"value", r.mass->value}, {"block", 0}, {"queries", r.mass->queries}};
  return {{"policy", r.label},
          {"policies", policies},
          {"recent", recent},
          {"needles", needles},
          {"needles_retained", kept},
          {"retained_mass", mass},
          {"steps", r.steps},
          {"seconds", r.seconds},
          {"tokens_per_second", r.tokens_per_second(s.survey.tokens)},
          {"device_memory", memory},
          {"blocks", blocks},
          {"passages", passages},
          {"answer", r.answer ? json(*r.answer) : json(nullptr)}};
}

}  // namespace

std::string json_text(const Session& s) {
  json needles = json::array();
  for (const NeedleInfo& n : s.needles)
    needles.push_back({{"key", n.key},
                       {"answer", n.answer},
                       {"fact", n.fact},
                       {"requested_depth", n.requested_depth},
                       {"depth", n.depth},
                       {"positions", range(n.positions)}});
  json runs = json::array();
  for (size_t r = 0; r < s.runs.size(); ++r) runs.push_back(run_json(s, r));
  const json document = {{"source", s.source},
                         {"name", s.source_name},
                         {"tokens", s.survey.tokens},
                         {"question", s.question},
                         {"template", s.template_text},
                         {"question_positions", range(s.survey.question)},
                         {"context_positions", range(s.survey.context)}};
  const json out = {{"schema", "attendre-reader/1"},
                    {"device", s.device},
                    {"model", {{"kind", s.backend_kind}, {"description", s.backend_description}, {"blocks", s.block_roles}}},
                    {"document", document},
                    {"needles", needles},
                    {"configuration", configuration(s)},
                    {"runs", runs},
                    {"answer", s.runs.front().answer ? json(*s.runs.front().answer) : json(nullptr)}};
  // Paths are bytes, not always UTF-8: replace what is not rather than fail at the very end.
  return out.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

}  // namespace reader
