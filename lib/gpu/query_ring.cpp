#include "gpu/query_ring.hpp"
#include "core/try.hpp"

#include <attendre/error.hpp>

#include <algorithm>

namespace attendre::gpu {

InsertionRows insertion_rows(const std::vector<QueryMeta>& rows, uint32_t count) {
  InsertionRows out{std::vector<uint8_t>(count, 0), std::vector<int64_t>(count, 0)};
  for (size_t r = 0; r < rows.size() && r < count; ++r) {
    out.valid[r] = rows[r].valid ? 1 : 0;
    out.positions[r] = rows[r].valid ? rows[r].position : 0;
  }
  return out;
}

Result<std::unique_ptr<QueryRing>> QueryRing::create(Context& context, const AttentionShape& shape, uint32_t capacity,
                                                     uint32_t max_insert, uint32_t residual_width, uint32_t q_variants,
                                                     MemoryStorage storage) {
  ATTENDRE_TRY_ASSIGN(const RingLayout layout,
                      layout_of(RingLayout::make(capacity + max_insert, shape, residual_width, q_variants, storage,
                                                     max_insert),
                                {"q ring", 0, false, true, kQueryRingRemedy}));
  std::unique_ptr<QueryRing> ring(new QueryRing(layout, capacity));
  ATTENDRE_TRY_ASSIGN(ring->buffer_, vk::Buffer::create(context, layout.words * 4, vk::MemoryIntent::device, "q ring"));
  if (layout.words * 4 > context.caps().max_storage_range)
    return Status(ErrorCode::unsupported, "the Q memory ring exceeds the device's storage-buffer range; lower N or S");
  if (!layout.half()) return ring;
  ring->arena_ = std::make_unique<vk::DescriptorArena>(context);
  ATTENDRE_TRY_ASSIGN(
      ring->store_,
      kernels::StoreHalfRows::create(
          context, *ring->arena_, kernels::plan_kernels(context.caps()), ring->query_section(),
          vk::BufferBinding::words(ring->buffer_, layout.queries,
                                   stored_words(uint64_t{layout.capacity} * layout.q_stride, storage))));
  return ring;
}

void QueryRing::record_query_rows(vk::CommandRecorder& rec, const vk::Buffer& src, uint64_t src_words, uint64_t first,
                                  uint32_t offset_row, uint32_t rows) const {
  const uint32_t row_words = layout_.incoming_stride();
  if (!layout_.half()) return record_rows(rec, src, src_words, layout_.queries, row_words, first + offset_row, rows);
  rec.copy(src, src_words * 4, buffer_, (layout_.incoming + uint64_t{offset_row} * row_words) * 4,
           uint64_t{rows} * row_words * 4);
}

void QueryRing::record_store_queries(vk::CommandRecorder& rec, uint64_t first, uint32_t rows) const {
  if (!layout_.half() || rows == 0) return;
  kernels::StoreHalfParams p{};
  p.rows = rows;
  p.row_floats = layout_.incoming_stride();
  p.stored_stride = layout_.q_stride;
  p.first = ring_row(first);
  p.capacity = layout_.capacity;
  store_.record(rec, p);
}

vk::BufferBinding QueryRing::query_section() const {
  if (layout_.half())
    return vk::BufferBinding::words(buffer_, layout_.incoming, uint64_t{layout_.incoming_rows} * layout_.incoming_stride());
  return vk::BufferBinding::words(buffer_, layout_.queries, uint64_t{layout_.capacity} * layout_.q_stride);
}

kernels::RowRef QueryRing::query_rows(uint32_t first_row, uint32_t variant) const {
  const uint32_t offset = variant * layout_.q_row;
  if (layout_.half()) return kernels::RowRef::contiguous(layout_.incoming_stride(), offset);
  return kernels::RowRef::ring(layout_.q_stride, layout_.capacity, first_row, offset);
}

std::vector<QueryMeta> QueryRing::insert(std::vector<QueryMeta> rows) {
  for (QueryMeta& row : rows) row.sequence = next_sequence_++;
  return fifo_.insert(std::move(rows));
}

Result<std::vector<QueryMeta>> QueryRing::pass_through(std::vector<QueryMeta> rows) {
  ATTENDRE_REQUIRE(!has_pending(), "the Q ring still holds queries: drain before decoding");
  fifo_.take_all();  // drained padding: nothing waits any more

  for (QueryMeta& row : rows) row.sequence = next_sequence_++;
  return rows;
}

bool QueryRing::has_pending() const {
  return std::any_of(fifo_.entries().begin(), fifo_.entries().end(), [](const QueryMeta& m) { return m.valid; });
}

QueryRange QueryRing::range_of(const std::vector<QueryMeta>& rows) const {
  QueryRange range;
  range.count = static_cast<uint32_t>(rows.size());
  if (!rows.empty()) range.ring_first = ring_row(rows.front().sequence);
  for (uint32_t i = 0; i < range.count; ++i)
    if (rows[i].valid) range.last_valid = i, range.last_valid_position = rows[i].position;
  return range;
}

void QueryRing::pack_meta(const std::vector<QueryMeta>& rows, uint32_t* words) {
  const size_t n = rows.size();
  for (size_t r = 0; r < n; ++r) {
    words[r] = rows[r].valid ? static_cast<uint32_t>(static_cast<int32_t>(rows[r].position)) : 0u;
    words[n + r] = rows[r].valid ? 1u : 0u;
    words[2 * n + r] = rows[r].tag;
  }
}

void QueryRing::record_rows(vk::CommandRecorder& rec, const vk::Buffer& src, uint64_t src_words,
                            uint64_t section_words, uint32_t row_words, uint64_t first, uint32_t rows) const {
  const uint32_t at = ring_row(first);
  const uint32_t head = std::min(rows, layout_.capacity - at);  // rows before the wrap
  rec.copy(src, src_words * 4, buffer_, (section_words + uint64_t{at} * row_words) * 4, uint64_t{head} * row_words * 4);
  rec.copy(src, (src_words + uint64_t{head} * row_words) * 4, buffer_, section_words * 4,
           uint64_t{rows - head} * row_words * 4);
}

void QueryRing::record_meta(vk::CommandRecorder& rec, const vk::Buffer& upload, uint64_t upload_words, uint64_t first,
                            uint32_t rows) const {
  record_rows(rec, upload, upload_words, layout_.positions, 1, first, rows);
  record_rows(rec, upload, upload_words + rows, layout_.valid, 1, first, rows);
  record_rows(rec, upload, upload_words + 2ull * rows, layout_.tags, 1, first, rows);
}

}  // namespace attendre::gpu
