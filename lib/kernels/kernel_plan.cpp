#include "kernels/kernel_plan.hpp"

#include "interface/constants.h"
#include "interface/matmul.h"
#include "interface/quant.h"
#include "interface/score.h"
#include "interface/select_tile.h"

#include <algorithm>

namespace attendre::kernels {
namespace {

uint32_t floor_pow2(uint64_t x) {
  uint32_t p = 1;
  while (uint64_t{p} * 2 <= x && p < (1u << 30)) p *= 2;
  return p;
}

}  // namespace

uint32_t next_pow2(uint32_t x) {
  uint32_t p = 1;
  while (p < x) p *= 2;
  return p;
}

static_assert(4 * kMatmulDirectMaxShare <= kLegacyUnitValues, "the shared quads must fit the smallest decode unit");

uint32_t KernelPlan::max_head_dim() const { return attend_workgroup * kMaxDimsPerThread; }

uint32_t KernelPlan::flash_block_for(uint32_t head_dim) const {
  // Two tiles (keys, values) of BLOCK rows of ceil(head_dim / 4) vec4s.
  const uint64_t row_bytes = 2ull * 16 * ((uint64_t{head_dim} + 3) / 4);
  uint32_t block = flash_block;
  while (block > 1 && block * row_bytes > flash_shared_bytes) block /= 2;
  return block;
}

KernelPlan plan_kernels(const DeviceCaps& caps) {
  KernelPlan plan;
  const uint32_t invocations = std::min(caps.max_invocations, caps.max_group_size_x);
  plan.workgroup = std::min<uint32_t>(256, floor_pow2(invocations));

  // A select workgroup holds TILE (key, tie, payload) triples, with room
  // left for the driver's own shared-memory use.
  const uint32_t reserve = 512;
  const uint32_t shared = caps.max_shared_bytes > 2 * reserve ? caps.max_shared_bytes - reserve : caps.max_shared_bytes / 2;
  plan.select_tile = std::min<uint32_t>(4096, floor_pow2(shared / (4 * kSelectWordsPerCandidate)));
  plan.select_workgroup = std::min(plan.workgroup, std::max(1u, plan.select_tile / 2));

  // Score: TILE_R x TILE_M outputs per workgroup, TILE_R * TILE_M / W per invocation.
  plan.score_workgroup = plan.workgroup;
  plan.score_tile_slots = std::min<uint32_t>(64, plan.score_workgroup);
  plan.score_tile_rows = 16;
  while (plan.score_tile_rows * plan.score_tile_slots / plan.score_workgroup > kMaxScoreOutputsPerThread)
    plan.score_tile_rows /= 2;
  plan.score_tile_dims = 16;
  // LM-Infinite's variant holds five tiles: TILE_D shrinks until they fit
  // (16 on 16 KiB phones).
  plan.score_lm_tile_dims = plan.score_tile_dims;
  while (plan.score_lm_tile_dims > 1 &&
         4u * ATT_SCORE_SHARED_FLOATS(plan.score_tile_rows, plan.score_tile_slots, plan.score_lm_tile_dims,
                                      kLmQueryVariants, kLmKeyVariants) > shared)
    plan.score_lm_tile_dims /= 2;

  plan.attend_workgroup = std::min<uint32_t>(64, plan.workgroup);
  plan.flash_workgroup = std::min<uint32_t>(64, plan.workgroup);
  plan.flash_shared_bytes = shared;
  plan.max_loop_iterations = caps.max_loop_iterations;
  plan.direct = caps.kernel_style == DeviceCaps::KernelStyle::direct;
  // Shuffles need full subgroups of the reported size: CPU devices run
  // fixed SIMD widths (GPUs may pick another size per pipeline).
  if (caps.subgroup_shuffle && caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU && caps.subgroup_size > 0)
    plan.direct_share = std::min(kMatmulDirectMaxShare, floor_pow2(caps.subgroup_size));
  // flash_attend's lane rows need whole subgroups in its workgroup.
  if (plan.direct && plan.direct_share > 1 && plan.flash_workgroup % caps.subgroup_size == 0)
    plan.flash_lanes = plan.direct_share;
  plan.direct_matmul_workgroup = std::min<uint32_t>(plan.workgroup, 32);
  plan.direct_score_workgroup = std::min<uint32_t>(plan.workgroup, 64);
  // CPU devices run a workgroup's barriers as switches between its SIMD
  // chunks: insert_plan's scans over at most kMaxChunk rows and victims
  // take a few chunks there.
  plan.insert_workgroup = plan.direct ? std::min<uint32_t>(plan.workgroup, 32) : plan.workgroup;
  // Any subgroup size and layout: the reductions read gl_SubgroupID and
  // gl_NumSubgroups, never assume a size (shaders/reduce.glsl, scan.glsl).
  // Counts also sum by ballots where arithmetic is absent (many phone GPUs
  // have ballot only); float sums do not, so score_stats has no ballot build.
  plan.subgroup_reductions = caps.subgroup_arithmetic;
  plan.insert_scans = caps.subgroup_arithmetic ? ScanBuild::subgroup_arithmetic
                      : caps.subgroup_ballot   ? ScanBuild::subgroup_ballot
                                               : ScanBuild::shared_memory;
  if (caps.subgroup_shuffle && caps.subgroup_size_control) plan.select_shuffle_multiple = caps.max_subgroup_size;

  // Matmul GEMM: a near-square grid of invocations, each owning a micro-tile
  // of up to kMatmulMaxMicro^2 outputs; the `in` step shrinks until the two
  // tiles (padded against bank conflicts) and the row bases fit in `shared`.
  plan.matmul_workgroup = plan.workgroup;
  plan.matmul_micro_rows = plan.matmul_micro_outputs = kMatmulMaxMicro;
  auto gemm_bytes = [&](uint32_t tile_in) {
    return ATT_MATMUL_SHARED_BYTES(tile_in, plan.matmul_tile_rows, plan.matmul_tile_outputs);
  };
  for (;;) {
    uint32_t threads_out = 1;
    while (threads_out * threads_out < plan.matmul_workgroup) threads_out *= 2;
    plan.matmul_tile_outputs = threads_out * plan.matmul_micro_outputs;
    plan.matmul_tile_rows = plan.matmul_workgroup / threads_out * plan.matmul_micro_rows;
    plan.matmul_tile_in = 16;
    while (plan.matmul_tile_in > 1 && gemm_bytes(plan.matmul_tile_in) > shared) plan.matmul_tile_in /= 2;
    if (gemm_bytes(plan.matmul_tile_in) <= shared || plan.matmul_workgroup == 1) break;
    if (plan.matmul_micro_rows > 1) {  // fewer outputs per invocation first, then fewer invocations
      plan.matmul_micro_rows /= 2;
      plan.matmul_micro_outputs /= 2;
    } else {
      plan.matmul_workgroup /= 2;
    }
  }

  // Matvec and norm: one float per invocation and row in shared memory.
  plan.matvec_workgroup = plan.workgroup;
  while (plan.matvec_workgroup > 1 && 4u * kMatvecMaxRows * plan.matvec_workgroup > shared)
    plan.matvec_workgroup /= 2;
  plan.norm_workgroup = plan.workgroup;
  while (plan.norm_workgroup > 1 && 4u * plan.norm_workgroup > shared) plan.norm_workgroup /= 2;

  // 65535 is every device's minimum; 32768 rows keep the folded grid's
  // stride x * y below 2^31, so that a logical group index plus the stride
  // never wraps 32 bits (rows.glsl).
  plan.max_groups_x = std::min<uint32_t>(caps.max_group_count_x, 65535);
  plan.max_groups_y = std::min<uint32_t>(caps.max_group_count_y, 32768);
  return plan;
}

}  // namespace attendre::kernels
