// Workgroup and tile sizes, derived from the device's limits in exactly one
// place. Phones guarantee 128 invocations and 16 KiB of shared memory; every
// size below fits those minimums when the device reports them.
#pragma once

#include <attendre/context.hpp>

#include <cstdint>

namespace attendre::kernels {

// How insert_plan builds its prefix sums (shaders/scan.glsl), best first:
// subgroupExclusiveAdd, bit-sliced subgroup ballots, or a shared-memory
// Hillis-Steele scan (the Vulkan 1.1 baseline).
enum class ScanBuild { subgroup_arithmetic, subgroup_ballot, shared_memory };

struct KernelPlan {
  uint32_t workgroup = 128;   // 1-D kernels; a power of two
  uint32_t select_tile = 1024;  // candidates sorted per workgroup by the bitonic select (power of two)
  uint32_t select_workgroup = 128;
  uint32_t score_workgroup = 128;
  uint32_t score_tile_rows = 16;
  uint32_t score_tile_slots = 64;
  uint32_t score_tile_dims = 16;
  uint32_t score_lm_tile_dims = 16;  // TILE_D of score's LM-Infinite variant
  uint32_t attend_workgroup = 64;
  // Dense attention (flash_attend.comp): rows per workgroup, the slots of
  // one online-softmax step (flash_block_for shrinks them per head_dim until
  // the tiled variant's key and value blocks fit flash_shared_bytes).
  uint32_t flash_workgroup = 64;
  uint32_t flash_block = 16;
  uint32_t flash_shared_bytes = 16384 - 512;
  // The direct flash build's lanes per row (flash_attend_direct_lanes*):
  // a row's share of slots split over this many lanes of one subgroup and
  // merged by shuffles, for batches of few rows (decoding); 0: one lane per
  // row (no subgroup shuffles, or a GPU).
  uint32_t flash_lanes = 0;
  // The driver's loop limit per invocation (DeviceCaps::max_loop_iterations;
  // 0: none): flash_attend splits its slots so that no invocation passes it.
  uint32_t max_loop_iterations = 0;
  uint32_t insert_workgroup = 128;  // insert_plan scans: rows / workgroup per invocation
  // score_stats' reductions through subgroup arithmetic (the *_subgroups
  // shader builds), else shared-memory trees: their float sums and maxima
  // have no ballot form.
  bool subgroup_reductions = false;
  ScanBuild insert_scans = ScanBuild::shared_memory;  // insert_plan's prefix sums

  // Transformer block kernels. Matmul GEMM: each of matmul_workgroup
  // invocations accumulates a matmul_micro_rows x matmul_micro_outputs
  // micro-tile of a matmul_tile_rows x matmul_tile_outputs output tile,
  // stepping through `in` by matmul_tile_in (workgroup = tile_rows / micro_rows
  // * tile_outputs / micro_outputs).
  uint32_t matmul_workgroup = 128;
  uint32_t matmul_tile_rows = 32;
  uint32_t matmul_tile_outputs = 64;
  uint32_t matmul_tile_in = 16;
  uint32_t matmul_micro_rows = 4;
  uint32_t matmul_micro_outputs = 4;
  uint32_t matvec_workgroup = 128;  // matrix-vector path (rows <= kMatvecMaxRows); a power of two
  uint32_t norm_workgroup = 128;    // one row per workgroup, tree reduction; a power of two
  // Workgroups per dispatch dimension; larger grids are folded (kernels loop).
  uint32_t max_groups_x = 65535;
  uint32_t max_groups_y = 32768;  // x * y < 2^31 (rows.glsl)

  // DeviceCaps::KernelStyle::direct: barrier-free kernels (CPU devices).
  bool direct = false;
  // Block-type weights under `direct`: invocations of a subgroup that share
  // their A loads through subgroup shuffles (matmul_direct.comp); 0 where
  // that is unavailable, and block-type products then take the tiled kernels.
  uint32_t direct_share = 0;
  // matmul_direct.comp's register tiles (rows x outputs per invocation) and
  // workgroup: float weights, block types, and the single-row variants that
  // decoding (rows <= 2) takes.
  uint32_t direct_matmul_workgroup = 32;
  uint32_t direct_float_rows = 8, direct_float_outputs = 2;
  uint32_t direct_block_rows = 16, direct_block_outputs = 2;
  uint32_t direct_few_float_outputs = 2, direct_few_block_outputs = 2;
  uint32_t direct_segment = 2048;  // candidates one select_direct workgroup selects from
  // score_direct.comp's register tiles: (query, head-in-group) rows x slots
  // per invocation, in workgroups of direct_score_workgroup (a multiple of
  // the subgroup size); its lanes share the query quads through subgroup
  // shuffles when direct_share > 1 (each loads them all otherwise).
  uint32_t direct_score_rows = 8, direct_score_slots = 4;
  uint32_t direct_score_workgroup = 64;
  // attend_direct.comp: dim quads per invocation (one row's D = 64 at 16),
  // in workgroups of direct_attend_workgroup.
  uint32_t direct_attend_quads = 16;
  // Its softmax sum follows attend.comp's order (spec constant: that
  // kernel's attend_workgroup, a power of two <= 64), so weights and
  // outputs equal attend.comp's bit for bit and policies decide alike.
  bool direct_attend = true;
  uint32_t direct_attend_workgroup = 32;
  // Tiled select: the bitonic stages whose partners share a subgroup run
  // in registers through subgroupShuffleXor (the *_shuffle builds), which
  // needs full subgroups: workgroups of a multiple of this (the device's
  // largest subgroup size); 0 where shuffles or size control are absent.
  uint32_t select_shuffle_multiple = 0;

  // Largest K (and eviction count) one select can keep: two lists must fit a tile.
  uint32_t max_keep() const { return select_tile / 2; }
  // Candidates per select list: a tile, or a direct segment.
  uint32_t select_span() const { return direct ? direct_segment : select_tile; }
  // Whether a tiled select of `invocations` per workgroup sorts within subgroups.
  bool select_shuffles(uint32_t invocations) const {
    return select_shuffle_multiple > 0 && invocations % select_shuffle_multiple == 0;
  }
  // Largest head_dim attend accumulates.
  uint32_t max_head_dim() const;
  // flash_attend's BLOCK for rows of head_dim values.
  uint32_t flash_block_for(uint32_t head_dim) const;
};

KernelPlan plan_kernels(const DeviceCaps& caps);

// Smallest power of two >= x (x >= 1).
uint32_t next_pow2(uint32_t x);

}  // namespace attendre::kernels
