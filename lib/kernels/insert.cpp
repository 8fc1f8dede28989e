#include "kernels/insert.hpp"
#include "core/try.hpp"

#include <algorithm>
#include <cstddef>
#include <cstring>

namespace attendre::kernels {
namespace {

// Specialization constant `id` is word id - 1 of InsertConstants.
#define ATT_CHECK_ID(id, name) static_assert(offsetof(InsertConstants, name) == 4 * ((id) - 1));
ATT_INSERT_CONSTANTS(ATT_CHECK_ID, ATT_CHECK_ID)
#undef ATT_CHECK_ID

// Constant 0 (the workgroup size), then the memory's constants.
std::vector<uint32_t> specialization(uint32_t workgroup, const InsertConstants& constants) {
  std::vector<uint32_t> words(1 + sizeof(InsertConstants) / 4, workgroup);
  std::memcpy(words.data() + 1, &constants, sizeof(InsertConstants));
  return words;
}

// score_stats.comp's STATS_SPAN and insert_direct.comp's CAP follow the memory's constants.
constexpr uint32_t kStatsSpanId = 1 + sizeof(InsertConstants) / 4;
static_assert(kStatsSpanId == 28, "score_stats.comp declares STATS_SPAN, insert_direct.comp CAP as constant 28");

ShaderId insert_plan_shader(ScanBuild scans) {
  switch (scans) {
    case ScanBuild::subgroup_arithmetic: return ShaderId::insert_plan_subgroups;
    case ScanBuild::subgroup_ballot: return ShaderId::insert_plan_ballot;
    case ScanBuild::shared_memory: break;
  }
  return ShaderId::insert_plan;
}

// Slots per score_stats invocation: enough that a workgroup's reductions
// (and, on CPU devices, its start) cost little against its loads, few
// enough that a workgroup's share of a large memory stays small (a few
// microseconds on any GPU; a 1M-entry memory is 256 workgroups of 256).
constexpr uint32_t kStatsSlotsPerInvocation = 16;

}  // namespace

uint32_t stats_span(const KernelPlan& plan, uint32_t capacity) {
  const uint64_t per_invocation =
      std::max<uint64_t>(kStatsSlotsPerInvocation, (uint64_t{capacity} + uint64_t{plan.workgroup} * plan.max_groups_x - 1) /
                                                       (uint64_t{plan.workgroup} * plan.max_groups_x));
  return static_cast<uint32_t>(per_invocation * plan.workgroup);
}

uint64_t stats_partial_words(const KernelPlan& plan, uint32_t capacity) {
  const uint32_t groups = ceil_div(capacity, stats_span(plan, capacity));
  return groups > 1 ? 4ull * groups : 1;
}

Result<InsertKernels> InsertKernels::create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                            const InsertBuffers& b, const InsertConstants& constants,
                                            StoredPath stored) {
  InsertKernels k;
  k.plan_ = plan;
  k.constants_ = constants;
  const std::vector<uint32_t> spec = specialization(plan.workgroup, constants);
  const bool subgroups = plan.subgroup_reductions;
  k.stats_span_ = stats_span(plan, constants.capacity);
  std::vector<uint32_t> stats_spec = spec;
  stats_spec.push_back(k.stats_span_);
  const vk::BufferBinding partials{b.lists.buffer, b.lists.offset, 4 * stats_partial_words(plan, constants.capacity)};
  ATTENDRE_TRY_ASSIGN(k.stats_, Kernel::make<InsertParams>(
                                    context, arena, subgroups ? ShaderId::score_stats_subgroups : ShaderId::score_stats,
                                    stats_spec, {b.kv, b.chunk, partials}));
  ATTENDRE_TRY_ASSIGN(k.stats_combine_, Kernel::make<InsertParams>(context, arena,
                                                                   subgroups ? ShaderId::score_stats_combine_subgroups
                                                                             : ShaderId::score_stats_combine,
                                                                   stats_spec, {partials, b.chunk}));
  ATTENDRE_TRY_ASSIGN(k.plan_kernel_,
                      Kernel::make<InsertParams>(context, arena, insert_plan_shader(plan.insert_scans),
                                                 specialization(plan.insert_workgroup, constants), {b.lists, b.chunk}));
  // fp16 rows are written as packed words on every device (stored.glsl).
  const ShaderId scatter = stored == StoredPath::f32 ? ShaderId::insert_scatter : ShaderId::insert_scatter_f16;
  ATTENDRE_TRY_ASSIGN(k.scatter_, Kernel::make<InsertParams>(context, arena, scatter, spec, {b.kv, b.chunk}));
  const ShaderId copy =
      stored_variant(stored, ShaderId::evict_copy, ShaderId::evict_copy_f16, ShaderId::evict_copy_f16_words);
  if (b.evicted.buffer) {
    ATTENDRE_TRY_ASSIGN(k.copy_,
                        Kernel::make<InsertParams>(context, arena, copy, spec, {b.lists, b.kv, b.chunk, b.evicted}));
  }
  ATTENDRE_TRY_ASSIGN(k.select_, Select::create(context, arena, plan, Select::Source::evict, b.kv, b.chunk, b.lists,
                                                constants.capacity + constants.rows, constants.rows));
  if (plan.direct) {
    // insert_direct's shared memory: the select's collected entries (CAP
    // triples), its reductions, the plan's scans and lists.
    const uint32_t W = k.select_.direct_workgroup(), rows = ceil_div(constants.rows, 32u) * 32u;
    const uint64_t fixed = 4ull * (1 + 3ull * W + 3ull * rows + rows / 32);
    const uint64_t shared = context.caps().max_shared_bytes;
    const uint64_t fits = shared > fixed ? (shared - fixed) / (4 * kSelectWordsPerCandidate) : 0;
    k.direct_capacity_ = static_cast<uint32_t>(std::min<uint64_t>(k.select_.direct_capacity(), fits));
    if (k.direct_capacity_ > 0) {
      std::vector<uint32_t> direct_spec = specialization(W, constants);
      direct_spec.push_back(k.direct_capacity_);
      const ShaderId direct = stored == StoredPath::f32
                                  ? (subgroups ? ShaderId::insert_direct_subgroups : ShaderId::insert_direct)
                                  : (subgroups ? ShaderId::insert_direct_f16_subgroups : ShaderId::insert_direct_f16);
      ATTENDRE_TRY_ASSIGN(k.direct_, Kernel::make<SelectTileParams>(context, arena, direct, direct_spec, {b.kv, b.chunk}));
    }
  }
  return k;
}

void InsertKernels::insert_direct(vk::CommandRecorder& recorder, SelectTileParams params) const {
  params.tiles = 1;
  params.segment = select_.tile();
  params.row_offset = 0;
  direct_.dispatch(recorder, params, 1);
}

void InsertKernels::score_stats(vk::CommandRecorder& recorder, const InsertParams& p) const {
  // A constant initial score needs one invocation; an empty memory one workgroup.
  const uint32_t groups = constants_.init_constant ? 1 : std::max(1u, ceil_div(p.held, stats_span_));
  stats_.dispatch(recorder, p, groups);
  if (groups > 1) stats_combine_.dispatch(recorder, p, 1);
}

void InsertKernels::evict_copy(vk::CommandRecorder& recorder, const InsertParams& p) const {
  copy_.dispatch(recorder, p, ceil_div(constants_.kv_row, plan_.workgroup), p.victims);
}

void InsertKernels::scatter(vk::CommandRecorder& recorder, const InsertParams& p, uint32_t rows) const {
  rows = std::min(rows, constants_.rows);
  if (rows > 0) scatter_.dispatch(recorder, p, ceil_div(constants_.key_stride, plan_.workgroup), rows);
}

}  // namespace attendre::kernels
