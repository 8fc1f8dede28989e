#include "json.hpp"

#include <nlohmann/json.hpp>

#include <utility>
#include <vector>

namespace bench {
namespace {

// Keys in the order SCHEMA.md lists them.
using Json = nlohmann::ordered_json;

// Non-finite numbers have no JSON form: the writer emits null, which the
// schema forbids, so a checker catches it.

Json device(const DeviceInfo& d) {
  Json variants = Json::array();
  for (const attendre::KernelVariant& v : d.variants) variants.push_back({{"family", v.family}, {"variant", v.variant}, {"reason", v.reason}});
  Json quirks = Json::array(), off = Json::array();
  for (const std::string& q : d.quirks) quirks.push_back(q);
  for (const std::string& f : d.disabled_features) off.push_back(f);
  return {{"name", d.name},
          {"vendor", d.vendor},
          {"vendor_id", d.vendor_id},
          {"device_id", d.device_id},
          {"type", d.type},
          {"driver", d.driver},
          {"api_version", d.api_version},
          {"limits",
           {{"max_invocations", d.max_invocations},
            {"workgroup", d.workgroup},
            {"max_shared_bytes", d.max_shared_bytes},
            {"max_storage_range", d.max_storage_range},
            {"max_allocation", d.max_allocation},
            {"device_local_bytes", d.device_local_bytes},
            {"subgroup_size", d.subgroup_size},
            {"max_loop_iterations", d.max_loop_iterations},
            {"max_groups_per_dispatch", d.max_groups_per_dispatch},
            {"storage_16bit", d.storage_16bit},
            {"timestamp_period_ns", d.timestamp_period_ns}}},
          {"kernel_variants", variants},
          {"quirks", quirks},
          {"disabled_features", off}};
}

Json limit_samples(const std::vector<LimitSample>& samples, const char* size_key, const char* rate_key) {
  Json list = Json::array();
  for (const LimitSample& s : samples) list.push_back({{"variant", s.variant}, {size_key, s.size}, {"ms", s.ms}, {rate_key, s.rate}});
  return list;
}

Json kernel(const KernelResult& k) {
  Json j = {{"name", k.name}};
  if (!k.role.empty()) j["role"] = k.role;
  j["precision"] = k.precision;
  Json shape = Json::object();
  for (const auto& [dim, n] : k.shape) shape[dim] = n;
  j["shape"] = shape;
  j["median_ms"] = k.median_ms;
  j["samples"] = k.samples;
  j["bytes"] = k.bytes;
  j["flops"] = k.flops;
  j["gbps"] = k.gbps;
  j["gflops"] = k.gflops;
  j["efficiency"] = k.efficiency;
  j["bound"] = k.bound;
  if (k.weight_bytes > 0.0) {
    j["weight_bytes"] = k.weight_bytes;
    j["weight_gbps"] = k.weight_gbps;
    j["copy_fraction"] = k.copy_fraction;
  }
  return j;
}

Json preset(const Preset& p) {
  Json kernel_ms = Json::object();
  for (const KernelSplit& k : p.kernel_ms) kernel_ms[k.name] = k.ms;
  return {{"name", p.name},
          {"model", p.model},
          {"precision", p.precision},
          {"policy", p.policy},
          {"lm_infinite", p.lm_infinite},
          {"kv_storage", p.kv_storage},
          {"activations", p.activations},
          {"layers_model", p.layers_model},
          {"layers_run", p.layers_run},
          {"vocab_model", p.vocab_model},
          {"vocab_run", p.vocab_run},
          {"hidden", p.hidden},
          {"ffn", p.ffn},
          {"heads_q", p.heads_q},
          {"heads_kv", p.heads_kv},
          {"head_dim", p.head_dim},
          {"S", p.S},
          {"M", p.M},
          {"N", p.N},
          {"K", p.K},
          {"ms_per_step", p.ms_per_step},
          {"tokens_per_s", p.tokens_per_s},
          {"kernel_ms", kernel_ms},
          {"overhead_ms", p.overhead_ms},
          {"gpu_bytes", p.gpu_bytes},
          {"planned_full_bytes", p.planned_full_bytes},
          {"ms_per_step_full_depth", p.ms_per_step_full_depth},
          {"steps_timed", p.steps_timed},
          {"dispatches", p.dispatches},
          {"barriers", p.barriers},
          {"longest_dispatch_ms", p.longest_dispatch_ms},
          {"longest_dispatch", p.longest_dispatch},
          {"notes", p.notes}};
}

Json scaling(const Scaling& s) {
  Json j = {{"heads_q", s.heads_q}, {"heads_kv", s.heads_kv}, {"head_dim", s.head_dim}, {"S", s.S},
            {"M", s.M},             {"N", s.N},               {"K", s.K}};
  for (const auto& [name, series] : {std::pair{"bounded", &s.bounded}, std::pair{"dense", &s.dense}}) {
    Json points = Json::array();
    for (const ScalingPoint& p : *series)
      points.push_back({{"positions", p.positions}, {"ms_per_step", p.ms_per_step}, {"streamed", p.streamed}});
    j[name] = points;
  }
  if (!s.dense_stopped.empty()) j["dense_stopped"] = s.dense_stopped;
  if (s.crossover) j["crossover_positions"] = *s.crossover;
  return j;
}

}  // namespace

std::string to_json(const Results& r) {
  Json j = {{"schema", "attendre-bench/1"},
            {"quick", r.quick},
            {"filter", r.filter},
            {"runtime_s", r.runtime_s},
            {"device", device(r.device)},
            {"copy_gbps", r.limits.copy_gbps},
            {"fma_gflops", r.limits.fma_gflops},
            {"limits",
             {{"copy", limit_samples(r.limits.copy, "bytes", "gbps")},
              {"fma", limit_samples(r.limits.fma, "invocations", "gflops")}}}};
  Json kernels = Json::array();
  for (const KernelResult& k : r.kernels) kernels.push_back(kernel(k));
  j["kernels"] = kernels;
  Json skipped = Json::array();
  for (const Skipped& s : r.skipped) skipped.push_back({{"what", s.what}, {"reason", s.reason}});
  j["skipped"] = skipped;
  Json presets = Json::array();
  for (const Preset& p : r.presets) presets.push_back(preset(p));
  j["presets"] = presets;
  Json plans = Json::array();
  for (const PresetFootprint& m : r.footprints)
    plans.push_back({{"name", m.name}, {"layers", m.layers}, {"vocab", m.vocab}, {"precision", m.precision}, {"kv_storage", m.kv_storage}, {"activations", m.activations},
                     {"gpu_bytes", m.gpu_bytes}});
  j["memory_plans"] = plans;
  if (r.scaling) j["scaling"] = scaling(*r.scaling);
  // Strings come from the device and the options: invalid UTF-8 becomes U+FFFD rather than an exception.
  return j.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

}  // namespace bench
