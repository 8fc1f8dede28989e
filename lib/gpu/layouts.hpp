// Where each array lives inside the buffers of the GPU memories, in 32-bit
// words. Sections start on 256-byte boundaries, so any of them can be bound
// on its own on every device: the Vulkan spec caps
// minStorageBufferOffsetAlignment at 256 bytes (Context refuses a device
// that reports more, DeviceCaps::storage_alignment), so one constant serves
// them all and layouts never depend on the device.
#pragma once

#include <attendre/config.hpp>
#include <attendre/context.hpp>
#include <attendre/gpu_stack.hpp>
#include <attendre/status.hpp>

#include <cstdint>
#include <utility>

namespace attendre::gpu {

inline constexpr uint64_t kSectionWords = 64;  // 256 bytes
static_assert(kSectionWords * 4 == DeviceCaps{}.storage_alignment, "sections start at the largest alignment a device may ask");

inline uint64_t align_words(uint64_t words) { return (words + kSectionWords - 1) / kSectionWords * kSectionWords; }

// Appends sections one after the other. Kernels index with 32-bit words:
// a section starting past that is remembered, and status() fails
// (out_of_device_memory) for the whole layout.
struct SectionCursor {
  uint64_t words = 0;
  bool overflow = false;
  uint32_t take(uint64_t count);
  // `value` (a row stride, in elements) as the 32 bits kernels index with;
  // past them, remembered as take() remembers a section.
  uint32_t count(uint64_t value);
  Status status() const;
};

// What makes each memory's buffer smaller, for the messages that refuse it
// (PlannedBuffer::remedy).
inline constexpr const char* kQueryRingRemedy = "lower N (q_capacity) or the chunk S, or use fp16 memories";
inline constexpr const char* kKvMemoryRemedy = "lower M (kv_capacity), heads_kv or head_dim, or use fp16 memories";
inline constexpr const char* kKvChunkRemedy = "lower the chunk S, heads_kv or head_dim";

// `made`, or its failure (a layout past 2^32 words) as `buffer`'s: named,
// with what makes it smaller.
inline Status layout_of(Status made, const PlannedBuffer& buffer) {
  return made.ok() ? std::move(made) : buffer.refused(made.code(), made.message());
}
template <class Layout>
Result<Layout> layout_of(Result<Layout> made, const PlannedBuffer& buffer) {
  if (made.ok()) return made;
  return layout_of(std::move(made).status(), buffer);
}

// Elements per stored row of `elements` values: fp16 rows are padded to an
// even count, so that every row starts on a 32-bit word (shaders/stored.glsl).
uint64_t stored_row(uint64_t elements, MemoryStorage storage);
// 32-bit words of `elements` values stored in `storage`.
uint64_t stored_words(uint64_t elements, MemoryStorage storage);

// K/V memory: keys [M][key_variants][heads_kv][head_dim] (LM-Infinite keeps
// each key rotated by its position, then un-rotated: interface/score.h) and
// values [M][heads_kv][head_dim], in fp32 or fp16 (`storage`), then per slot
// its position (int32), policy score (float or int32 bits) and tag; then,
// with a T5 bias, the bucket of each relative position -R..R (R =
// max_distance) and the [bucket][heads_q] bias table.
struct KvLayout {
  uint32_t capacity = 0, kv_row = 0;
  // Elements per slot as stored: key_variants * kv_row and kv_row, each
  // padded to an even count in fp16.
  uint32_t key_stride = 0, value_stride = 0;
  MemoryStorage storage = MemoryStorage::f32;
  uint32_t keys = 0, values = 0, positions = 0, scores = 0, tags = 0;
  uint32_t t5_buckets = 0, t5_biases = 0;
  uint64_t words = 0;
  // Fails (out_of_device_memory) past 2^32 words.
  static Result<KvLayout> make(uint32_t capacity, const AttentionShape& shape, uint32_t key_variants = 1,
                       const RetrievalConfig& retrieval = {}, MemoryStorage storage = MemoryStorage::f32);
};

// Q memory ring of `capacity` rows: q [row][q_variants][heads_q][head_dim]
// (LM-Infinite keeps three rotations of each query) in fp32 or fp16, then
// per row position, valid flag and tag, then optional residual rows that
// wait with their queries in a transformer block. An fp16 ring adds an fp32
// section of `incoming_rows` rows where a chunk's queries land (uploaded, or
// projected and rotated) before store_half_rows stores them into the ring.
struct RingLayout {
  uint32_t capacity = 0, q_row = 0, q_variants = 1, residual_width = 0;
  uint32_t q_stride = 0;  // elements per ring row as stored: q_variants * q_row, even in fp16
  MemoryStorage storage = MemoryStorage::f32;
  uint32_t queries = 0, positions = 0, valid = 0, tags = 0, residuals = 0;
  uint32_t incoming = 0, incoming_rows = 0;  // fp16 only: rows of q_variants * q_row floats
  uint64_t words = 0;
  // Fails (out_of_device_memory) past 2^32 words.
  static Result<RingLayout> make(uint32_t capacity, const AttentionShape& shape, uint32_t residual_width = 0,
                         uint32_t q_variants = 1, MemoryStorage storage = MemoryStorage::f32,
                         uint32_t incoming_rows = 0);
  bool half() const { return storage == MemoryStorage::f16; }
  uint32_t incoming_stride() const { return q_variants * q_row; }
};

// One chunk of new K/V rows as inserted this step (keys in their variants
// as the memory holds them), the initial score word and the slot planned
// for each row.
struct ChunkLayout {
  uint32_t rows = 0, kv_row = 0, key_stride = 0;
  uint32_t keys = 0, values = 0, positions = 0, valid = 0, tags = 0, init = 0, placement = 0;
  uint64_t words = 0;
  // Fails (out_of_device_memory) past 2^32 words.
  static Result<ChunkLayout> make(uint32_t rows, const AttentionShape& shape, uint32_t key_variants = 1);
};

// Evicted entries copied out: keys, values [E][kv_row], positions, scores.
struct EvictedLayout {
  uint32_t rows = 0, kv_row = 0;
  uint32_t keys = 0, values = 0, positions = 0, scores = 0;
  uint64_t words = 0;
  // Fails (out_of_device_memory) past 2^32 words.
  static Result<EvictedLayout> make(uint32_t rows, const AttentionShape& shape);
};

}  // namespace attendre::gpu
