#include "core/fail.hpp"
#include "presets.hpp"

#include "costs.hpp"
#include "feeder.hpp"
#include "profile.hpp"
#include "stats.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu_stack.hpp>

#include <chrono>
#include <cstdio>
#include <map>

namespace bench {
namespace {

using attendre::StackConfig;
using attendre::WeightType;

struct Spec {
  const char* name;
  const char* model;
  uint32_t hidden, layers, heads_q, heads_kv, head_dim, ffn, vocab;
  double rope_theta;
  uint32_t S, M, N, K;
};

// Model shapes after SmolLM-135M and Llama-3.2-1B (both tie the LM head to
// the token embeddings); memories as the issue names them.
const Spec kSpecs[] = {
    {"mobile", "SmolLM-135M-class", 576, 30, 9, 3, 64, 1536, 49152, 10000.0, 64, 512, 256, 64},
    {"desktop", "Llama-3.2-1B-class", 2048, 16, 32, 8, 64, 8192, 128256, 500000.0, 128, 2048, 1024, 128},
};
const attendre::Policy kPolicy = attendre::Policy::lra_sum();

StackConfig stack_config(const Spec& s, uint32_t layers, uint32_t vocab, WeightType weights, const Options& options) {
  const uint32_t lm_infinite = options.lm_infinite;
  StackConfig c;
  c.hidden = s.hidden;
  c.vocab = vocab;
  c.tied_embeddings = vocab > 0;
  c.chunk = s.S;
  c.weights = weights;
  c.activations = options.fp16_activations ? attendre::MemoryStorage::f16 : attendre::MemoryStorage::f32;
  for (uint32_t l = 0; l < layers; ++l) {
    attendre::BlockConfig b;
    b.attention.shape = {s.heads_q, s.heads_kv, s.head_dim};
    b.attention.q_capacity = s.N;
    b.attention.kv.capacity = s.M;
    b.attention.kv.policy = kPolicy;
    b.attention.kv.storage = options.fp16_memory ? attendre::MemoryStorage::f16 : attendre::MemoryStorage::f32;
    b.attention.retrieval.top_k = s.K;
    b.ffn = s.ffn;
    b.rope_theta = s.rope_theta;
    b.lm_infinite = {lm_infinite > 0, lm_infinite};
    c.blocks.push_back(b);
  }
  return c;
}

uint32_t default_layers(const Options& o, const Spec& s) {
  if (o.layers == 0) return s.layers;
  if (o.layers > 0) return std::min<uint32_t>(static_cast<uint32_t>(o.layers), s.layers);
  // Defaults sized for CPU drivers, where a desktop block step takes many seconds.
  if (o.quick) return 1;
  return std::string(s.name) == "mobile" ? 2 : 1;
}

// The shape of a block kernel from its role in the block, and its cost.
bool block_shape(const Spec& s, const Dispatch& d, uint32_t weight_bytes, Shape& shape, Cost& cost) {
  const uint64_t R = s.S, H = s.hidden, Q = uint64_t{s.heads_q} * s.head_dim, KV = uint64_t{s.heads_kv} * s.head_dim;
  auto mm = [&](uint64_t in, uint64_t out, bool residual) {
    shape = {{"rows", R}, {"in", in}, {"out", out}};
    cost = matmul_cost(R, in, out, weight_bytes, residual);
    return true;
  };
  if (d.name == "matmul" || d.name == "matvec") {
    if (d.role == "q") return mm(H, Q, false);
    if (d.role == "k" || d.role == "v") return mm(H, KV, false);
    if (d.role == "o") return mm(Q, H, true);
    if (d.role == "gate" || d.role == "up") return mm(H, s.ffn, false);
    if (d.role == "gate_up") return mm(H, 2 * s.ffn, false);  // both products (the activation's cost aside)
    if (d.role == "qkv") return mm(H, Q + 2 * KV, false);  // a split product: q, k and v at once
    if (d.role == "down") return mm(s.ffn, H, true);
    return false;
  }
  if (d.name.rfind("norm_", 0) == 0 && (d.role == "attn" || d.role == "ffn")) {
    shape = {{"rows", R}, {"cols", H}};
    cost = norm_cost(R, H);
    return true;
  }
  if (d.name == "rope") {
    const uint64_t heads = d.role == "q" ? s.heads_q : s.heads_kv;
    shape = {{"rows", R}, {"heads", heads}, {"head_dim", s.head_dim}};
    cost = rope_cost(R, heads, s.head_dim);
    return true;
  }
  if (d.name == "activation") {
    shape = {{"rows", R}, {"cols", s.ffn}};
    cost = activation_cost(R, s.ffn, true);
    return true;
  }
  if (d.name == "embedding") {
    shape = {{"rows", R}, {"cols", H}};
    cost = embedding_cost(R, H, weight_bytes);
    return true;
  }
  return false;
}

bool is_block_kernel(const std::string& name) {
  return name == "matmul" || name == "matvec" || name.rfind("norm_", 0) == 0 || name == "rope" ||
         name == "activation" || name == "embedding" || name == "add";
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void run_one(attendre::Context& context, const Options& options, const Spec& spec, WeightType weights,
             bool report_preset, Results& results) {
  const attendre::DeviceCaps& caps = context.caps();
  const uint32_t wbytes = weights == WeightType::f16 ? 2 : 4;
  const std::string precision = wbytes == 2 ? "f16" : "f32";
  const std::string name = std::string(spec.name) + (wbytes == 2 ? "-f16" : "");
  Preset p;
  p.name = name;
  p.model = spec.model;
  p.hidden = spec.hidden;
  p.ffn = spec.ffn;
  p.heads_q = spec.heads_q;
  p.heads_kv = spec.heads_kv;
  p.head_dim = spec.head_dim;
  p.layers_model = spec.layers;
  p.layers_run = default_layers(options, spec);
  p.vocab_model = spec.vocab;
  p.S = spec.S, p.M = spec.M, p.N = spec.N, p.K = spec.K;
  p.policy = std::string(attendre::to_string(kPolicy.kind));
  p.lm_infinite = options.lm_infinite;
  p.kv_storage = options.fp16_memory ? "f16" : "f32";
  p.activations = options.fp16_activations ? "f16" : "f32";
  p.precision = precision;
  p.planned_full_bytes = attendre::gpu::plan_stack_memory(stack_config(spec, spec.layers, spec.vocab, weights, options), caps).value_or_throw().total();

  // A token table past one storage range cannot be bound: feed embeddings instead.
  const uint64_t table = uint64_t{spec.vocab} * spec.hidden * wbytes;
  p.vocab_run = table + 512 <= caps.max_storage_range ? spec.vocab : 0;
  if (p.vocab_run == 0)
    p.notes.push_back("vocabulary not run: the " + std::to_string(table >> 20) + " MiB token table exceeds one " +
                      std::to_string(caps.max_storage_range >> 20) + " MiB storage range, so the stack is fed embeddings");
  if (p.layers_run < p.layers_model)
    p.notes.push_back(std::to_string(p.layers_run) + " of " + std::to_string(p.layers_model) +
                      " blocks run (--layers 0 runs all); ms_per_step_full_depth scales the step by the depth");
  const StackConfig config = stack_config(spec, p.layers_run, p.vocab_run, weights, options);
  const uint64_t planned = attendre::gpu::plan_stack_memory(config, caps).value_or_throw().total();
  if (caps.device_local_bytes && planned > caps.device_local_bytes)
    attendre::fail(attendre::ErrorCode::out_of_device_memory,
                   "needs " + std::to_string(planned >> 20) + " MiB, over the device's " +
                       std::to_string(caps.device_local_bytes >> 20) + " MiB of device-local memory");

  std::fprintf(stderr, "attendre-bench: preset %s (%u of %u blocks)\n", name.c_str(), p.layers_run, p.layers_model);
  attendre::RandomWeights random(42);
  auto stack_owner = attendre::gpu::Stack::create(context, config, random).value_or_throw();
  attendre::gpu::Stack& stack = *stack_owner;
  StackFeeder feeder(config, 7);
  attendre::StackRequest quiet;
  quiet.hidden = false;
  // Steady state: every block's Q memory full (queries leave each block)
  // and its K/V memory full (every step evicts S entries).
  // A run for the block kernels alone needs only the Q memories full (every
  // block kernel then runs on S rows; none depends on the K/V memory).
  const uint64_t warm_positions = config.drain_positions() + (report_preset ? spec.M : 0);
  const uint64_t warm = (warm_positions + spec.S - 1) / spec.S + 1;
  for (uint64_t i = 0; i + 1 < warm; ++i) stack.step(feeder.next(), quiet).value_or_throw();
  auto t_last = std::chrono::steady_clock::now();
  stack.step(feeder.next(), quiet).value_or_throw();
  stack.last_profile().value_or_throw();  // waits for the device
  const double step_s = seconds_since(t_last);

  // Rounds of wall-clock steps (outputs not read back) alternate with
  // profiled steps, so that noise from a shared machine hits both alike;
  // medians over rounds. Steady state is reached: no more warm-up.
  const attendre::gpu::StackMemory memory = stack.memory();
  p.gpu_bytes = memory.total();
  const std::string policy_kernel = "policy_" + p.policy;
  const uint32_t batch = step_s > 2.0 ? 1 : 2, min_rounds = options.quick ? 2 : 3, max_rounds = options.quick ? 2 : 6;
  const double budget_s = options.quick ? 0.0 : 30.0;
  std::vector<double> wall, overhead;
  std::map<std::string, std::vector<double>> per_step;
  std::map<std::tuple<std::string, std::string, std::string>, std::vector<double>> per_dispatch;
  std::vector<std::string> order;
  const auto start = std::chrono::steady_clock::now();
  for (uint32_t round = 0; round < max_rounds; ++round) {
    if (round >= min_rounds && seconds_since(start) > budget_s) break;
    if (report_preset) {
      const auto t0 = std::chrono::steady_clock::now();
      for (uint32_t i = 0; i < batch; ++i) stack.step(feeder.next(), quiet).value_or_throw();
      stack.last_profile().value_or_throw();  // waits for the last step
      wall.push_back(seconds_since(t0) * 1e3 / batch);
      p.steps_timed += batch;
      p.dispatches = stack.last_recorded().dispatches;
      p.barriers = stack.last_recorded().barriers;
    }
    stack.set_profiling(true).or_throw();
    const auto t0 = std::chrono::steady_clock::now();
    stack.step(feeder.next(), quiet).value_or_throw();
    const std::vector<attendre::KernelTime> profile = stack.last_profile().value_or_throw();
    const std::vector<Dispatch> dispatches = classify(profile, policy_kernel);
    if (options.dispatches && round == 0) print_dispatches("preset " + name, profile, dispatches);
    const double profiled_ms = seconds_since(t0) * 1e3;
    stack.set_profiling(false).or_throw();
    double gpu_ms = 0.0;
    for (const Dispatch& d : dispatches) {
      gpu_ms += d.ms;
      if (d.longest_piece_ms > p.longest_dispatch_ms) {  // a piece of a cut grid is what a watchdog times
        p.longest_dispatch_ms = d.longest_piece_ms;
        p.longest_dispatch = d.name + (d.role.empty() ? "" : " (" + d.role + ")");
      }
    }
    overhead.push_back(profiled_ms - gpu_ms);
    for (const auto& [kernel, ms] : sum_by_name(dispatches)) {
      if (!per_step.count(kernel)) order.push_back(kernel);
      per_step[kernel].push_back(ms);
    }
    for (const Dispatch& d : dispatches)
      if (is_block_kernel(d.name)) per_dispatch[{d.name, d.role, d.precision}].push_back(d.ms);
  }
  p.ms_per_step = median(wall);
  p.tokens_per_s = p.ms_per_step > 0.0 ? spec.S / (p.ms_per_step * 1e-3) : 0.0;
  p.ms_per_step_full_depth = p.ms_per_step * p.layers_model / p.layers_run;
  for (const std::string& kernel : order) p.kernel_ms.push_back({kernel, median(per_step[kernel])});
  // The step's wall time minus its kernels' GPU time, both of the same
  // profiled step: recording, submission, barriers' gaps, the wait.
  p.overhead_ms = median(overhead);

  for (const auto& [key, ms] : per_dispatch) {
    const auto& [kernel, role, prec] = key;
    if (!options.filter.block_kernel(kernel)) continue;
    KernelResult k;
    k.name = kernel;
    k.role = role;
    k.precision = kernel == "matmul" || kernel == "matvec" || kernel == "embedding" ? prec : "f32";
    Cost cost;
    if (!block_shape(spec, Dispatch{kernel, role, prec, 0.0}, kernel == "norm_rms" ? 4 : wbytes, k.shape, cost)) continue;
    k.shape.insert(k.shape.begin(), {"hidden", spec.hidden});
    k.bytes = cost.bytes;
    k.flops = cost.flops;
    k.median_ms = median(ms);
    k.samples = static_cast<uint32_t>(ms.size());
    if (k.median_ms <= 0.0) continue;
    rate(k, results.limits);
    // One entry per kernel, role, shape and precision: a second preset run at the same shape adds nothing.
    bool seen = false;
    for (const KernelResult& other : results.kernels)
      seen = seen || (other.name == k.name && other.role == k.role && other.shape == k.shape && other.precision == k.precision);
    if (!seen) results.kernels.push_back(std::move(k));
  }
  if (report_preset) results.presets.push_back(std::move(p));
}

}  // namespace

void run_presets(attendre::Context& context, const Options& options, Results& results) {
  const Filter& f = options.filter;
  const bool blocks = f.any_block_kernel();
  for (const Spec& spec : kSpecs) {
    const bool report = f.preset(spec.name);
    if (report) {
      for (WeightType type : {WeightType::f32, WeightType::f16}) {
        const uint32_t wbytes = type == WeightType::f16 ? 2 : 4;
        const StackConfig full = stack_config(spec, spec.layers, spec.vocab, type, options);
        results.footprints.push_back({spec.name, spec.layers, spec.vocab, wbytes == 2 ? "f16" : "f32",
                                 attendre::gpu::plan_stack_memory(full, context.caps()).value_or_throw().total(),
                                 options.fp16_memory ? "f16" : "f32", options.fp16_activations ? "f16" : "f32"});
      }
    }
    // --quick runs the mobile preset only; block kernels come from it.
    if (options.quick && std::string(spec.name) != "mobile") {
      if (report) results.skipped.push_back({std::string("preset ") + spec.name, "not run under --quick"});
      continue;
    }
    if (!report && !(blocks && std::string(spec.name) == "mobile")) continue;
    // fp16 weights for mobile (16-bit loads, or unpacked words where the
    // device lacks 16-bit storage): the block kernels' f16 figures (under
    // --quick from a short run that only
    // fills the Q memories, reported as kernels, not as a preset).
    std::vector<std::pair<WeightType, bool>> runs = {{WeightType::f32, report}};
    if (std::string(spec.name) == "mobile") {
      if (!options.quick || blocks) runs.push_back({WeightType::f16, report && !options.quick});
    }
    for (const auto& [type, report_run] : runs) {
      try {
        run_one(context, options, spec, type, report_run, results);
      } catch (const attendre::Error& e) {
        if (e.code() != attendre::ErrorCode::unsupported && e.code() != attendre::ErrorCode::out_of_device_memory)
          throw;
        results.skipped.push_back({std::string("preset ") + spec.name + (type == WeightType::f16 ? "-f16" : ""), e.what()});
      }
    }
  }
}

}  // namespace bench
