#include "kernels/retrieve.hpp"

#include "core/try.hpp"
#include "kernels/score_features.hpp"
#include "vulkan/buffer.hpp"

#include <optional>

#include <attendre/config.hpp>

namespace attendre::kernels {

// The shaders' bias ids are BiasKind's values.
static_assert(kBiasNone == static_cast<uint32_t>(BiasKind::none));
static_assert(kBiasAlibi == static_cast<uint32_t>(BiasKind::alibi));
static_assert(kBiasT5 == static_cast<uint32_t>(BiasKind::t5));

Result<RetrieveKernels> RetrieveKernels::create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                                const RetrieveBuffers& b, uint32_t capacity, uint32_t keep,
                                                bool lm_infinite, StoredPath stored, uint32_t score_features) {
  RetrieveKernels k;
  k.plan_ = plan;
  k.lm_infinite_ = lm_infinite;
  k.score_features_ = score_features;
  const uint32_t lm = lm_infinite ? 1u : 0u;
  // The direct tile shares its query quads through shuffles where the plan
  // allows (the *_shuffle builds); each lane loads them all otherwise.
  const bool share = plan.direct_share > 1 && !lm_infinite;
  const ShaderId score_direct =
      share ? stored_variant(stored, ShaderId::score_direct_shuffle, ShaderId::score_direct_f16_shuffle,
                             ShaderId::score_direct_f16_words_shuffle)
            : stored_variant(stored, ShaderId::score_direct, ShaderId::score_direct_f16, ShaderId::score_direct_f16_words);
  const ShaderId score_tiled = stored_variant(stored, ShaderId::score, ShaderId::score_f16, ShaderId::score_f16_words);
  // The direct kernels over fp32 memories fetch keys and values as texels
  // where the device has texel buffers and the memory's range can be viewed.
  std::optional<vk::BufferBinding> kv_texels;
  if (plan.direct && stored == StoredPath::f32) {
    Result<vk::BufferBinding> view = b.kv.texel_view(context.caps(), VK_FORMAT_R32G32B32A32_SFLOAT);
    if (view.ok()) kv_texels = view.value();
  }
  k.texel_ = kv_texels.has_value();
  // The direct score's texel builds fetch the query quads as texels too
  // (RING_TEXEL); where the ring's range cannot be viewed, score reads
  // storage buffers (attend still fetches texels).
  std::optional<vk::BufferBinding> ring_texels;
  if (kv_texels) {
    Result<vk::BufferBinding> view = b.ring.texel_view(context.caps(), VK_FORMAT_R32G32B32A32_SFLOAT);
    if (view.ok()) ring_texels = view.value();
  }
  if (plan.direct) {
    const std::vector<uint32_t> spec = {plan.direct_score_workgroup, plan.direct_score_rows, lm,
                                        share ? plan.direct_share : 1u, k.direct_score_slots(), score_features};
    if (kv_texels && ring_texels) {
      ATTENDRE_TRY_ASSIGN(k.score_, Kernel::make<ScoreParams>(
                                        context, arena, share ? ShaderId::score_direct_shuffle_texel : ShaderId::score_direct_texel,
                                        spec, {b.ring, b.kv, b.logits, *kv_texels, *ring_texels}));
    } else {
      ATTENDRE_TRY_ASSIGN(k.score_, Kernel::make<ScoreParams>(context, arena, score_direct, spec, {b.ring, b.kv, b.logits}));
    }
  } else {
    ATTENDRE_TRY_ASSIGN(k.score_,
                        Kernel::make<ScoreParams>(context, arena, score_tiled,
                                                  {plan.score_workgroup, plan.score_tile_rows, plan.score_tile_slots,
                                                   lm_infinite ? plan.score_lm_tile_dims : plan.score_tile_dims, lm,
                                                   score_features},
                                                  {b.ring, b.kv, b.logits}));
  }
  ATTENDRE_TRY_ASSIGN(k.sum_heads_,
                      Kernel::make<RetrieveParams>(context, arena, ShaderId::sum_heads, {plan.workgroup}, {b.logits}));
  if (plan.direct && plan.direct_attend) {
    const ShaderId attend =
        stored_variant(stored, ShaderId::attend_direct, ShaderId::attend_direct_f16, ShaderId::attend_direct_f16_words);
    // attend.comp's workgroup: the order of its sum (attend_direct.comp)
    const std::vector<uint32_t> spec = {plan.direct_attend_workgroup, plan.direct_attend_quads, plan.attend_workgroup};
    if (kv_texels) {
      ATTENDRE_TRY_ASSIGN(k.attend_, Kernel::make<RetrieveParams>(context, arena, ShaderId::attend_direct_texel, spec,
                                                                  {b.logits, b.lists, b.kv, b.attention, *kv_texels}));
    } else {
      ATTENDRE_TRY_ASSIGN(k.attend_, Kernel::make<RetrieveParams>(context, arena, attend, spec,
                                                                  {b.logits, b.lists, b.kv, b.attention}));
    }
  } else {
    const ShaderId attend = stored_variant(stored, ShaderId::attend, ShaderId::attend_f16, ShaderId::attend_f16_words);
    ATTENDRE_TRY_ASSIGN(k.attend_, Kernel::make<RetrieveParams>(context, arena, attend, {plan.attend_workgroup},
                                                                {b.logits, b.lists, b.kv, b.attention}));
  }
  ATTENDRE_TRY_ASSIGN(k.usage_, Kernel::make<RetrieveParams>(context, arena, ShaderId::usage, {plan.workgroup},
                                                             {b.lists, b.attention, b.usage}));
  k.usage_rows_ = b.usage;
  ATTENDRE_TRY_ASSIGN(k.policy_update_, Kernel::make<PolicyParams>(context, arena, ShaderId::policy_update,
                                                                   {plan.workgroup}, {b.kv, b.usage, b.ring}));
  ATTENDRE_TRY_ASSIGN(
      k.select_, Select::create(context, arena, plan, Select::Source::logits, b.logits, b.kv, b.lists, capacity, keep));
  return k;
}

Status RetrieveKernels::score(vk::CommandRecorder& recorder, const ScoreParams& p) const {
  ATTENDRE_TRY(check_score_features(score_features_, p, "score"));
  const uint32_t group = p.heads_q / p.heads_kv;
  const uint32_t slots_per_group = plan_.direct ? plan_.direct_score_workgroup * direct_score_slots() : plan_.score_tile_slots;
  const uint32_t rows_per_group = plan_.direct ? plan_.direct_score_rows : plan_.score_tile_rows;
  score_.dispatch(recorder, p, ceil_div(p.held, slots_per_group), ceil_div(uint64_t{p.queries} * group, rows_per_group),
                  p.heads_kv);
  return {};
}

void RetrieveKernels::sum_heads(vk::CommandRecorder& recorder, const RetrieveParams& p) const {
  sum_heads_.dispatch(recorder, p, ceil_div(p.held, plan_.workgroup), p.queries);
}

void RetrieveKernels::attend(vk::CommandRecorder& recorder, const RetrieveParams& p) const {
  if (plan_.direct && plan_.direct_attend) {
    const uint64_t dim_blocks = ceil_div(p.head_dim, 4 * plan_.direct_attend_quads);
    attend_.dispatch(recorder, p, ceil_div(uint64_t{p.queries} * p.heads_q * dim_blocks, plan_.direct_attend_workgroup));
  } else {
    attend_.dispatch(recorder, p, p.heads_q, p.queries);
  }
}

void RetrieveKernels::usage(vk::CommandRecorder& recorder, const RetrieveParams& p) const {
  // Zeroing grows with M: a fill of whole rows, so that no workgroup loops
  // over the held entries (a watchdog bound per dispatch, README "Watchdogs").
  const VkDeviceSize rows_bytes = 4ull * p.queries * p.usage_stride;
  recorder.fill(*usage_rows_.buffer, usage_rows_.offset, rows_bytes, 0u);
  recorder.fill(*usage_rows_.buffer, usage_rows_.offset + 4ull * p.used_offset, rows_bytes, 0u);
  usage_.dispatch(recorder, p, p.queries);
}

void RetrieveKernels::policy_update(vk::CommandRecorder& recorder, const PolicyParams& p) const {
  policy_update_.dispatch(recorder, p, ceil_div(p.held, plan_.workgroup));
}

}  // namespace attendre::kernels
