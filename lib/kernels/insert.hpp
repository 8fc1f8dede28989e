// The insertion kernels of one K/V memory: score_stats (initial score),
// select (eviction victims), insert_plan (compaction), evict_copy (optional
// copy-out) and insert_scatter.
#pragma once

#include "kernels/kernel_plan.hpp"
#include "interface/insert.h"
#include "kernels/kernel.hpp"
#include "kernels/select.hpp"
#include "kernels/stored.hpp"

namespace attendre::kernels {

struct InsertBuffers {
  vk::BufferBinding kv, chunk, lists;
  vk::BufferBinding evicted;  // buffer == nullptr: no copy-out
};

class InsertKernels {
 public:
  InsertKernels() = default;
  // `constants` (capacity M, rows S, policy, layouts) are specialized into
  // the pipelines; M and S also size the victim select's tile. `stored`:
  // how insert_scatter and evict_copy write and read keys and values.
  InsertKernels(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan, const InsertBuffers& buffers,
                const InsertConstants& constants, StoredPath stored = StoredPath::f32);

  void score_stats(vk::CommandRecorder& recorder, const InsertParams& params) const { stats_.dispatch(recorder, params, 1); }
  void select_victims(vk::CommandRecorder& recorder, const SelectTileParams& params) const {
    select_.record(recorder, params, 1);
  }
  void plan(vk::CommandRecorder& recorder, const InsertParams& params) const { plan_kernel_.dispatch(recorder, params, 1); }
  void evict_copy(vk::CommandRecorder& recorder, const InsertParams& params) const;
  void scatter(vk::CommandRecorder& recorder, const InsertParams& params) const;

  const Select& select() const { return select_; }

 private:
  KernelPlan plan_;
  InsertConstants constants_;
  Kernel stats_, plan_kernel_, scatter_, copy_;
  Select select_;
};

}  // namespace attendre::kernels
