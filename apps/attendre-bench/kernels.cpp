#include "kernels.hpp"

#include "costs.hpp"
#include "feeder.hpp"
#include "profile.hpp"
#include "stats.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>

namespace bench {
namespace {

using attendre::Policy;
using attendre::PolicyKind;

// The base shape, and the sweep around it: one dimension at a time. N = M
// in every shape: queries start to retrieve only once the memory is full,
// so filling it costs insertions only (no kernel's cost depends on N).
const LayerShape kBase{2048, 64, 64, 64, 8, 2, 2048};
// --quick: the same sweep dimensions at a shape small enough for CPU drivers.
const LayerShape kQuickBase{2048, 32, 64, 16, 4, 1, 2048};

LayerShape with_memory(LayerShape s, uint32_t M) {
  s.M = s.N = M;
  return s;
}

std::vector<LayerShape> sweep_shapes(bool quick) {
  if (quick) return {with_memory(kQuickBase, 256), kQuickBase};
  std::vector<LayerShape> shapes;
  for (uint32_t M : {256u, 512u, 1024u, 2048u, 4096u, 8192u, 16384u}) shapes.push_back(with_memory(kBase, M));
  for (uint32_t K : {32u, 128u, 256u}) {
    LayerShape s = kBase;
    s.K = K;
    shapes.push_back(s);
  }
  LayerShape wide = kBase;
  wide.D = 128;
  shapes.push_back(wide);
  for (uint32_t S : {16u, 32u, 128u, 256u}) {
    LayerShape s = kBase;
    s.S = S;
    shapes.push_back(s);
  }
  for (uint32_t H : {4u, 16u, 32u}) {
    LayerShape s = kBase;
    s.heads_q = H;
    s.heads_kv = H / 4;
    shapes.push_back(s);
  }
  return shapes;
}

std::string label(const LayerShape& s) {
  return "M=" + std::to_string(s.M) + " K=" + std::to_string(s.K) + " D=" + std::to_string(s.D) +
         " S=" + std::to_string(s.S) + " heads=" + std::to_string(s.heads_q) + "/" + std::to_string(s.heads_kv);
}

attendre::LayerConfig layer_config(const LayerShape& s, const Policy& policy) {
  attendre::LayerConfig c;
  c.shape = {s.heads_q, s.heads_kv, s.D};
  c.chunk = s.S;
  c.q_capacity = s.N;
  c.kv.capacity = s.M;
  c.kv.policy = policy;
  c.retrieval.top_k = s.K;
  return c;
}

std::string policy_name(const Policy& p) { return "policy_" + std::string(attendre::to_string(p.kind)); }

// Per kernel name, the step's milliseconds of each timed repeat.
using StepTimes = std::map<std::string, std::vector<double>>;

struct Repeats {
  uint32_t min = 3, max = 7;
  double budget_s = 10.0;  // stop adding repeats past min once this much time went by
};

// Streams until the memory holds M entries and queries flow (every later
// step evicts S entries and retrieves with S queries), one warm-up step,
// then profiled steps: at least `r.min`, at most `r.max`, within `r.budget_s`.
StepTimes time_layer(attendre::Context& context, const LayerShape& s, const Policy& policy, const Repeats& r,
                     bool print) {
  auto layer_owner = attendre::gpu::Layer::create(context, layer_config(s, policy)).value_or_throw();
  attendre::gpu::Layer& layer = *layer_owner;
  LayerFeeder feeder(layer.config().shape, s.S, 0x5EED + s.M);
  attendre::StepRequest quiet;
  quiet.outputs = false;
  const uint32_t fill = (std::max(s.M, s.N) + s.S - 1) / s.S + 1;
  for (uint32_t i = 0; i < fill; ++i) layer.step(feeder.next(), quiet).value_or_throw();
  layer.set_profiling(true).or_throw();
  layer.step(feeder.next(), quiet).value_or_throw();  // warm-up
  layer.wait().or_throw();
  StepTimes times;
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t i = 0; i < r.max; ++i) {
    if (i >= r.min && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > r.budget_s) break;
    layer.step(feeder.next(), quiet).value_or_throw();
    const std::vector<attendre::KernelTime> profile = layer.last_profile().value_or_throw();
    const std::vector<Dispatch> dispatches = classify(profile, policy_name(policy));
    if (print && i == 0) print_dispatches(label(s) + ", " + policy_name(policy), profile, dispatches);
    for (const auto& [name, ms] : sum_by_name(dispatches)) times[name].push_back(ms);
  }
  return times;
}

Cost cost_of(const std::string& name, const LayerShape& s, bool attention_scored) {
  if (name == "score") return score_cost(s);
  if (name == "topk") return topk_cost(s);
  if (name == "attend") return attend_cost(s);
  if (name == "flash_attend") return flash_attend_cost(s);
  if (name == "evict_select") return evict_select_cost(s);
  if (name == "compact") return compact_cost(s, attention_scored);
  return policy_cost(s);  // policy_<p>
}

void add_kernel(Results& results, const std::string& name, const LayerShape& s, const std::vector<double>& ms,
                bool attention_scored) {
  KernelResult k;
  k.name = name;
  k.precision = "f32";
  k.shape = s.shape();
  k.median_ms = median(ms);
  k.samples = static_cast<uint32_t>(ms.size());
  const Cost c = cost_of(name, s, attention_scored);
  k.bytes = c.bytes;
  k.flops = c.flops;
  if (k.median_ms <= 0.0) return;  // below the timestamp resolution: nothing to rate
  rate(k, results.limits);
  results.kernels.push_back(std::move(k));
}

bool skippable(const attendre::Error& e) {
  return e.code() == attendre::ErrorCode::unsupported || e.code() == attendre::ErrorCode::out_of_device_memory ||
         e.code() == attendre::ErrorCode::infeasible_config;
}

}  // namespace

void sweep_layer_kernels(attendre::Context& context, const Options& options, Results& results) {
  const Filter& f = options.filter;
  const Repeats repeats = options.quick ? Repeats{3, 3, 0.0} : Repeats{3, 7, 10.0};
  const std::vector<std::string> names = {"score", "topk", "attend", "evict_select", "compact"};
  const Policy base_policy = Policy::lra_sum();

  // Every shape under the attention-scored lra_sum, which runs every layer kernel.
  bool want_base = f.layer_kernel(policy_name(base_policy));
  for (const std::string& n : names) want_base = want_base || f.layer_kernel(n);
  if (want_base) {
    for (const LayerShape& s : sweep_shapes(options.quick)) {
      std::fprintf(stderr, "attendre-bench: layer kernels at %s\n", label(s).c_str());
      try {
        const StepTimes t = time_layer(context, s, base_policy, repeats, options.dispatches);
        for (const auto& [name, ms] : t) {
          // Only names with a cost model; a new library shader shows up in the presets' split instead.
          const bool known = name == policy_name(base_policy) || std::find(names.begin(), names.end(), name) != names.end();
          if (known && f.layer_kernel(name)) add_kernel(results, name, s, ms, true);
        }
      } catch (const attendre::Error& e) {
        if (!skippable(e)) throw;
        results.skipped.push_back({"layer kernels at " + label(s), e.what()});
      }
    }
  }

  // Full attention (K = M) at the base shape both ways, alternately in one
  // run: fifo reads no per-entry weight and takes flash_attend (one pass, no
  // logits); lra_sum reads every weight and takes score + attend.
  if (f.layer_kernel("flash_attend")) {
    LayerShape full = kBase;
    full.K = full.M;
    StepTimes both;  // flash_attend from fifo's steps, score and attend from lra_sum's
    for (uint32_t round = 0; round < 2; ++round)
      for (const Policy& p : {Policy::fifo(), Policy::lra_sum()}) {
        std::fprintf(stderr, "attendre-bench: full attention, %s, at %s\n", policy_name(p).c_str(), label(full).c_str());
        try {
          const StepTimes t = time_layer(context, full, p, repeats, options.dispatches && round == 0);
          for (const char* name : {"flash_attend", "score", "attend"})
            if (auto it = t.find(name); it != t.end()) both[name].insert(both[name].end(), it->second.begin(), it->second.end());
        } catch (const attendre::Error& e) {
          if (!skippable(e)) throw;
          if (round == 0) results.skipped.push_back({"full attention (" + policy_name(p) + ") at " + label(full), e.what()});
        }
      }
    for (const auto& [name, ms] : both) add_kernel(results, name, full, ms, true);
  }

  // The other policies' update kernels at the base shape.
  const std::vector<Policy> others = {Policy::lru(), Policy::lfu(), Policy::lra_last(), Policy::lra_max(),
                                      Policy::lfa(1e-3)};
  const std::vector<LayerShape> policy_shapes = {options.quick ? with_memory(kQuickBase, 256) : kBase};
  for (const Policy& p : others) {
    if (!f.layer_kernel(policy_name(p))) continue;
    for (const LayerShape& s : policy_shapes) {
      std::fprintf(stderr, "attendre-bench: %s at %s\n", policy_name(p).c_str(), label(s).c_str());
      try {
        const StepTimes t = time_layer(context, s, p, repeats, options.dispatches);
        if (auto it = t.find(policy_name(p)); it != t.end()) add_kernel(results, it->first, s, it->second, p.attention_scored());
      } catch (const attendre::Error& e) {
        if (!skippable(e)) throw;
        results.skipped.push_back({policy_name(p) + " at " + label(s), e.what()});
      }
    }
  }
  if (f.layer_kernel("policy_fifo"))
    results.skipped.push_back({"policy_fifo", "fifo keeps no score: no usage or policy_update kernel runs"});
  if (want_base || f.any_layer_kernel())
    results.skipped.push_back({"layer kernels in f16", "attendre stores keys, values and queries in fp32 only; "
                                                     "fp16 applies to the stack's weights (block kernels)"});
}

}  // namespace bench
