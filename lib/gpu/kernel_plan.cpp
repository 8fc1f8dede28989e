#include "gpu/kernel_plan.hpp"

#include "interface/constants.h"

#include <algorithm>

namespace attendre::gpu {
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

uint32_t KernelPlan::max_head_dim() const { return attend_workgroup * kernels::kMaxDimsPerThread; }

KernelPlan plan_kernels(const DeviceCaps& caps) {
  KernelPlan plan;
  const uint32_t invocations = std::min(caps.max_invocations, caps.max_group_size_x);
  plan.workgroup = std::min<uint32_t>(256, floor_pow2(invocations));

  // A select workgroup holds TILE (key, tie, payload) triples: 12 bytes each,
  // with room left for the driver's own shared-memory use.
  const uint32_t reserve = 512;
  const uint32_t shared = caps.max_shared_bytes > 2 * reserve ? caps.max_shared_bytes - reserve : caps.max_shared_bytes / 2;
  plan.select_tile = std::min<uint32_t>(4096, floor_pow2(shared / 12));
  plan.select_workgroup = std::min(plan.workgroup, std::max(1u, plan.select_tile / 2));

  // Score: TILE_R x TILE_M outputs per workgroup, TILE_R * TILE_M / W per invocation.
  plan.score_workgroup = plan.workgroup;
  plan.score_tile_slots = std::min<uint32_t>(64, plan.score_workgroup);
  plan.score_tile_rows = 16;
  while (plan.score_tile_rows * plan.score_tile_slots / plan.score_workgroup > kernels::kMaxScoreOutputsPerThread)
    plan.score_tile_rows /= 2;
  plan.score_tile_dims = 16;

  plan.attend_workgroup = std::min<uint32_t>(64, plan.workgroup);
  plan.insert_workgroup = plan.workgroup;
  return plan;
}

}  // namespace attendre::gpu
