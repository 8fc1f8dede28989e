// The kernel variant each family runs on a context, for the bench and the
// tools' --verbose. Every choice is read from the function that makes it
// (plan_kernels, KernelPlan::select_shuffles, direct_matmul, f16_as_words,
// q8_0_as_int8, stored_path), never decided again here.
#include "kernels/kernel.hpp"
#include "kernels/kernel_plan.hpp"
#include "kernels/matmul.hpp"
#include "kernels/stored.hpp"
#include "vulkan/context_state.hpp"

#include <attendre/diagnostics.hpp>

namespace attendre {
namespace {

std::string switched_off(const DeviceCaps& caps, Feature f) {
  return caps.disabled.has(f) ? std::string(feature_name(f)) + " switched off" : "";
}

// Why a feature is absent: switched off, or missing on the device.
std::string absent(const DeviceCaps& caps, Feature f, const char* what) {
  const std::string off = switched_off(caps, f);
  return off.empty() ? std::string("no ") + what : off;
}

// How a family reads fp16 data, by 16-bit loads or as unpacked 32-bit words
// (`words`, as f16_as_words or stored_path decided), then `how`; the reason
// is the feature (present, absent or switched off), or the quirk that
// prefers words where the feature is present.
KernelVariant fp16_reads(const DeviceCaps& caps, const char* family, bool words, const char* how) {
  return {family, std::string(words ? "unpackHalf2x16 of 32-bit words" : "16-bit loads") + how,
          !caps.storage_16bit             ? absent(caps, Feature::storage_16bit, "storageBuffer16BitAccess")
          : caps.quirks.half_loads_lane_by_lane ? "quirk half_loads_lane_by_lane"
                                                : "storageBuffer16BitAccess"};
}

}  // namespace

std::vector<KernelVariant> kernel_variants(const Context& context) {
  const DeviceCaps& caps = context.caps();
  const kernels::KernelPlan plan = kernels::plan_kernels(caps);
  std::vector<KernelVariant> v;

  v.push_back({"workgroups", std::to_string(plan.workgroup) + " invocations, select tile " + std::to_string(plan.select_tile),
               caps.large_workgroups ? "large workgroups and shared memory"
                                     : absent(caps, Feature::large_workgroups, "room past the Vulkan minimums")});

  const uint32_t bound = caps.max_groups_per_dispatch;
  const bool overridden = bound != vk::default_groups_per_dispatch(caps.type);
  v.push_back({"dispatch size",
               bound == 0xFFFFFFFFu ? "unlimited"
                                    : "at most " + std::to_string(bound) +
                                          " workgroups, larger grids cut into pieces (vkCmdDispatchBase)",
               overridden ? "LimitOverrides or ATTENDRE_MAX_GROUPS_PER_DISPATCH"
                          : caps.type == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU
                                ? "discrete GPU: no compute watchdog to fear"
                                : "watchdog bound: ~50 ms per dispatch on a phone-class GPU"});

  const std::string style_reason =
      caps.quirks.barriers_switch_context == plan.direct
          ? (plan.direct ? "quirk barriers_switch_context" : "GPU: tiles shared through shared memory")
          : "forced (ATTENDRE_KERNELS or ContextOptions::kernels)";
  const char* style = plan.direct ? "direct" : "tiled";
  v.push_back({"score, select", style, style_reason});
  if (plan.direct) {
    // score_direct's register tiles; their query quads go through shuffles
    // where the direct products' do (LM-Infinite scores pair by pair).
    KernelVariant score{"score (direct)",
                        std::to_string(plan.direct_score_rows) + " rows x " + std::to_string(plan.direct_score_slots) +
                            " slots per invocation, ",
                        ""};
    if (plan.direct_share > 1) {
      score.variant += std::to_string(plan.direct_share) + " lanes share q";
      score.reason = "subgroup shuffle, subgroup size " + std::to_string(caps.subgroup_size);
    } else {
      score.variant += "each lane loads q";
      score.reason = caps.subgroup_shuffle ? "subgroup size not fixed (GPU)"
                                           : absent(caps, Feature::subgroup_shuffle, "subgroup shuffle");
    }
    v.push_back(score);
    // RetrieveKernels and FlashAttention take the texel builds for fp32 memories where the views can be made.
    v.push_back({"K/V reads (direct)",
                 caps.texel_buffers ? "fp32 memories' keys and values, and score's query quads, as uniform texel buffers (score, attend, flash)"
                                    : "storage-buffer loads",
                 caps.texel_buffers ? "uniform texel buffers" : absent(caps, Feature::texel_buffers, "uniform texel buffers")});
    if (plan.direct_attend) v.push_back({"attend (direct)",
                 "one (query, head) row of " + std::to_string(4 * plan.direct_attend_quads) + " dims per invocation",
                 "no barriers, values read four at a time, the softmax sum in attend's order (same bits)"});
    // FlashAttention::lanes_for: batches whose rows per K/V head fit a workgroup of lane rows.
    if (plan.flash_lanes > 1)
      v.push_back({"flash (direct)",
                   "decoding: each row over " + std::to_string(plan.flash_lanes) +
                       " lanes, merged by subgroupShuffleXor; longer batches one row per invocation",
                   "subgroup shuffle, subgroup size " + std::to_string(caps.subgroup_size)});
    else
      v.push_back({"flash (direct)", "one row per invocation",
                   caps.subgroup_shuffle ? "subgroup size not fixed (GPU)"
                                         : absent(caps, Feature::subgroup_shuffle, "subgroup shuffle")});
  }
  // The direct products need subgroup shuffles (A shared across lanes).
  auto matmul_family = [&](const char* family, ElementType type) {
    const kernels::DirectTile tile = kernels::direct_tile(plan, type, false);
    KernelVariant k{family, "tiled GEMM + matvec", style_reason};
    if (direct_matmul(plan, type)) {
      k.variant = "direct, " + std::to_string(tile.rows) + " x " + std::to_string(tile.outputs) +
                  " register tiles, " + std::to_string(plan.direct_share) + " lanes share A";
      k.reason = style_reason + "; subgroup shuffle, subgroup size " + std::to_string(caps.subgroup_size);
      // kernels::texel_weights decides per product (fp32 A, views within the limits).
      k.variant += caps.texel_buffers ? "; weights and fp32 A as uniform texel buffers" : "; storage-buffer loads";
      k.reason += caps.texel_buffers ? "; uniform texel buffers" : "; " + absent(caps, Feature::texel_buffers, "uniform texel buffers");
    } else if (plan.direct) {
      k.reason = caps.subgroup_shuffle ? "subgroup size not fixed (GPU)"
                                       : absent(caps, Feature::subgroup_shuffle, "subgroup shuffle");
    }
    return k;
  };
  v.push_back(matmul_family("matmul (f32, f16, bf16)", ElementType::f32));
  v.push_back(matmul_family("matmul (block types)", ElementType::q4_k));

  v.push_back(fp16_reads(caps, "fp16 weights", kernels::f16_as_words(caps), ""));
  // fp16 memories (KvMemoryConfig::storage = f16) read keys, values and
  // queries on the weights' path; fp32 memories read fp32 words.
  const bool stored_words = kernels::stored_path(caps, MemoryStorage::f16) == kernels::StoredPath::f16_words;
  v.push_back(fp16_reads(caps, "fp16 K/V and Q memories", stored_words,
                         ", stored as packed words rounded to nearest even"));
  // fp16 activations (StackConfig::activations = f16): the writers pack
  // rounded words on any device, the products read them on the weights' path
  // (input_rows.glsl: *_a16 or *_a16_words).
  v.push_back(fp16_reads(caps, "fp16 activations", kernels::f16_as_words(caps),
                         " in every product, written as packed words"));
  // Q8_0 quants: int8 loads, or the 32-bit words every other block type reads.
  v.push_back({"q8_0 weights", kernels::q8_0_as_int8(caps) ? "int8 loads" : "int8 unpacked from 32-bit words",
               !caps.storage_8bit                   ? absent(caps, Feature::storage_8bit, "storageBuffer8BitAccess")
               : caps.quirks.byte_loads_lane_by_lane ? "quirk byte_loads_lane_by_lane"
                                                     : "storageBuffer8BitAccess"});
  // shaderFloat16: fp16 products only where both operands are fp16 values
  // read by 16-bit loads (kernels::half_math); never the memories' scores,
  // whose eviction decisions the spec holds to fp16 storage resolution.
  KernelVariant math{"shaderFloat16", "", ""};
  if (kernels::half_math(caps)) {
    math.variant = "fp16 products in groups of 4, fp32 sums, for fp16 activations x fp16 weights; "
                   "fp32 math for the memories' scores and every other weight encoding";
    math.reason = "shaderFloat16, 16-bit loads";
  } else {
    math.variant = "fp32 math: fp16 values widened as read (a product of two is exact in fp32)";
    // Every reason that holds (on lavapipe by default, both quirks).
    if (!caps.float16) math.reason = absent(caps, Feature::float16, "shaderFloat16");
    if (caps.float16 && kernels::f16_as_words(caps)) math.reason = "16-bit loads not in use: fp16 read as unpacked words";
    if (caps.float16 && caps.quirks.half_math_emulated)
      math.reason += std::string(math.reason.empty() ? "" : "; ") + "quirk half_math_emulated";
  }
  v.push_back(math);
  // score_stats and the direct select reduce floats, maxima and counts
  // (arithmetic or trees); insert_plan sums counts, which ballots can also do.
  const std::string stats_build = plan.subgroup_reductions ? "subgroup arithmetic" : "shared-memory trees";
  std::string scan_build, scan_reason;
  switch (plan.insert_scans) {
    case kernels::ScanBuild::subgroup_arithmetic:
      scan_build = "subgroup arithmetic";
      scan_reason = "any subgroup size";
      break;
    case kernels::ScanBuild::subgroup_ballot:
      scan_build = "subgroup ballot bit-sliced prefix sums";
      scan_reason = absent(caps, Feature::subgroup_arithmetic, "subgroup arithmetic") +
                    "; subgroup ballot, any subgroup size";
      break;
    case kernels::ScanBuild::shared_memory:
      scan_build = "shared-memory trees";
      scan_reason = absent(caps, Feature::subgroup_arithmetic, "subgroup arithmetic") + ", " +
                    absent(caps, Feature::subgroup_ballot, "subgroup ballot");
      break;
  }
  v.push_back({"reductions, scans",
               stats_build == scan_build ? stats_build + " (score_stats, select_direct, insert_plan)"
                                         : stats_build + " (score_stats, select_direct), " + scan_build + " (insert_plan)",
               scan_reason});
  KernelVariant select{"select (tiled)", "", ""};
  if (plan.select_shuffles(plan.select_workgroup)) {
    select.variant = "bitonic stages within a subgroup by subgroupShuffleXor";
    select.reason = "subgroup shuffle, full subgroups (size_control), largest subgroup " +
                    std::to_string(caps.max_subgroup_size);
  } else {
    select.variant = "bitonic stages in shared memory";
    if (!caps.subgroup_shuffle) select.reason = absent(caps, Feature::subgroup_shuffle, "subgroup shuffle");
    else if (!caps.subgroup_size_control)
      select.reason = absent(caps, Feature::subgroup_size_control, "VK_EXT_subgroup_size_control (full subgroups)");
    else select.reason = "workgroup not a multiple of the largest subgroup size";
  }
  if (plan.direct) select.reason += "; this device runs the direct select";
  v.push_back(select);
  v.push_back({"tickets", caps.timeline_semaphore ? "timeline semaphores, chainable" : "fences, host waits only",
               caps.timeline_semaphore ? "timelineSemaphore"
                                       : absent(caps, Feature::timeline_semaphore, "timelineSemaphore")});
  return v;
}

std::vector<std::string> describe_variants(const Context& context) {
  std::vector<std::string> lines;
  for (const KernelVariant& k : kernel_variants(context))
    lines.push_back(k.family + ": " + k.variant + (k.reason.empty() ? "" : " (" + k.reason + ")"));
  for (const std::string& q : context.caps().quirks.describe()) lines.push_back("quirk " + q);
  return lines;
}

}  // namespace attendre
