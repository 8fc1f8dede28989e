// What gpu::Layer::record, gpu::Stack::record and gpu::KeyValueMemory's
// record_* share (docs/architecture.md, "Recording into an application's
// command buffer"): checks of the application's buffer ranges, runs of
// valid rows (the only rows read from or written to its buffers), and the
// recorded steps' barriers and finite checks, read at the object's next
// wait (gpu::StepExecutor's: the layer's, the stack's and the K/V memory's).
#pragma once

#include "gpu/finite_checks.hpp"
#include "gpu/kv_recorder.hpp"
#include "gpu/query_ring.hpp"
#include "vulkan/buffer.hpp"
#include "vulkan/commands.hpp"
#include "vulkan/context_state.hpp"
#include "core/try.hpp"

#include <attendre/embedding.hpp>

#include <algorithm>
#include <string>
#include <vector>

namespace attendre::gpu {

inline Status check_range(const BufferRange& range, uint64_t bytes, const char* what) {
  ATTENDRE_REQUIRE(range.buffer != VK_NULL_HANDLE, std::string("record: the ") + what + " range has no buffer");
  ATTENDRE_REQUIRE(range.offset % 4 == 0, std::string("record: the ") + what + " range's offset is not a multiple of 4");
  ATTENDRE_REQUIRE(range.size >= bytes, std::string("record: the ") + what + " range holds " +
                                            std::to_string(range.size) + " bytes, needs " + std::to_string(bytes));
  return {};
}

// Calls f(begin, end) for each run of consecutive valid rows.
template <class F>
void for_valid_runs(const std::vector<QueryMeta>& rows, F f) {
  for (uint32_t r = 0; r < rows.size();) {
    if (!rows[r].valid) {
      ++r;
      continue;
    }
    uint32_t end = r;
    while (end < rows.size() && rows[end].valid) ++end;
    f(r, end);
    r = end;
  }
}

// Calls f(begin, end, written) for each run of consecutive valid rows, with
// the valid rows before it (where the run lands when packed).
template <class F>
void for_valid_runs_packed(const std::vector<QueryMeta>& rows, F f) {
  uint64_t written = 0;
  for_valid_runs(rows, [&](uint32_t begin, uint32_t end) {
    f(begin, end, written);
    written += end - begin;
  });
}

// The application's range as a buffer the recorder tracks (never destroyed).
inline vk::Buffer borrow(const BufferRange& range, const char* what) {
  return vk::Buffer::borrow(range.buffer, range.offset + range.size, what);
}

// Copies the valid rows among `rows` (row i at src_offset + i * row_bytes)
// packed, in order, to dst from dst_offset: an application's outputs.
inline void copy_valid_rows_packed(vk::CommandRecorder& rec, const vk::Buffer& src, uint64_t src_offset,
                                   uint64_t row_bytes, const std::vector<QueryMeta>& rows, const vk::Buffer& dst,
                                   uint64_t dst_offset) {
  for_valid_runs_packed(rows, [&](uint32_t begin, uint32_t end, uint64_t written) {
    rec.copy(src, src_offset + begin * row_bytes, dst, dst_offset + written * row_bytes, (end - begin) * row_bytes);
  });
}

// Copies the valid rows among `rows` from src to the same row indices of
// dst: an application's inputs (its padding rows are never read).
inline void copy_valid_rows(vk::CommandRecorder& rec, const vk::Buffer& src, uint64_t src_offset, const vk::Buffer& dst,
                            uint64_t dst_offset, uint64_t row_bytes, const std::vector<QueryMeta>& rows) {
  for_valid_runs(rows, [&](uint32_t begin, uint32_t end) {
    rec.copy(src, src_offset + begin * row_bytes, dst, dst_offset + begin * row_bytes, (end - begin) * row_bytes);
  });
}

// The valid rows' queries from the application's `q` range (rows * q_row
// floats) as rows of the step whose first sequence is `first` (the ring's
// record_query_rows: the caller then records record_store_queries). The
// ring keeps one variant of each query (the caller checked).
inline void record_queries_from(vk::CommandRecorder& rec, const QueryRing& ring, const BufferRange& q,
                                const std::vector<QueryMeta>& rows, uint64_t first) {
  const vk::Buffer src = borrow(q, "application q");
  const uint32_t q_row = ring.layout().q_row;
  for_valid_runs(rows, [&](uint32_t begin, uint32_t end) {
    ring.record_query_rows(rec, src, q.offset / 4 + uint64_t{begin} * q_row, first, begin, end - begin);
  });
}

// The valid rows' keys and values from the application's ranges (rows *
// kv_row floats each) over the zeros the chunk image left for them in the
// K/V memory's chunk buffer. The memory keeps one variant of each key (the
// caller checked).
inline void record_keys_values_from(vk::CommandRecorder& rec, const KvRecorder& kv, const BufferRange& k,
                                    const BufferRange& v, const std::vector<QueryMeta>& rows) {
  const ChunkLayout& l = kv.chunk_layout();
  const uint64_t row_bytes = uint64_t{l.kv_row} * 4;
  copy_valid_rows(rec, borrow(k, "application k"), k.offset, kv.chunk_buffer(), uint64_t{l.keys} * 4, row_bytes, rows);
  copy_valid_rows(rec, borrow(v, "application v"), v.offset, kv.chunk_buffer(), uint64_t{l.values} * 4, row_bytes, rows);
}

// The chunk with zeros in place of the q, k and v rows the application's
// buffers give (`device`): what is packed into the uploaded image, which
// the device copies then overwrite. `zeros` holds them.
inline ChunkView without_device_rows(const ChunkView& chunk, bool device, uint32_t q_row, uint32_t kv_row,
                                     std::vector<float>& zeros) {
  if (!device) return chunk;
  ChunkView packed = chunk;
  zeros.assign(uint64_t{chunk.rows} * std::max(q_row, kv_row), 0.0f);
  packed.q = {zeros.data(), uint64_t{chunk.rows} * q_row};
  packed.k = packed.v = {zeros.data(), uint64_t{chunk.rows} * kv_row};
  return packed;
}

// Steps recorded into applications' command buffers whose finite checks are
// still to be read, and the host-visible buffers they wrote.
class RecordedSteps {
 public:
  // A recorder for a step into the application's `cb`: the flags of
  // `checks`' `slot` selected (recorded steps set those, never a submitted
  // step's), the acquire barrier recorded.
  static vk::CommandRecorder begin(Context& context, VkCommandBuffer cb, FiniteChecks& checks, uint32_t slot) {
    checks.use_slot(slot);
    vk::CommandRecorder rec(cb, vk::state_of(context).debug_label);
    rec.acquire();
    return rec;
  }
  // After the commands of the owner's step (or call) number `step`: the
  // release barrier for `consumer`; the step's checks are read at the next wait.
  void end(vk::CommandRecorder& rec, const Consumer& consumer, uint64_t step) {
    rec.release(consumer.stages, consumer.access);
    for (const vk::Buffer* b : rec.host_writes())
      if (std::find(host_writes_.begin(), host_writes_.end(), b) == host_writes_.end()) host_writes_.push_back(b);
    if (!unverified_) first_step_ = step;
    unverified_ = true;
  }
  // Whether recorded steps wait to be verified, and the first of them: a
  // wait reports them in their place among the owner's submitted steps.
  bool unverified() const { return unverified_; }
  uint64_t first_step() const { return first_step_; }
  // The application submitted the recorded steps to the context's queue
  // (record()'s contract): an empty submission of `own` after them signals
  // its fence only once they completed, so only our own fence is waited on.
  // Then their non-finite values (the flags of `checks`' `slot`, which
  // recorded steps set) are reported as `what`. A failed wait leaves them
  // unverified, for the next wait.
  Status wait(vk::Submission& own, const FiniteChecks& checks, uint32_t slot, const std::string& what) {
    if (!unverified_) return {};
    ATTENDRE_TRY(own.begin());
    ATTENDRE_TRY(own.submit());
    ATTENDRE_TRY(own.wait());
    for (const vk::Buffer* b : host_writes_) ATTENDRE_TRY(b->invalidate());
    unverified_ = false;
    return checks.verify(what, slot);
  }

 private:
  bool unverified_ = false;
  uint64_t first_step_ = 0;
  std::vector<const vk::Buffer*> host_writes_;
};

}  // namespace attendre::gpu
