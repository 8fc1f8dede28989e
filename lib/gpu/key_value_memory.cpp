// The standalone device K/V memory (paper Table 1): the same KvRecorder the
// layer records with, with its own query rows and staging; its inserts and
// retrievals run on a one-slot gpu::StepExecutor (every retrieval waits for
// its answer), which names them in errors ("retrieval 2").
#include "gpu/kv_recorder.hpp"
#include "gpu/query_ring.hpp"
#include "gpu/recorded_steps.hpp"
#include "gpu/staging.hpp"
#include "gpu/step_executor.hpp"
#include "vulkan/commands.hpp"
#include "core/try.hpp"
#include "core/stream_validator.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu.hpp>

namespace attendre::gpu {
namespace {

Result<LayerConfig> as_layer(const AttentionShape& shape, const KvMemoryConfig& kv, const RetrievalConfig& retrieval,
                             uint32_t max_insert) {
  LayerConfig c;
  c.shape = shape;
  c.chunk = max_insert;
  c.q_capacity = 0;  // queries retrieve as they come
  c.kv = kv;
  c.retrieval = retrieval;
  ATTENDRE_TRY(c.check());
  return c;
}

}  // namespace

struct KeyValueMemory::Impl {
  Impl(Context& ctx, const LayerConfig& c, uint32_t queries)
      : context(ctx), config(c), query_words(align_words(uint64_t{queries} * c.shape.q_row())), max_queries(queries) {}

  // Makes the memory, staging and executor in place (the K/V memory's
  // kernels bind the ring's buffer).
  Status build() {
    const LayerConfig& c = config;
    ATTENDRE_TRY_ASSIGN(ring, QueryRing::create(context, c.shape, 0, max_queries, 0, 1, c.kv.storage));
    ATTENDRE_TRY_ASSIGN(checks, FiniteChecks::create(context, 2, StepExecutor::check_slots(1)));
    ATTENDRE_TRY_ASSIGN(kv, KvRecorder::create(context, c, max_queries, c.chunk, ring->buffer(), ring->layout(), *checks, ""));
    chunk_words = kv->chunk_layout().init;
    q_at = align_words(chunk_words);
    meta_at = q_at + query_words;
    const uint64_t upload_bytes = (meta_at + 3ull * max_queries) * 4;
    ATTENDRE_TRY_ASSIGN(staged, vk::Buffer::create(context, upload_bytes, vk::MemoryIntent::device, "recorded kv image"));
    const uint64_t readback_bytes = (query_words + align_words(kv->snapshot_words()) + kv->evicted_words()) * 4;
    ATTENDRE_TRY_ASSIGN(executor, StepExecutor::create(context, *checks, upload_bytes, "kv upload", readback_bytes,
                                                       "kv readback", 1, {"retrieval", "an insert", "a recorded call"}));
    return {};
  }

  // The host half of an insert (checked, planned, committed): its rows.
  Result<InsertionRows> plan_insert(const ChunkView& rows);
  // Records the insert whose chunk image is in `src` (upload's layout):
  // k and v, when given, overwrite the image's zeros.
  Status record_insert(vk::CommandRecorder& rec, const vk::Buffer& src, const InsertionRows& in,
                     const std::vector<QueryMeta>& metas, const std::optional<BufferRange>& k,
                     const std::optional<BufferRange>& v);
  // The host half of a retrieval (checked, queries placed in the ring): the
  // queries' metas, the ring rows they took and the first one's sequence.
  struct Retrieval {
    std::vector<QueryMeta> metas, evicted;
    uint64_t first = 0;
    QueryRange range;
  };
  Result<Retrieval> plan_retrieve(const ChunkView& queries);
  // Packs the retrieval's queries and metadata at upload's offsets in `words`.
  void pack_retrieve(const ChunkView& queries, const Retrieval& r, uint32_t* words) const;
  // Records the retrieval from `src` (upload's layout); q, when given,
  // overwrites the image's zero queries.
  Status record_retrieve(vk::CommandRecorder& rec, const vk::Buffer& src, const Retrieval& r,
                         const std::optional<BufferRange>& q);

  Context& context;
  LayerConfig config;
  uint64_t query_words;
  uint32_t max_queries;
  std::unique_ptr<QueryRing> ring;
  std::unique_ptr<FiniteChecks> checks;
  std::unique_ptr<KvRecorder> kv;
  uint64_t chunk_words = 0, q_at = 0, meta_at = 0;  // the upload image: chunk, queries, metadata
  // record_*'s image: device-local, written by the application's command
  // buffer itself, so nothing the host owns must outlive its submission.
  vk::Buffer staged;
  std::unique_ptr<StepExecutor> executor;
  StreamValidator keys;
};

Result<std::unique_ptr<KeyValueMemory>> KeyValueMemory::create(Context& context, const AttentionShape& shape,
                                                               const KvMemoryConfig& config,
                                                               const RetrievalConfig& retrieval, uint32_t max_insert,
                                                               uint32_t max_queries) {
  ATTENDRE_TRY_ASSIGN(const LayerConfig layer, as_layer(shape, config, retrieval, max_insert));
  ATTENDRE_REQUIRE(max_queries >= 1, "a K/V memory needs room for at least one query");
  auto impl = std::make_unique<Impl>(context, layer, max_queries);
  ATTENDRE_TRY(impl->build());
  return std::unique_ptr<KeyValueMemory>(new KeyValueMemory(std::move(impl)));
}
KeyValueMemory::KeyValueMemory(std::unique_ptr<Impl>&& impl) : impl_(std::move(impl)) {}
KeyValueMemory::~KeyValueMemory() = default;

Result<InsertionRows> KeyValueMemory::Impl::plan_insert(const ChunkView& rows) {
  ATTENDRE_TRY(keys.check(rows, config, StreamValidator::Parts::keys));
  ATTENDRE_TRY(check_int32_positions(rows));
  InsertionRows in = insertion_rows(query_metas(rows, config.chunk), config.chunk);
  ATTENDRE_TRY(kv->plan_insert(in.valid, in.positions));  // fails before anything changed
  keys.accept(rows, config, StreamValidator::Parts::keys);
  return in;
}

Status KeyValueMemory::Impl::record_insert(vk::CommandRecorder& rec, const vk::Buffer& src, const InsertionRows& in,
                                           const std::vector<QueryMeta>& metas, const std::optional<BufferRange>& k,
                                           const std::optional<BufferRange>& v) {
  rec.copy(src, 0, kv->chunk_buffer(), 0, chunk_words * 4);
  if (k) record_keys_values_from(rec, *kv, *k, *v, metas);
  return kv->record_insert(rec, in.valid, in.positions);
}

Result<EvictedEntries> KeyValueMemory::insert(const ChunkView& rows) {
  Impl& m = *impl_;
  // Earlier calls' failures and a bad chunk change nothing: both come
  // before the insert is committed.
  ATTENDRE_TRY(m.executor->ready());
  ATTENDRE_TRY_ASSIGN(const InsertionRows in, m.plan_insert(rows));
  ATTENDRE_TRY_ASSIGN(SubmitSlot* const began, m.executor->begin());
  SubmitSlot& slot = *began;
  vk::CommandRecorder& rec = slot.submission.recorder();
  pack_kv_rows(rows, m.kv->chunk_layout(), static_cast<uint32_t*>(slot.upload.mapped()));
  ATTENDRE_TRY(m.record_insert(rec, slot.upload, in, {}, std::nullopt, std::nullopt));
  const uint64_t evicted_at = m.query_words + align_words(m.kv->snapshot_words());
  if (m.config.kv.copy_out_evicted) ATTENDRE_TRY(m.kv->record_evicted(rec, slot.readback, evicted_at * 4));
  ATTENDRE_TRY(m.executor->submit(slot, {}, StepKind::uncounted).status());
  if (!m.config.kv.copy_out_evicted) return EvictedEntries{};
  ATTENDRE_TRY(m.executor->finish_all());
  return m.kv->decode_evicted(static_cast<const uint32_t*>(slot.readback.mapped()) + evicted_at);
}

Result<KeyValueMemory::Impl::Retrieval> KeyValueMemory::Impl::plan_retrieve(const ChunkView& queries) {
  ATTENDRE_REQUIRE(queries.rows <= max_queries, "retrieve() got " + std::to_string(queries.rows) +
                                                    " queries, more than " + std::to_string(max_queries));
  LayerConfig query_shape = config;
  query_shape.chunk = max_queries;
  ATTENDRE_TRY(keys.check(queries, query_shape, StreamValidator::Parts::queries));
  ATTENDRE_TRY(check_int32_positions(queries));
  Retrieval r;
  r.metas = query_metas(queries, queries.rows);
  r.first = ring->next_sequence();
  r.evicted = ring->insert(r.metas);  // N = 0: every query retrieves now
  r.range = ring->range_of(r.evicted);
  keys.accept(queries, query_shape, StreamValidator::Parts::queries);
  return r;
}

void KeyValueMemory::Impl::pack_retrieve(const ChunkView& queries, const Retrieval& r, uint32_t* words) const {
  pack_query_rows(queries, config.shape.q_row(), queries.rows, reinterpret_cast<float*>(words + q_at));
  QueryRing::pack_meta(r.metas, words + meta_at);
}

Status KeyValueMemory::Impl::record_retrieve(vk::CommandRecorder& rec, const vk::Buffer& src, const Retrieval& r,
                                             const std::optional<BufferRange>& q) {
  const uint32_t rows = static_cast<uint32_t>(r.metas.size());
  ring->record_query_rows(rec, src, q_at, r.first, 0, rows);
  if (q) record_queries_from(rec, *ring, *q, r.metas, r.first);
  ring->record_store_queries(rec, r.first, rows);
  ring->record_meta(rec, src, meta_at, r.first, rows);
  return kv->record_retrieve(rec, r.range);
}

Result<std::vector<float>> KeyValueMemory::retrieve(const ChunkView& queries) {
  Impl& m = *impl_;
  const uint32_t q_row = m.config.shape.q_row();
  ATTENDRE_TRY(m.executor->ready());  // before the retrieval is committed, as insert
  ATTENDRE_TRY_ASSIGN(const Impl::Retrieval r, m.plan_retrieve(queries));
  ATTENDRE_TRY_ASSIGN(SubmitSlot* const began, m.executor->begin());
  SubmitSlot& slot = *began;
  vk::CommandRecorder& rec = slot.submission.recorder();
  m.pack_retrieve(queries, r, static_cast<uint32_t*>(slot.upload.mapped()));
  ATTENDRE_TRY(m.record_retrieve(rec, slot.upload, r, std::nullopt));
  const bool any = r.range.last_valid != kernels::kInvalid;
  if (any) rec.copy(m.kv->attention_buffer(), 0, slot.readback, 0, uint64_t{r.range.count} * q_row * 4);
  ATTENDRE_TRY(m.executor->submit(slot).status());
  std::vector<float> out;
  if (!any) return out;
  // Every call before it too, in submission order: the first non-finite
  // one is named.
  ATTENDRE_TRY(m.executor->finish_all());
  append_valid_rows(static_cast<const float*>(slot.readback.mapped()), r.evicted, q_row, out);
  return out;
}

Result<MemorySnapshot> KeyValueMemory::snapshot() {
  ATTENDRE_TRY(impl_->executor->finish_all());
  SubmitSlot& slot = impl_->executor->slot(0);
  return impl_->kv->read_snapshot(slot.submission, slot.readback, impl_->query_words);
}

namespace {

// Both ranges or neither: the rows come from the host or the application.
Result<bool> from_application(const std::optional<BufferRange>& a, const std::optional<BufferRange>& b,
                              const char* what) {
  ATTENDRE_REQUIRE(a.has_value() == b.has_value(),
                   std::string("record: ") + what + " come both from the chunk or both from buffer ranges");
  return a.has_value();
}

}  // namespace

Status KeyValueMemory::record_insert(VkCommandBuffer cb, const ChunkView& rows, const std::optional<BufferRange>& k,
                                     const std::optional<BufferRange>& v, const Consumer& consumer) {
  Impl& m = *impl_;
  ATTENDRE_REQUIRE(cb != VK_NULL_HANDLE, "record: no command buffer");
  const uint32_t q_row = m.config.shape.q_row(), kv_row = m.config.shape.kv_row();
  ATTENDRE_TRY_ASSIGN(const bool device, from_application(k, v, "keys and values"));
  if (device) {
    ATTENDRE_REQUIRE(rows.k.empty() && rows.v.empty(),
                     "record: keys and values come from the chunk or from buffer ranges, not both");
    ATTENDRE_TRY(check_range(*k, uint64_t{rows.rows} * kv_row * 4, "k"));
    ATTENDRE_TRY(check_range(*v, uint64_t{rows.rows} * kv_row * 4, "v"));
  }
  std::vector<float> zeros;
  const ChunkView checked = without_device_rows(rows, device, q_row, kv_row, zeros);
  ATTENDRE_TRY_ASSIGN(const InsertionRows in, m.plan_insert(checked));  // committed from here
  std::vector<uint32_t> image(m.chunk_words);
  pack_kv_rows(checked, m.kv->chunk_layout(), image.data());
  vk::CommandRecorder rec = m.executor->begin_recorded(cb);
  ATTENDRE_TRY(rec.update(m.staged, 0, image.size() * 4, image.data()));
  ATTENDRE_TRY(m.record_insert(rec, m.staged, in, query_metas(rows, m.config.chunk), k, v));
  m.executor->end_recorded(rec, consumer, StepKind::uncounted);
  return {};
}

Result<RecordedStep> KeyValueMemory::record_retrieve(VkCommandBuffer cb, const ChunkView& queries,
                                                     const std::optional<BufferRange>& q, const LayerOutputs& out) {
  Impl& m = *impl_;
  ATTENDRE_REQUIRE(cb != VK_NULL_HANDLE, "record: no command buffer");
  const uint32_t q_row = m.config.shape.q_row(), kv_row = m.config.shape.kv_row();
  if (q) {
    ATTENDRE_REQUIRE(queries.q.empty(), "record: the queries come from the chunk or from a buffer range, not both");
    ATTENDRE_TRY(check_range(*q, uint64_t{queries.rows} * q_row * 4, "q"));
  }
  if (out.outputs) ATTENDRE_TRY(check_range(*out.outputs, uint64_t{m.max_queries} * q_row * 4, "outputs"));
  std::vector<float> zeros;
  const ChunkView checked = without_device_rows(queries, q.has_value(), q_row, kv_row, zeros);
  ATTENDRE_TRY_ASSIGN(const Impl::Retrieval r, m.plan_retrieve(checked));  // committed from here
  std::vector<uint32_t> image(m.staged.size() / 4);
  m.pack_retrieve(checked, r, image.data());
  vk::CommandRecorder rec = m.executor->begin_recorded(cb);
  ATTENDRE_TRY(rec.update(m.staged, m.q_at * 4, (image.size() - m.q_at) * 4, image.data() + m.q_at));
  ATTENDRE_TRY(m.record_retrieve(rec, m.staged, r, q));
  if (out.outputs)
    copy_valid_rows_packed(rec, m.kv->attention_buffer(), m.kv->outputs_offset() * 4, uint64_t{q_row} * 4, r.evicted,
                           borrow(*out.outputs, "application outputs"), out.outputs->offset);
  m.executor->end_recorded(rec, out.consumer);
  RecordedStep recorded;
  for (const QueryMeta& meta : r.evicted)
    if (meta.valid) recorded.emitted_positions.push_back(meta.position);
  return recorded;
}

}  // namespace attendre::gpu
