#include "gpu/kv_recorder.hpp"

#include "interface/constants.h"
#include "core/try.hpp"
#include "core/positions.hpp"
#include "kernels/score_features.hpp"

#include <attendre/error.hpp>

#include <algorithm>
#include <cstring>
#include <limits>
#include <numeric>

namespace attendre::gpu {
namespace {

using kernels::kInvalid;

bool integer_scores(PolicyKind kind) { return !Policy{kind, 0.0, {}}.attention_scored(); }

// The shaders' policy ids are PolicyKind's values.
static_assert(kernels::kPolicyFifo == static_cast<uint32_t>(PolicyKind::fifo));
static_assert(kernels::kPolicyLru == static_cast<uint32_t>(PolicyKind::lru));
static_assert(kernels::kPolicyLfu == static_cast<uint32_t>(PolicyKind::lfu));
static_assert(kernels::kPolicyLraLast == static_cast<uint32_t>(PolicyKind::lra_last));
static_assert(kernels::kPolicyLraMax == static_cast<uint32_t>(PolicyKind::lra_max));
static_assert(kernels::kPolicyLraSum == static_cast<uint32_t>(PolicyKind::lra_sum));
static_assert(kernels::kPolicyLfa == static_cast<uint32_t>(PolicyKind::lfa));

}  // namespace

Result<RetrievalPlan> KvRecorder::plan(const Context& context, const LayerConfig& config, uint32_t max_queries) {
  return plan_retrieval(config, kernels::plan_kernels(context.caps()), max_queries, context.caps());
}

uint32_t KvRecorder::key_variants(const LmInfinite& lm_infinite) {
  return lm_infinite.enabled ? kernels::kLmKeyVariants : 1u;
}

Result<std::unique_ptr<KvRecorder>> KvRecorder::create(Context& context, const LayerConfig& config, uint32_t max_queries,
                                                   uint32_t max_insert, const vk::Buffer& ring,
                                                   const RingLayout& ring_layout, FiniteChecks& checks,
                                                   const std::string& stage, RetrievalScratch* scratch,
                                                   const LmInfinite& lm_infinite) {
  ATTENDRE_TRY(config.check());
  if (config.retrieval.bias == BiasKind::t5) ATTENDRE_TRY(positions::check(config.retrieval.t5, config.shape.heads_q, true, ""));
  ATTENDRE_REQUIRE(ring_layout.q_variants == (lm_infinite.enabled ? kernels::kLmQueryVariants : 1u),
                   "the Q ring holds another number of query variants than the K/V memory scores with");
  ATTENDRE_REQUIRE(ring_layout.storage == config.kv.storage,
                   "the Q ring stores queries in another precision than the K/V memory");
  std::unique_ptr<KvRecorder> m(
      new KvRecorder(config, lm_infinite, kernels::plan_kernels(context.caps()), ring_layout, checks));
  m->config_.chunk = max_insert;  // the insertion kernels size everything by the largest insertion
  ATTENDRE_TRY_ASSIGN(m->plan_, plan_retrieval(m->config_, m->kernels_, max_queries, context.caps(), lm_infinite));
  ATTENDRE_TRY_ASSIGN(m->kv_layout_, layout_of(KvLayout::make(config.kv.capacity, config.shape,
                                                                  key_variants(lm_infinite), config.retrieval,
                                                                  config.kv.storage),
                                               {"kv memory" + stage, 0, false, true, kKvMemoryRemedy}));
  ATTENDRE_TRY_ASSIGN(m->chunk_layout_, layout_of(ChunkLayout::make(max_insert, config.shape, key_variants(lm_infinite)),
                                                  {"kv chunk" + stage, 0, false, true, kKvChunkRemedy}));
  ATTENDRE_TRY_ASSIGN(m->evicted_layout_,
                      layout_of(EvictedLayout::make(config.kv.copy_out_evicted ? max_insert : 0, config.shape),
                                {"evicted entries" + stage, 0, false, true, kKvChunkRemedy}));
  if (m->kv_layout_.words * 4 > context.caps().max_storage_range)
    return Status(ErrorCode::unsupported, "K/V memory needs " + std::to_string(m->kv_layout_.words * 4 >> 20) +
                                              " MiB, over the device's storage-buffer range of " +
                                              std::to_string(context.caps().max_storage_range >> 20) +
                                              " MiB; lower M, heads_kv or head_dim");
  const RetrievalPlan& plan = m->plan_;
  if (scratch) {
    const ScratchWords& have = scratch->words();
    ATTENDRE_REQUIRE(have.logits >= plan.words.logits && have.lists >= plan.words.lists &&
                         have.attention >= plan.words.attention && have.usage >= plan.words.usage,
                     "shared retrieval scratch is smaller than this memory needs");
    m->scratch_ = scratch;
  } else {
    ATTENDRE_TRY_ASSIGN(m->own_scratch_, RetrievalScratch::create(context, plan.words));
    m->scratch_ = m->own_scratch_.get();
  }

  ATTENDRE_TRY_ASSIGN(m->kv_, vk::Buffer::create(context, m->kv_layout_.words * 4, vk::MemoryIntent::device, "kv memory"));
  ATTENDRE_TRY_ASSIGN(m->chunk_,
                      vk::Buffer::create(context, m->chunk_layout_.words * 4, vk::MemoryIntent::device, "kv chunk"));
  if (config.kv.copy_out_evicted) {
    ATTENDRE_TRY_ASSIGN(m->evicted_, vk::Buffer::create(context, m->evicted_layout_.words * 4,
                                                        vk::MemoryIntent::device, "evicted"));
  }

  m->arena_ = std::make_unique<vk::DescriptorArena>(context);
  const kernels::StoredPath stored = kernels::stored_path(context.caps(), config.kv.storage);
  RetrievalScratch& sc = *m->scratch_;
  ATTENDRE_TRY_ASSIGN(m->insert_, kernels::InsertKernels::create(
                                      context, *m->arena_, m->kernels_,
                                      {{&m->kv_}, {&m->chunk_}, {&sc.lists()}, {m->evicted_ ? &m->evicted_ : nullptr}},
                                      m->insert_constants(), stored));
  ATTENDRE_TRY_ASSIGN(m->retrieve_, kernels::RetrieveKernels::create(
                                        context, *m->arena_, m->kernels_,
                                        {{&ring}, {&m->kv_}, {&sc.logits()}, {&sc.lists()}, {&sc.attention()}, {&sc.usage()}},
                                        config.kv.capacity, std::max(1u, plan.top_keep), lm_infinite.enabled, stored,
                                        kernels::score_features(config.retrieval)));
  if (plan.flash) {
    ATTENDRE_TRY_ASSIGN(m->flash_, kernels::FlashAttention::create(
                                       context, *m->arena_, m->kernels_,
                                       {{&ring}, {&m->kv_}, {&sc.attention()}, {&sc.logits()}}, config.shape.head_dim,
                                       stored, kernels::score_features(config.retrieval)));
  }
  if (config.retrieval.bias == BiasKind::t5) ATTENDRE_TRY(m->upload_t5_tables(context));
  ATTENDRE_TRY_ASSIGN(m->outputs_site_, checks.add("the attention outputs" + stage,
                                                       vk::BufferBinding::words(sc.attention(), 0, plan.outputs_words)));
  if (config.kv.policy.attention_scored()) {
    ATTENDRE_TRY_ASSIGN(m->scores_site_,
                        checks.add("the policy scores" + stage,
                                       vk::BufferBinding::words(m->kv_, m->kv_layout_.scores, config.kv.capacity)));
  }
  return m;
}

Status KvRecorder::upload_t5_tables(Context& context) {
  const T5Buckets& t5 = config_.retrieval.t5;
  ATTENDRE_TRY_ASSIGN(const std::vector<uint32_t> buckets, positions::t5_bucket_table(t5));
  const uint64_t at = kv_layout_.t5_buckets, words = kv_layout_.t5_biases + t5.table.size() - at;
  ATTENDRE_TRY_ASSIGN(const vk::Buffer staging, vk::Buffer::create(context, words * 4, vk::MemoryIntent::upload, "t5 tables"));
  auto* w = static_cast<uint32_t*>(staging.mapped());
  std::memcpy(w, buckets.data(), buckets.size() * 4);
  std::memcpy(w + (kv_layout_.t5_biases - at), t5.table.data(), t5.table.size() * 4);
  ATTENDRE_TRY_ASSIGN(vk::Submission submission, vk::Submission::create(context));
  ATTENDRE_TRY_ASSIGN(vk::CommandRecorder* rec, submission.begin());
  rec->copy(staging, 0, kv_, at * 4, words * 4);
  ATTENDRE_TRY(submission.submit());
  return submission.wait();
}

kernels::InsertConstants KvRecorder::insert_constants() const {
  const KvMemoryConfig& kv = config_.kv;
  const InitialScore& init = kv.policy.initial;
  kernels::InsertConstants c{};
  c.capacity = kv.capacity;
  c.rows = config_.chunk;
  c.n_sink = kv.n_sink;
  c.policy = static_cast<uint32_t>(kv.policy.kind);
  c.init_constant = init.kind == InitialScore::Kind::constant ? 1u : 0u;
  c.init_k = static_cast<float>(init.k);
  c.init_value = static_cast<float>(init.value);
  c.kv_row = kv_layout_.kv_row;
  c.key_stride = chunk_layout_.key_stride;
  c.kv_key_stride = kv_layout_.key_stride;
  c.kv_value_stride = kv_layout_.value_stride;
  c.kv_key_offset = kv_layout_.keys;
  c.kv_value_offset = kv_layout_.values;
  c.kv_pos_offset = kv_layout_.positions;
  c.kv_score_offset = kv_layout_.scores;
  c.kv_tag_offset = kv_layout_.tags;
  c.chunk_key_offset = chunk_layout_.keys;
  c.chunk_value_offset = chunk_layout_.values;
  c.chunk_pos_offset = chunk_layout_.positions;
  c.chunk_valid_offset = chunk_layout_.valid;
  c.chunk_tag_offset = chunk_layout_.tags;
  c.chunk_init_offset = chunk_layout_.init;
  c.chunk_place_offset = chunk_layout_.placement;
  c.out_key_offset = evicted_layout_.keys;
  c.out_value_offset = evicted_layout_.values;
  c.out_pos_offset = evicted_layout_.positions;
  c.out_score_offset = evicted_layout_.scores;
  return c;
}

void KvRecorder::reset() {
  held_ = pinned_ = last_evictions_ = 0;
  recent_.clear();
  seen_queries_ = false;
  max_query_position_ = 0;
}

uint64_t KvRecorder::device_bytes() const {
  uint64_t total = kv_.size() + chunk_.size() + (evicted_ ? evicted_.size() : 0);
  return total + (own_scratch_ ? own_scratch_->device_bytes() : 0);
}

namespace {

bool is_pinned(int64_t position, uint32_t n_sink) {
  return n_sink > 0 && position < static_cast<int64_t>(n_sink);  // n_sink = 0 pins nothing
}

}  // namespace

KvRecorder::Fresh KvRecorder::count_fresh(std::span<const uint8_t> valid, std::span<const int64_t> positions) const {
  const KvMemoryConfig& kv = config_.kv;
  Fresh f;
  for (size_t r = 0; r < valid.size(); ++r) {
    if (!valid[r]) continue;
    ++f.rows;
    f.span = static_cast<uint32_t>(r + 1);
    if (is_pinned(positions[r], kv.n_sink)) ++f.pinned;
    f.newest = f.rows == 1 ? positions[r] : std::max(f.newest, positions[r]);
  }
  if (kv.n_recent == 0 || f.rows == 0) return f;
  // The window ends at the newest position held after the insertion: the
  // chunk's (positions increase along the stream).
  for (size_t r = 0; r < valid.size(); ++r)
    if (valid[r] && !is_pinned(positions[r], kv.n_sink) && in_recent_window(positions[r], f.newest, kv.n_recent))
      ++f.recent;
  for (auto it = recent_.rbegin(); it != recent_.rend() && in_recent_window(*it, f.newest, kv.n_recent); ++it)
    ++f.held_recent;
  return f;
}

Result<uint32_t> KvRecorder::plan_insert(std::span<const uint8_t> valid, std::span<const int64_t> positions) const {
  return plan_insert(count_fresh(valid, positions));
}

Result<uint32_t> KvRecorder::plan_insert(const Fresh& fresh) const {
  const KvMemoryConfig& kv = config_.kv;
  const uint32_t evictions = held_ + fresh.rows > kv.capacity ? held_ + fresh.rows - kv.capacity : 0;
  // Held entries that may go, then new ones (unpinned, outside the window).
  const uint32_t eligible = (held_ - pinned_ - fresh.held_recent) +
                            (kv.protect_new ? 0 : fresh.rows - fresh.pinned - fresh.recent);
  if (evictions > eligible) return infeasible_insertion(evictions, eligible);
  return evictions;
}

void KvRecorder::note_inserted(std::span<const uint8_t> valid, std::span<const int64_t> positions, const Fresh& fresh) {
  const KvMemoryConfig& kv = config_.kv;
  if (kv.n_recent == 0 || fresh.rows == 0) return;
  // Entries inside the window are never evicted, so every position kept
  // here is held; those the window has passed leave the count.
  while (!recent_.empty() && !in_recent_window(recent_.front(), fresh.newest, kv.n_recent)) recent_.pop_front();
  for (size_t r = 0; r < valid.size(); ++r)
    if (valid[r] && !is_pinned(positions[r], kv.n_sink) && in_recent_window(positions[r], fresh.newest, kv.n_recent))
      recent_.push_back(positions[r]);
}

Status KvRecorder::record_insert(vk::CommandRecorder& rec, std::span<const uint8_t> valid,
                               std::span<const int64_t> positions) {
  const KvMemoryConfig& kv = config_.kv;
  const uint32_t S = config_.chunk;
  const Fresh fresh = count_fresh(valid, positions);
  ATTENDRE_TRY_ASSIGN(const uint32_t evictions, plan_insert(fresh));
  last_evictions_ = evictions;
  if (fresh.rows == 0) return {};

  const kernels::InsertParams p{held_, evictions};
  // The recorder orders these kernels by what each reads and writes.
  if (kv.policy.attention_scored()) insert_.score_stats(rec, p);
  if (evictions > 0) {
    kernels::SelectTileParams s{};
    s.count = held_ + (kv.protect_new ? 0 : S);
    s.keep = kernels::next_pow2(evictions);
    s.kv_pos_offset = kv_layout_.positions;
    s.held = held_;
    s.n_sink = kv.n_sink;
    s.n_recent = kv.n_recent;
    // Device positions are int32 (checked on entry), so the window's first
    // position only needs the lower clamp.
    s.recent_from = static_cast<int32_t>(
        std::max<int64_t>(fresh.newest - kv.n_recent + 1, std::numeric_limits<int32_t>::min()));
    s.new_rows = kv.protect_new ? 0 : S;
    s.int_scores = integer_scores(kv.policy.kind) ? 1u : 0u;
    s.policy = static_cast<uint32_t>(kv.policy.kind);
    s.kv_score_offset = kv_layout_.scores;
    s.chunk_pos_offset = chunk_layout_.positions;
    s.chunk_valid_offset = chunk_layout_.valid;
    s.chunk_init_offset = chunk_layout_.init;
    s.victims = evictions;
    if (!evicted_ && insert_.direct_insert(s.count, s.keep)) {
      insert_.insert_direct(rec, s);  // select, plan and scatter in one dispatch
    } else {
      ATTENDRE_TRY(insert_.select_victims(rec, s));
      insert_.plan(rec, p);
      if (evicted_) insert_.evict_copy(rec, p);
      insert_.scatter(rec, p, fresh.span);
    }
  } else {
    insert_.scatter(rec, p, fresh.span);  // without victims the scatter places the rows itself
  }
  held_ = held_ + fresh.rows - evictions;
  pinned_ += fresh.pinned;
  note_inserted(valid, positions, fresh);
  return {};
}

Status KvRecorder::record_retrieve(vk::CommandRecorder& rec, const QueryRange& range, bool force_causal) {
  if (range.last_valid == kInvalid || range.count == 0) return {};  // spec 2.4: no valid query, no change
  const int64_t step_max = range.last_valid_position;
  const int64_t i_max = seen_queries_ ? std::max(max_query_position_, step_max) : step_max;
  const int64_t i_prev = seen_queries_ ? max_query_position_ : i_max;
  const bool causal = force_causal || config_.retrieval.causal;
  for (uint32_t first = 0; first < range.count; first += plan_.batch)
    ATTENDRE_TRY(retrieve_batch(rec, range, first, std::min(plan_.batch, range.count - first),
                                static_cast<int32_t>(i_max), static_cast<int32_t>(i_prev), causal));
  seen_queries_ = true;
  max_query_position_ = i_max;
  if (!defer_outputs_check_) checks_.record(rec, outputs_site_, 0, range.count * config_.shape.q_row());
  if (config_.kv.policy.attention_scored()) checks_.record(rec, scores_site_, 0, held_);
  return {};
}

// The fields ScoreParams and FlashParams share, named alike: which queries
// and keys, how they are scaled, masked and biased.
template <class Params>
void KvRecorder::scoring_fields(Params& p, uint32_t ring_first, uint32_t count, bool causal) const {
  const RetrievalConfig& retrieval = config_.retrieval;
  p.ring_first = ring_first;
  p.ring_capacity = ring_layout_.capacity;
  p.queries = count;
  p.held = held_;
  p.heads_q = config_.shape.heads_q;
  p.heads_kv = config_.shape.heads_kv;
  p.scale = static_cast<float>(config_.scale());
  p.causal = causal ? 1u : 0u;
  p.tag_mask = retrieval.tag_mask ? 1u : 0u;
  p.bias = static_cast<uint32_t>(retrieval.bias);
  p.ring_q_stride = ring_layout_.q_stride;
  p.ring_pos_offset = ring_layout_.positions;
  p.ring_valid_offset = ring_layout_.valid;
  p.ring_tag_offset = ring_layout_.tags;
  p.kv_key_offset = kv_layout_.keys;
  p.kv_key_stride = kv_layout_.key_stride;
  p.kv_pos_offset = kv_layout_.positions;
  p.kv_tag_offset = kv_layout_.tags;
  p.n_sink = config_.kv.n_sink;
  p.t5_buckets_offset = kv_layout_.t5_buckets;
  p.t5_biases_offset = kv_layout_.t5_biases;
  p.t5_max_distance = retrieval.t5.max_distance;
  p.window = retrieval.window;
  p.soft_cap = static_cast<float>(retrieval.soft_cap);
}

Status KvRecorder::retrieve_batch(vk::CommandRecorder& rec, const QueryRange& range, uint32_t first, uint32_t count,
                              int32_t i_max, int32_t i_prev, bool causal) {
  if (plan_.flash) return flash_batch(rec, range, first, count, causal);
  const AttentionShape& shape = config_.shape;
  const RetrievalConfig& retrieval = config_.retrieval;
  const uint32_t M = config_.kv.capacity;
  const bool full = plan_.full;
  const bool shared = retrieval.mode == RetrievalMode::shared;

  kernels::ScoreParams sp{};
  scoring_fields(sp, range.ring_first + first, count, causal);
  sp.logit_stride = M;
  sp.head_dim = shape.head_dim;
  sp.n_local = lm_infinite_.n_local;
  ATTENDRE_TRY(retrieve_.score(rec, sp));

  kernels::RetrieveParams rp{};
  rp.queries = count;
  rp.heads_q = shape.heads_q;
  rp.heads_kv = shape.heads_kv;
  rp.head_dim = shape.head_dim;
  rp.held = held_;
  rp.logit_stride = M;
  rp.summed_offset = static_cast<uint32_t>(plan_.summed_offset);
  rp.full = full ? 1u : 0u;
  rp.shared_lists = shared ? 1u : 0u;
  rp.list_count = full ? held_ : plan_.list_count;
  rp.list_tiles = retrieve_.select().tiles(held_);
  rp.list_keep = plan_.top_keep;
  rp.kv_value_offset = kv_layout_.values;
  rp.kv_value_stride = kv_layout_.value_stride;
  rp.out_offset = static_cast<uint32_t>(outputs_offset());
  rp.out_first_query = first;
  rp.weight_offset = static_cast<uint32_t>(plan_.weights_offset);
  rp.weight_stride = plan_.list_count;
  rp.usage_stride = M;
  rp.used_offset = static_cast<uint32_t>(plan_.used_offset);

  if (!full) {
    if (shared) {
      retrieve_.sum_heads(rec, rp);
    }
    kernels::SelectTileParams s{};
    s.count = held_;
    s.keep = plan_.top_keep;
    s.source_offset = shared ? rp.summed_offset : 0;
    s.source_stride = M;
    s.kv_pos_offset = kv_layout_.positions;
    ATTENDRE_TRY(retrieve_.top_k(rec, s, shared ? count : count * shape.heads_q));
  }
  retrieve_.attend(rec, rp);
  if (config_.kv.policy.kind == PolicyKind::fifo) return {};

  retrieve_.usage(rec, rp);
  kernels::PolicyParams pp{};
  pp.policy = static_cast<uint32_t>(config_.kv.policy.kind);
  pp.held = held_;
  pp.queries = count;
  pp.ring_first = range.ring_first + first;
  pp.ring_capacity = ring_layout_.capacity;
  pp.ring_pos_offset = ring_layout_.positions;
  pp.ring_valid_offset = ring_layout_.valid;
  pp.usage_stride = rp.usage_stride;
  pp.used_offset = rp.used_offset;
  pp.first_batch = first == 0 ? 1u : 0u;
  pp.last_query = range.last_valid >= first && range.last_valid < first + count ? range.last_valid - first : kInvalid;
  pp.i_max = i_max;
  pp.i_prev = i_prev;
  pp.lambda = static_cast<float>(config_.kv.policy.lambda);
  pp.inv_heads = 1.0f / static_cast<float>(shape.heads_q);
  pp.kv_score_offset = kv_layout_.scores;
  retrieve_.policy_update(rec, pp);
  return {};
}

Status KvRecorder::flash_batch(vk::CommandRecorder& rec, const QueryRange& range, uint32_t first, uint32_t count,
                             bool causal) {
  kernels::FlashParams p{};
  scoring_fields(p, range.ring_first + first, count, causal);
  p.kv_value_offset = kv_layout_.values;
  p.kv_value_stride = kv_layout_.value_stride;
  p.out_offset = static_cast<uint32_t>(outputs_offset());
  p.out_first_query = first;
  p.lse_offset = static_cast<uint32_t>(plan_.weights_offset);
  p.partial_offset = 0;
  return flash_.record(rec, p);
}

void KvRecorder::record_snapshot(vk::CommandRecorder& rec, const vk::Buffer& readback, VkDeviceSize offset) const {
  rec.copy(kv_, kv_layout_.positions * 4ull, readback, offset, held_ * 4ull);
  rec.copy(kv_, kv_layout_.scores * 4ull, readback, offset + held_ * 4ull, held_ * 4ull);
}

Result<MemorySnapshot> KvRecorder::read_snapshot(vk::Submission& submission, const vk::Buffer& readback,
                                               uint64_t offset_words) const {
  ATTENDRE_TRY_ASSIGN(vk::CommandRecorder* rec, submission.begin());
  record_snapshot(*rec, readback, offset_words * 4);
  ATTENDRE_TRY(submission.submit());
  ATTENDRE_TRY(submission.wait());
  return decode_snapshot(static_cast<const uint32_t*>(readback.mapped()) + offset_words);
}

MemorySnapshot KvRecorder::decode_snapshot(const void* words) const {
  const auto* w = static_cast<const uint32_t*>(words);
  const bool ints = integer_scores(config_.kv.policy.kind);
  std::vector<uint32_t> order(held_);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(),
            [&](uint32_t a, uint32_t b) { return static_cast<int32_t>(w[a]) < static_cast<int32_t>(w[b]); });
  MemorySnapshot snap;
  for (uint32_t i : order) {
    snap.positions.push_back(static_cast<int32_t>(w[i]));
    float f;
    std::memcpy(&f, &w[held_ + i], 4);
    snap.scores.push_back(ints ? static_cast<double>(static_cast<int32_t>(w[held_ + i])) : static_cast<double>(f));
  }
  return snap;
}

Status KvRecorder::record_evicted(vk::CommandRecorder& rec, const vk::Buffer& readback, VkDeviceSize offset) const {
  ATTENDRE_REQUIRE(static_cast<bool>(evicted_), "evicted entries requested but copy_out_evicted is off");
  rec.copy(evicted_, 0, readback, offset, evicted_layout_.words * 4ull);
  return {};
}

EvictedEntries KvRecorder::decode_evicted(const void* words) const {
  const auto* w = static_cast<const uint32_t*>(words);
  const bool ints = integer_scores(config_.kv.policy.kind);
  const uint32_t n = last_evictions_, row = evicted_layout_.kv_row;
  EvictedEntries out;
  for (uint32_t e = 0; e < n; ++e) {
    out.positions.push_back(static_cast<int32_t>(w[evicted_layout_.positions + e]));
    const uint32_t bits = w[evicted_layout_.scores + e];
    float f;
    std::memcpy(&f, &bits, 4);
    out.scores.push_back(ints ? static_cast<double>(static_cast<int32_t>(bits)) : static_cast<double>(f));
  }
  const auto* floats = reinterpret_cast<const float*>(w);
  out.keys.assign(floats + evicted_layout_.keys, floats + evicted_layout_.keys + uint64_t{n} * row);
  out.values.assign(floats + evicted_layout_.values, floats + evicted_layout_.values + uint64_t{n} * row);
  return out;
}

}  // namespace attendre::gpu
