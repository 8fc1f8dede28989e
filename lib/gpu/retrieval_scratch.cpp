#include "gpu/retrieval_scratch.hpp"

#include "gpu/layouts.hpp"
#include "interface/constants.h"
#include "kernels/flash.hpp"
#include "kernels/insert.hpp"
#include "core/try.hpp"

#include <attendre/error.hpp>

#include <algorithm>

namespace attendre::gpu {
namespace {

std::string mib(uint64_t bytes) { return std::to_string((bytes + (1 << 20) - 1) >> 20) + " MiB"; }

}  // namespace

ScratchWords ScratchWords::max(const ScratchWords& o) const {
  return {std::max(logits, o.logits), std::max(lists, o.lists), std::max(attention, o.attention),
          std::max(usage, o.usage)};
}

Result<RetrievalPlan> plan_retrieval(const LayerConfig& config, const kernels::KernelPlan& plan, uint32_t max_queries,
                                     const DeviceCaps& caps, const LmInfinite& lm_infinite) {
  const uint64_t max_range_bytes = caps.max_storage_range;
  const AttentionShape& shape = config.shape;
  const uint32_t M = config.kv.capacity, S = config.chunk, Hq = shape.heads_q;
  if (shape.head_dim > plan.max_head_dim())
    return Status(ErrorCode::unsupported, "head_dim " + std::to_string(shape.head_dim) + " exceeds attend's limit of " +
                                     std::to_string(plan.max_head_dim()) + " on this device");
  if (S > kernels::kMaxChunk || kernels::next_pow2(S) > plan.max_keep())
    return Status(ErrorCode::unsupported, "chunk size S=" + std::to_string(S) + " exceeds this device's limit of " +
                                     std::to_string(std::min(kernels::kMaxChunk, plan.max_keep())));
  RetrievalPlan r;
  r.full = config.full_attention();
  if (!r.full) {
    // K <= max_keep first: next_pow2 of a K past 2^31 would wrap to 0.
    if (config.retrieval.top_k > plan.max_keep()) r.top_keep = kernels::kInvalid;
    else r.top_keep = kernels::next_pow2(config.retrieval.top_k);
    if (r.top_keep > plan.max_keep())
      return Status(ErrorCode::unsupported, "top_k K=" + std::to_string(config.retrieval.top_k) +
                                       " exceeds this device's limit of " + std::to_string(plan.max_keep()) +
                                       " (use K >= M for full attention)");
  }
  r.list_count = r.full ? M : config.retrieval.top_k;
  // lru and lfu read which entries each query used, the attention-scored
  // policies their weights: only fifo can do without per-entry results.
  r.flash = r.full && config.kv.policy.kind == PolicyKind::fifo && !lm_infinite.enabled;
  uint64_t flash_partials = 0;  // words per query
  if (r.flash) {
    ATTENDRE_TRY_ASSIGN(const kernels::FlashSplits splits, kernels::flash_splits(plan, shape.head_dim, M));
    flash_partials = splits.partial_words(1, Hq);
  } else if (caps.max_loop_iterations) {
    // attend walks every retrieved entry for each of its head_dim slices
    // (attend_direct: three walks, its dims unrolled); usage walks every
    // head's list; score_stats walks the held slots.
    const uint64_t dims = (shape.head_dim + plan.attend_workgroup - 1) / plan.attend_workgroup;
    const uint64_t attend = plan.direct && plan.direct_attend ? 3ull * r.list_count
                                        : uint64_t{r.list_count} * (2 + dims) + 2ull * r.list_count / plan.attend_workgroup;
    const uint64_t usage = uint64_t{Hq} * ((r.list_count + plan.workgroup - 1) / plan.workgroup + 1);
    if (std::max(attend, usage) > caps.max_loop_iterations)
      return Status(ErrorCode::unsupported, "retrieving " + std::to_string(r.list_count) + " entries per query with " +
                                       std::to_string(Hq) + " heads exceeds this driver's loop limit of " +
                                       std::to_string(caps.max_loop_iterations) +
                                       " iterations per invocation; lower K or M");
  }

  const bool shared = config.retrieval.mode == RetrievalMode::shared;
  const bool updates = config.kv.policy.kind != PolicyKind::fifo;
  // In 64 bits: M (and M + S) may come within a tile of 2^32.
  const uint64_t tiles = (uint64_t{M} + plan.select_span() - 1) / plan.select_span();
  const uint64_t per_query_logits = r.flash ? flash_partials : uint64_t{Hq} * M + (shared ? M : 0);
  const uint64_t per_query_lists = r.full ? 0 : uint64_t{shared ? 1 : Hq} * tiles * r.top_keep * 3;
  // flash: a log-sum-exp per (step query, head), indexed by step, not by batch.
  const uint64_t per_query_weights = r.flash ? 0 : uint64_t{Hq} * r.list_count;
  const uint64_t lse_words = r.flash ? uint64_t{max_queries} * Hq : 0;
  const uint64_t per_query_usage = updates ? 2ull * M : 0;
  r.outputs_words = align_words(uint64_t{max_queries} * shape.q_row());
  // The victim select's lists, and before them score_stats' partials.
  const uint64_t evict_list_words =
      std::max((uint64_t{M} + S + plan.select_span() - 1) / plan.select_span() * kernels::next_pow2(S) * 3,
               kernels::stats_partial_words(plan, M));

  // The batch shrinks until every scratch buffer fits one storage range.
  const uint64_t range = max_range_bytes / 4;
  uint64_t batch = max_queries;
  auto fit = [&](uint64_t fixed, uint64_t per_query) {
    if (per_query > 0) batch = std::min(batch, fixed >= range ? 0 : (range - fixed) / per_query);
  };
  fit(0, per_query_logits);
  fit(0, per_query_lists);
  fit(r.outputs_words + lse_words, per_query_weights);
  fit(0, per_query_usage);
  if (batch == 0)
    return Status(ErrorCode::unsupported, "one query's scratch (M=" + std::to_string(M) + ", heads_q=" + std::to_string(Hq) +
                                     ") exceeds the device's storage-buffer range of " + mib(max_range_bytes));
  r.batch = static_cast<uint32_t>(batch);
  r.summed_offset = batch * Hq * M;
  r.weights_offset = r.outputs_words;
  r.used_offset = batch * M;
  r.words.logits = std::max<uint64_t>(1, batch * per_query_logits);  // flash without splits needs none
  r.words.lists = std::max(batch * per_query_lists, evict_list_words);
  r.words.attention = r.outputs_words + lse_words + batch * per_query_weights;
  r.words.usage = std::max<uint64_t>(1, batch * per_query_usage);
  return r;
}

Result<std::unique_ptr<RetrievalScratch>> RetrievalScratch::create(Context& context, const ScratchWords& words) {
  std::unique_ptr<RetrievalScratch> s(new RetrievalScratch(words));
  ATTENDRE_TRY_ASSIGN(s->logits_, vk::Buffer::create(context, words.logits * 4, vk::MemoryIntent::device, "logits"));
  ATTENDRE_TRY_ASSIGN(s->lists_, vk::Buffer::create(context, words.lists * 4, vk::MemoryIntent::device, "select lists"));
  ATTENDRE_TRY_ASSIGN(s->attention_,
                      vk::Buffer::create(context, words.attention * 4, vk::MemoryIntent::device, "attention"));
  ATTENDRE_TRY_ASSIGN(s->usage_, vk::Buffer::create(context, words.usage * 4, vk::MemoryIntent::device, "usage"));
  return s;
}

uint64_t RetrievalScratch::device_bytes() const {
  return logits_.size() + lists_.size() + attention_.size() + usage_.size();
}

}  // namespace attendre::gpu
