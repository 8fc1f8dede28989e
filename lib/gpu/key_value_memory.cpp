// The standalone device K/V memory (paper Table 1): the same KvMemory the
// layer records into, with its own query rows, staging and submission.
#include "gpu/kv_memory.hpp"
#include "gpu/query_ring.hpp"
#include "gpu/staging.hpp"
#include "vulkan/commands.hpp"
#include "core/fail.hpp"
#include "core/stream_validator.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu.hpp>

namespace attendre::gpu {
namespace {

LayerConfig as_layer(const AttentionShape& shape, const KvMemoryConfig& kv, const RetrievalConfig& retrieval,
                     uint32_t max_insert) {
  LayerConfig c;
  c.shape = shape;
  c.chunk = max_insert;
  c.q_capacity = 0;  // queries retrieve as they come
  c.kv = kv;
  c.retrieval = retrieval;
  c.validate();
  return c;
}

}  // namespace

struct KeyValueMemory::Impl {
  Impl(Context& ctx, const LayerConfig& c, uint32_t queries)
      : config(c),
        ring(ctx, c.shape, 0, queries, 0, 1, c.kv.storage),
        checks(ctx, 2),
        kv(ctx, c, queries, c.chunk, ring.buffer(), ring.layout(), checks, ""),
        chunk_words(kv.chunk_layout().init),
        query_words(align_words(uint64_t{queries} * c.shape.q_row())),
        upload(ctx, (align_words(chunk_words) + query_words + 3ull * queries) * 4, vk::MemoryIntent::upload,
               "kv upload"),
        readback(ctx, (query_words + align_words(kv.snapshot_words()) + kv.evicted_words()) * 4,
                 vk::MemoryIntent::readback, "kv readback"),
        submission(ctx),
        max_queries(queries) {}

  LayerConfig config;
  QueryRing ring;
  FiniteChecks checks;
  KvMemory kv;
  uint64_t chunk_words, query_words;
  vk::Buffer upload, readback;
  vk::Submission submission;
  uint32_t max_queries;
  StreamValidator keys;
  uint64_t retrievals = 0;
};

KeyValueMemory::KeyValueMemory(Context& context, const AttentionShape& shape, const KvMemoryConfig& config,
                               const RetrievalConfig& retrieval, uint32_t max_insert, uint32_t max_queries)
    : impl_(std::make_unique<Impl>(context, as_layer(shape, config, retrieval, max_insert), max_queries)) {
  require(max_queries >= 1, "a K/V memory needs room for at least one query");
}
KeyValueMemory::~KeyValueMemory() = default;

EvictedEntries KeyValueMemory::insert(const ChunkView& rows) {
  Impl& m = *impl_;
  m.keys.check(rows, m.config, StreamValidator::Parts::keys).or_throw();
  check_int32_positions(rows);
  InsertionRows in = insertion_rows(query_metas(rows, m.config.chunk), m.config.chunk);
  m.kv.plan_insert(in.valid, in.positions);  // throws before anything changed
  m.keys.accept(rows, m.config, StreamValidator::Parts::keys);
  vk::CommandRecorder& rec = m.submission.begin();
  pack_kv_rows(rows, m.kv.chunk_layout(), static_cast<uint32_t*>(m.upload.mapped()));
  rec.copy(m.upload, 0, m.kv.chunk_buffer(), 0, m.chunk_words * 4);
  m.kv.record_insert(rec, in.valid, in.positions);
  const uint64_t evicted_at = m.query_words + align_words(m.kv.snapshot_words());
  if (m.config.kv.copy_out_evicted) m.kv.record_evicted(rec, m.readback, evicted_at * 4);
  m.submission.submit();
  if (!m.config.kv.copy_out_evicted) return {};
  m.submission.wait();
  return m.kv.decode_evicted(static_cast<const uint32_t*>(m.readback.mapped()) + evicted_at);
}

std::vector<float> KeyValueMemory::retrieve(const ChunkView& queries) {
  Impl& m = *impl_;
  const uint32_t q_row = m.config.shape.q_row();
  require(queries.rows <= m.max_queries, "retrieve() got " + std::to_string(queries.rows) + " queries, more than " +
                                             std::to_string(m.max_queries));
  LayerConfig query_shape = m.config;
  query_shape.chunk = m.max_queries;
  m.keys.check(queries, query_shape, StreamValidator::Parts::queries).or_throw();
  check_int32_positions(queries);
  const std::vector<QueryMeta> metas = query_metas(queries, queries.rows);
  vk::CommandRecorder& rec = m.submission.begin();
  auto* words = static_cast<uint32_t*>(m.upload.mapped());
  const uint64_t q_at = align_words(m.chunk_words), meta_at = q_at + m.query_words;
  const uint64_t first = m.ring.next_sequence();
  const std::vector<QueryMeta> evicted = m.ring.insert(metas);  // N = 0: every query retrieves now
  pack_query_rows(queries, q_row, queries.rows, reinterpret_cast<float*>(words + q_at));
  QueryRing::pack_meta(metas, words + meta_at);
  m.ring.record_query_rows(rec, m.upload, q_at, first, 0, queries.rows);
  m.ring.record_store_queries(rec, first, queries.rows);
  m.ring.record_meta(rec, m.upload, meta_at, first, queries.rows);
  const QueryRange range = m.ring.range_of(evicted);
  m.kv.record_retrieve(rec, range);
  m.keys.accept(queries, query_shape, StreamValidator::Parts::queries);
  const bool any = range.last_valid != kernels::kInvalid;
  if (any) rec.copy(m.kv.attention_buffer(), 0, m.readback, 0, uint64_t{range.count} * q_row * 4);
  m.submission.submit();
  std::vector<float> out;
  const uint64_t retrieval = m.retrievals++;
  if (!any) return out;
  m.submission.wait();
  m.checks.verify("retrieval " + std::to_string(retrieval));
  append_valid_rows(static_cast<const float*>(m.readback.mapped()), evicted, q_row, out);
  return out;
}

MemorySnapshot KeyValueMemory::snapshot() {
  return impl_->kv.read_snapshot(impl_->submission, impl_->readback, impl_->query_words);
}

}  // namespace attendre::gpu
