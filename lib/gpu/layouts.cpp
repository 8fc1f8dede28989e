#include "gpu/layouts.hpp"

#include "core/try.hpp"

#include <attendre/error.hpp>

#include <limits>

namespace attendre::gpu {

uint32_t SectionCursor::take(uint64_t count) {
  const uint64_t at = words;
  words = align_words(words + count);
  // Kernels index with 32-bit words; the range limit is checked by the owner.
  if (at > std::numeric_limits<uint32_t>::max()) overflow = true;
  return static_cast<uint32_t>(at);
}

uint32_t SectionCursor::count(uint64_t value) {
  if (value > std::numeric_limits<uint32_t>::max()) overflow = true;
  return static_cast<uint32_t>(value);
}

Status SectionCursor::status() const {
  if (overflow) return {ErrorCode::out_of_device_memory, "exceeds 2^32 words, past the kernels' 32-bit indices"};
  return {};
}

uint64_t stored_row(uint64_t elements, MemoryStorage storage) {
  return storage == MemoryStorage::f16 ? (elements + 1) / 2 * 2 : elements;
}

uint64_t stored_words(uint64_t elements, MemoryStorage storage) {
  return storage == MemoryStorage::f16 ? (elements + 1) / 2 : elements;
}

Result<KvLayout> KvLayout::make(uint32_t capacity, const AttentionShape& shape, uint32_t key_variants,
                        const RetrievalConfig& retrieval, MemoryStorage storage) {
  KvLayout l;
  l.capacity = capacity;
  l.kv_row = shape.kv_row();
  SectionCursor c;
  l.key_stride = c.count(stored_row(uint64_t{key_variants} * l.kv_row, storage));
  l.value_stride = c.count(stored_row(l.kv_row, storage));
  l.storage = storage;
  l.keys = c.take(stored_words(uint64_t{capacity} * l.key_stride, storage));
  l.values = c.take(stored_words(uint64_t{capacity} * l.value_stride, storage));
  l.positions = c.take(capacity);
  l.scores = c.take(capacity);
  l.tags = c.take(capacity);
  if (retrieval.bias == BiasKind::t5) {
    l.t5_buckets = c.take(2ull * retrieval.t5.max_distance + 1);
    l.t5_biases = c.take(uint64_t{retrieval.t5.num_buckets} * shape.heads_q);
  }
  l.words = c.words;
  ATTENDRE_TRY(c.status());
  return l;
}

Result<RingLayout> RingLayout::make(uint32_t capacity, const AttentionShape& shape, uint32_t residual_width,
                            uint32_t q_variants, MemoryStorage storage, uint32_t incoming_rows) {
  RingLayout l;
  l.capacity = capacity;
  l.q_row = shape.q_row();
  l.q_variants = q_variants;
  SectionCursor c;
  l.q_stride = c.count(stored_row(uint64_t{q_variants} * l.q_row, storage));
  l.storage = storage;
  l.residual_width = residual_width;
  l.queries = c.take(stored_words(uint64_t{capacity} * l.q_stride, storage));
  l.positions = c.take(capacity);
  l.valid = c.take(capacity);
  l.tags = c.take(capacity);
  l.residuals = c.take(uint64_t{capacity} * residual_width);
  if (l.half()) {
    l.incoming_rows = incoming_rows;
    l.incoming = c.take(uint64_t{incoming_rows} * l.incoming_stride());
  }
  l.words = c.words;
  ATTENDRE_TRY(c.status());
  return l;
}

Result<ChunkLayout> ChunkLayout::make(uint32_t rows, const AttentionShape& shape, uint32_t key_variants) {
  ChunkLayout l;
  l.rows = rows;
  l.kv_row = shape.kv_row();
  SectionCursor c;
  l.key_stride = c.count(uint64_t{key_variants} * l.kv_row);
  l.keys = c.take(uint64_t{rows} * l.key_stride);
  l.values = c.take(uint64_t{rows} * l.kv_row);
  l.positions = c.take(rows);
  l.valid = c.take(rows);
  l.tags = c.take(rows);
  l.init = c.take(1);
  l.placement = c.take(rows);
  l.words = c.words;
  ATTENDRE_TRY(c.status());
  return l;
}

Result<EvictedLayout> EvictedLayout::make(uint32_t rows, const AttentionShape& shape) {
  EvictedLayout l;
  l.rows = rows;
  l.kv_row = shape.kv_row();
  SectionCursor c;
  l.keys = c.take(uint64_t{rows} * l.kv_row);
  l.values = c.take(uint64_t{rows} * l.kv_row);
  l.positions = c.take(rows);
  l.scores = c.take(rows);
  l.words = c.words;
  ATTENDRE_TRY(c.status());
  return l;
}

}  // namespace attendre::gpu
