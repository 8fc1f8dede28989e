// The insertion kernels of one K/V memory: score_stats (initial score),
// select (eviction victims), insert_plan (compaction), evict_copy (optional
// copy-out) and insert_scatter; on CPU devices (the direct kernels) also
// insert_direct, the select, plan and scatter of one insertion in one
// dispatch where the candidates fit one selection segment.
#pragma once

#include "kernels/kernel_plan.hpp"
#include "interface/insert.h"
#include "kernels/kernel.hpp"

#include <attendre/status.hpp>
#include "kernels/select.hpp"
#include "kernels/stored.hpp"

namespace attendre::kernels {

struct InsertBuffers {
  vk::BufferBinding kv, chunk, lists;
  vk::BufferBinding evicted;  // buffer == nullptr: no copy-out
};

// Slots one score_stats workgroup reduces: a few per invocation, widened
// when a memory of `capacity` slots would need more workgroups than one
// dispatch can have. A multiple of plan.workgroup.
uint32_t stats_span(const KernelPlan& plan, uint32_t capacity);
// Words of the select lists' scratch that score_stats' partials take (4 per
// workgroup; at least 1, so there is always a range to bind).
uint64_t stats_partial_words(const KernelPlan& plan, uint32_t capacity);

class InsertKernels {
 public:
  InsertKernels() = default;
  // `constants` (capacity M, rows S, policy, layouts) are specialized into
  // the pipelines; M and S also size the victim select's tile. score_stats
  // keeps its partials at the start of `lists` (stats_partial_words).
  // `stored`: how insert_scatter and evict_copy write and read keys and values.
  static Result<InsertKernels> create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                      const InsertBuffers& buffers, const InsertConstants& constants,
                                      StoredPath stored = StoredPath::f32);

  // ceil(held / stats_span) workgroups, then one combining them when there are several.
  void score_stats(vk::CommandRecorder& recorder, const InsertParams& params) const;
  Status select_victims(vk::CommandRecorder& recorder, const SelectTileParams& params) const {
    return select_.record(recorder, params, 1);
  }
  // The placement of every row; needed before scatter only with victims
  // (params.victims > 0): without, scatter places the valid rows itself.
  void plan(vk::CommandRecorder& recorder, const InsertParams& params) const { plan_kernel_.dispatch(recorder, params, 1); }
  void evict_copy(vk::CommandRecorder& recorder, const InsertParams& params) const;
  // Rows past `rows` (at most the chunk's) hold no valid row: a decode
  // step's one row skips the chunk's other workgroups.
  void scatter(vk::CommandRecorder& recorder, const InsertParams& params, uint32_t rows) const;

  // Whether insert_direct can take an insertion of `count` candidates (held
  // entries and competing chunk rows) keeping `keep` (next_pow2(E)).
  bool direct_insert(uint32_t count, uint32_t keep) const {
    return direct_capacity_ >= keep && count <= select_.tile() && keep <= select_.keep_max();
  }
  // Select, plan and scatter in one dispatch (direct_insert holds):
  // params as select_victims takes them, with victims = E.
  void insert_direct(vk::CommandRecorder& recorder, SelectTileParams params) const;

  const Select& select() const { return select_; }

 private:
  KernelPlan plan_;
  InsertConstants constants_;
  uint32_t stats_span_ = 0;
  Kernel stats_, stats_combine_, plan_kernel_, scatter_, copy_, direct_;
  uint32_t direct_capacity_ = 0;  // insert_direct's CAP; 0: no insert_direct
  Select select_;
};

}  // namespace attendre::kernels
