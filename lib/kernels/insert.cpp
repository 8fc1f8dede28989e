#include "kernels/insert.hpp"

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

}  // namespace

InsertKernels::InsertKernels(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                             const InsertBuffers& b, const InsertConstants& constants, StoredPath stored)
    : plan_(plan), constants_(constants) {
  const std::vector<uint32_t> spec = specialization(plan.workgroup, constants);
  stats_ = Kernel::make<InsertParams>(context, arena, ShaderId::score_stats, spec, {b.kv, b.chunk});
  plan_kernel_ = Kernel::make<InsertParams>(context, arena, ShaderId::insert_plan,
                                            specialization(plan.insert_workgroup, constants), {b.lists, b.chunk});
  // fp16 rows are written as packed words on every device (stored.glsl).
  const ShaderId scatter = stored == StoredPath::f32 ? ShaderId::insert_scatter : ShaderId::insert_scatter_f16;
  scatter_ = Kernel::make<InsertParams>(context, arena, scatter, spec, {b.kv, b.chunk});
  const ShaderId copy =
      stored_variant(stored, ShaderId::evict_copy, ShaderId::evict_copy_f16, ShaderId::evict_copy_f16_words);
  if (b.evicted.buffer) copy_ = Kernel::make<InsertParams>(context, arena, copy, spec, {b.lists, b.kv, b.chunk, b.evicted});
  select_ = Select(context, arena, plan, Select::Source::evict, b.kv, b.chunk, b.lists,
                   constants.capacity + constants.rows, constants.rows);
}

void InsertKernels::evict_copy(vk::CommandRecorder& recorder, const InsertParams& p) const {
  copy_.dispatch(recorder, p, ceil_div(constants_.kv_row, plan_.workgroup), p.victims);
}

void InsertKernels::scatter(vk::CommandRecorder& recorder, const InsertParams& p) const {
  scatter_.dispatch(recorder, p, ceil_div(constants_.key_stride, plan_.workgroup), constants_.rows);
}

}  // namespace attendre::kernels
