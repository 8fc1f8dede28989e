// The Q memory on the device (spec section 1): a ring of query rows (and,
// in a transformer block, the residual rows that wait with them), with the
// FIFO bookkeeping kept on the host. Which rows are evicted depends only on
// counts, never on data, so the host always knows the evicted range and
// the GPU never has to report it.
#pragma once

#include "gpu/kv_recorder.hpp"
#include "gpu/layouts.hpp"
#include "kernels/rows.hpp"
#include "kernels/store_half.hpp"
#include "vulkan/buffer.hpp"
#include "vulkan/commands.hpp"

#include <attendre/data_only_memory.hpp>

#include <memory>
#include <span>
#include <vector>

namespace attendre::gpu {

struct QueryMeta {
  int64_t position = 0;
  bool valid = false;
  uint32_t tag = 0;
  uint64_t sequence = 0;  // ring row = sequence % ring capacity
};

// Valid flags and positions of rows entering a K/V memory, padded with
// invalid rows to the insertion's `count` rows (what KvRecorder plans with).
struct InsertionRows {
  std::vector<uint8_t> valid;
  std::vector<int64_t> positions;
};
InsertionRows insertion_rows(const std::vector<QueryMeta>& rows, uint32_t count);

class QueryRing {
 public:
  // Holds N = `capacity` waiting rows plus up to `max_insert` rows of one
  // insertion; `residual_width` floats per row ride along (0: none);
  // `q_variants` rotations of each query (RingLayout), stored in `storage`.
  // Fails (unsupported) past the device's storage-buffer range, or when
  // the ring's buffer or kernel cannot be made (nothing left behind).
  static Result<std::unique_ptr<QueryRing>> create(Context& context, const AttentionShape& shape, uint32_t capacity,
                                                   uint32_t max_insert, uint32_t residual_width = 0,
                                                   uint32_t q_variants = 1, MemoryStorage storage = MemoryStorage::f32);

  // Host side of insert(): appends rows (sequences assigned here) and
  // returns the evicted ones, oldest first.
  std::vector<QueryMeta> insert(std::vector<QueryMeta> rows);
  std::vector<QueryMeta> take_all() { return fifo_.take_all(); }
  // Rows that use the ring for one step only, bypassing the FIFO (decoding
  // needs no Q memory); fails (invalid_argument) while a valid query waits.
  Result<std::vector<QueryMeta>> pass_through(std::vector<QueryMeta> rows);
  bool has_pending() const;
  size_t size() const { return fifo_.size(); }
  uint64_t next_sequence() const { return next_sequence_; }

  // Ring row of the first of `rows` and the range they form for retrieval.
  uint32_t ring_row(uint64_t sequence) const { return static_cast<uint32_t>(sequence % layout_.capacity); }
  QueryRange range_of(const std::vector<QueryMeta>& rows) const;

  // Writes positions, valid flags and tags of `rows` into `words` (3 * rows
  // words: positions, then valid, then tags) for stage_meta's copy.
  static void pack_meta(const std::vector<QueryMeta>& rows, uint32_t* words);
  // Records copies of packed meta (at `upload_words` in `upload`) into the
  // ring rows starting at sequence `first`, wrapping around the ring.
  void record_meta(vk::CommandRecorder& rec, const vk::Buffer& upload, uint64_t upload_words, uint64_t first,
                   uint32_t rows) const;
  // Records a copy of `rows` contiguous rows of `row_words` words from
  // `src` into the section at `section_words`, starting at sequence `first`.
  void record_rows(vk::CommandRecorder& rec, const vk::Buffer& src, uint64_t src_words, uint64_t section_words,
                   uint32_t row_words, uint64_t first, uint32_t rows) const;

  // A chunk's queries (rows of q_variants * q_row floats) enter in two
  // steps: record_query_rows copies `rows` rows from `src` as row
  // `offset_row`.. of the step whose first sequence is `first` (into the
  // ring in fp32; into the fp32 incoming section in fp16), then, once every
  // row is in, record_store_queries stores the step's `rows` rows into the
  // fp16 ring (nothing to do in fp32).
  void record_query_rows(vk::CommandRecorder& rec, const vk::Buffer& src, uint64_t src_words, uint64_t first,
                         uint32_t offset_row, uint32_t rows) const;
  void record_store_queries(vk::CommandRecorder& rec, uint64_t first, uint32_t rows) const;
  // Where kernels write a step's queries in fp32 (projections, RoPE): the
  // incoming section in fp16, else the ring's queries; and row refs into it.
  vk::BufferBinding query_section() const;
  kernels::RowRef query_rows(uint32_t first_row, uint32_t variant) const;

  const vk::Buffer& buffer() const { return buffer_; }
  const RingLayout& layout() const { return layout_; }

 private:
  QueryRing(const RingLayout& layout, uint32_t capacity) : layout_(layout), fifo_(capacity) {}

  RingLayout layout_;
  vk::Buffer buffer_;
  std::unique_ptr<vk::DescriptorArena> arena_;  // fp16 only
  kernels::StoreHalfRows store_;
  DataOnlyMemory<QueryMeta> fifo_;
  uint64_t next_sequence_ = 0;
};

}  // namespace attendre::gpu
