// What one attendre-bench run measured: plain data, filled by the
// measuring parts (limits, kernels, presets, scaling) and read by the
// printers (table, JSON, SVG). SCHEMA.md documents the JSON form.
#pragma once

#include <attendre/diagnostics.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace bench {

// The device and the limits every figure is measured against.
struct DeviceInfo {
  std::string name, vendor, driver, api_version, type;
  uint32_t vendor_id = 0, device_id = 0;
  uint32_t max_invocations = 0, workgroup = 0, max_shared_bytes = 0, subgroup_size = 0;
  uint64_t max_storage_range = 0, max_allocation = 0, device_local_bytes = 0;
  uint32_t max_loop_iterations = 0;  // 0: no driver loop limit
  uint32_t max_groups_per_dispatch = 0;  // the watchdog bound in force (0xFFFFFFFF: none)
  bool storage_16bit = false;
  double timestamp_period_ns = 0.0;
  std::vector<attendre::KernelVariant> variants;  // the kernel variant a family runs, and why
  std::vector<std::string> quirks;             // "name: reason" per driver quirk
  std::vector<std::string> disabled_features;  // switched off (ATTENDRE_DISABLE)
};

// One size (copy) or grid (FMA) of the limit measurements.
struct LimitSample {
  std::string variant;  // copy: element type; fma: the chain layout
  uint64_t size = 0;  // copy: bytes per buffer; fma: invocations
  double ms = 0.0;    // median GPU time
  double rate = 0.0;  // GB/s or GFLOP/s
};

struct Limits {
  double copy_gbps = 0.0, fma_gflops = 0.0;  // best sample of each
  std::vector<LimitSample> copy, fma;
};

// Named integer dimensions of a kernel's shape, in a fixed order.
using Shape = std::vector<std::pair<std::string, uint64_t>>;

// One kernel at one shape and precision.
struct KernelResult {
  std::string name;       // score, topk, attend, policy_<p>, evict_select, compact, or a block kernel
  std::string role;       // block kernels: which projection or norm (q, k, v, o, gate, up, down, attn, ffn)
  std::string precision;  // f32 or f16: storage of the data the kernel streams
  Shape shape;
  double median_ms = 0.0;
  double bytes = 0.0, flops = 0.0;  // the cost model of costs.hpp
  double gbps = 0.0, gflops = 0.0;
  double efficiency = 0.0;          // max(bytes / copy, flops / fma) / time
  std::string bound;                // "memory" or "compute": which limit the model says binds
  uint32_t samples = 0;             // timed repeats behind the median
  // The weight-decoding sweep (weights.cpp) only: the bytes of encoded
  // weights one product reads, their rate, and that rate over copy_gbps.
  double weight_bytes = 0.0, weight_gbps = 0.0, copy_fraction = 0.0;
};

// A shape, precision or preset the device could not run, and why.
struct Skipped {
  std::string what, reason;
};

struct KernelSplit {
  std::string name;
  double ms = 0.0;
};

struct Preset {
  std::string name, model;           // model: the model class the shape follows
  uint32_t hidden = 0, ffn = 0, heads_q = 0, heads_kv = 0, head_dim = 0;
  uint32_t layers_model = 0, layers_run = 0, vocab_model = 0, vocab_run = 0;
  uint32_t S = 0, M = 0, N = 0, K = 0;
  std::string policy, precision;
  uint32_t lm_infinite = 0;          // n_local of every block's LM-Infinite cap (--lm-infinite), 0: off
  std::string kv_storage = "f32";     // the K/V and Q memories' storage (--fp16-memory: f16)
  std::string activations = "f32";    // StackConfig::activations (--fp16-activations: f16)
  std::vector<std::string> notes;    // every deviation from the named model, in words
  double ms_per_step = 0.0, tokens_per_s = 0.0;
  double overhead_ms = 0.0;  // median over profiled steps of (step wall time - its kernels' GPU time)
  double ms_per_step_full_depth = 0.0;  // ms_per_step scaled to layers_model (equal when they match)
  std::vector<KernelSplit> kernel_ms;   // summed per kernel over the step, median over profiled steps
  uint64_t gpu_bytes = 0;               // memory().total() of the stack that ran
  uint64_t planned_full_bytes = 0;      // plan_stack_memory of the full-depth model
  uint32_t steps_timed = 0, dispatches = 0, barriers = 0;
  // The longest single dispatch of any profiled step (GPU time), and which:
  // what a mobile driver's watchdog would see.
  double longest_dispatch_ms = 0.0;
  std::string longest_dispatch;
};

// What a preset's full-depth model holds on this device (plan_stack_memory),
// printed for every preset, run or not (the JSON's "memory_plans").
struct PresetFootprint {
  std::string name;
  uint32_t layers = 0, vocab = 0;
  std::string precision;
  uint64_t gpu_bytes = 0;
  std::string kv_storage = "f32";  // the K/V and Q memories' storage (--fp16-memory: f16)
  std::string activations = "f32";  // StackConfig::activations (--fp16-activations: f16)
};

struct ScalingPoint {
  uint64_t positions = 0;     // document length when the timed steps start (dense: entries held)
  double ms_per_step = 0.0;   // wall clock, mean of the timed steps, outputs not read back
  uint64_t streamed = 0;      // positions really fed before the timed steps (bounded: fewer once positions jump ahead)
};

struct Scaling {
  uint32_t heads_q = 0, heads_kv = 0, head_dim = 0;  // the shape both series share
  uint32_t S = 0, M = 0, N = 0, K = 0;               // the bounded layer (dense: M = K = length)
  std::vector<ScalingPoint> bounded, dense;
  std::string dense_stopped;          // why the dense series ends where it does (empty: it ran to the end)
  std::optional<uint64_t> crossover;  // first measured length where dense costs more per step
};

struct Results {
  DeviceInfo device;
  Limits limits;
  std::vector<KernelResult> kernels;
  std::vector<Skipped> skipped;
  std::vector<Preset> presets;
  std::vector<PresetFootprint> footprints;
  std::optional<Scaling> scaling;
  bool quick = false;
  std::string filter;
  double runtime_s = 0.0;
};

}  // namespace bench
