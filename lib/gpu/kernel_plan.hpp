// Workgroup and tile sizes, derived from the device's limits in exactly one
// place. Phones guarantee 128 invocations and 16 KiB of shared memory; every
// size below fits those minimums when the device reports them.
#pragma once

#include <attendre/context.hpp>

#include <cstdint>

namespace attendre::gpu {

struct KernelPlan {
  uint32_t workgroup = 128;   // 1-D kernels; a power of two
  uint32_t select_tile = 1024;  // candidates sorted per workgroup by the bitonic select (power of two)
  uint32_t select_workgroup = 128;
  uint32_t score_workgroup = 128;
  uint32_t score_tile_rows = 16;
  uint32_t score_tile_slots = 64;
  uint32_t score_tile_dims = 16;
  uint32_t attend_workgroup = 64;
  uint32_t insert_workgroup = 128;  // insert_plan scans: rows / workgroup per invocation

  // Largest K (and eviction count) one select can keep: two lists must fit a tile.
  uint32_t max_keep() const { return select_tile / 2; }
  // Largest head_dim attend accumulates.
  uint32_t max_head_dim() const;
};

KernelPlan plan_kernels(const DeviceCaps& caps);

// Smallest power of two >= x (x >= 1).
uint32_t next_pow2(uint32_t x);

}  // namespace attendre::gpu
