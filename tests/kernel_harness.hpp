// Small helpers for the kernel unit tests (test_select.cpp,
// test_compaction.cpp): device-local buffers filled from host words through
// a staging copy, read back through a readback buffer, and one-shot
// submissions. Buffers hold uint32 words; floats travel as their bits.
#pragma once

#include "vulkan/buffer.hpp"
#include "vulkan/commands.hpp"

#include <attendre/context.hpp>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace attendre::test {

inline uint32_t float_bits(float f) { return std::bit_cast<uint32_t>(f); }
inline float bits_float(uint32_t u) { return std::bit_cast<float>(u); }

// The shaders' sort keys (shaders/common.glsl), computed on the host.
inline uint32_t ordered_float(float f) {
  const uint32_t u = float_bits(f == 0.0f ? 0.0f : f);
  return (u & 0x80000000u) != 0u ? ~u : (u | 0x80000000u);
}
inline uint32_t ordered_int(int32_t i) { return static_cast<uint32_t>(i) ^ 0x80000000u; }

// Records `record(recorder)` into a fresh command buffer, submits it and waits.
template <class Record>
void run_once(Context& context, Record&& record) {
  vk::Submission submission = vk::Submission::create(context).value_or_throw();
  vk::CommandRecorder& recorder = *submission.begin().value_or_throw();
  record(recorder);
  submission.submit().or_throw();
  submission.wait().or_throw();
}

// A device-local buffer of `words` words, filled with `fill` (a vkCmdFillBuffer).
inline vk::Buffer device_words(Context& context, uint64_t words, uint32_t fill, const char* label) {
  vk::Buffer buffer = vk::Buffer::create(context, words * 4, vk::MemoryIntent::device, label).value_or_throw();
  run_once(context, [&](vk::CommandRecorder& rec) { rec.fill(buffer, 0, buffer.size(), fill); });
  return buffer;
}

// A device-local buffer holding `words`, uploaded through a staging buffer.
inline vk::Buffer upload_words(Context& context, std::span<const uint32_t> words, const char* label) {
  vk::Buffer staging =
      vk::Buffer::create(context, words.size_bytes(), vk::MemoryIntent::upload, "test staging").value_or_throw();
  if (!words.empty()) std::memcpy(staging.mapped(), words.data(), words.size_bytes());
  vk::Buffer buffer = vk::Buffer::create(context, words.size_bytes(), vk::MemoryIntent::device, label).value_or_throw();
  run_once(context, [&](vk::CommandRecorder& rec) { rec.copy(staging, 0, buffer, 0, words.size_bytes()); });
  return buffer;
}

// Words [first, first + count) of a buffer, through a readback buffer.
inline std::vector<uint32_t> download_words(Context& context, const vk::Buffer& buffer, uint64_t first,
                                            uint64_t count) {
  std::vector<uint32_t> words(count);
  if (count == 0) return words;
  vk::Buffer readback =
      vk::Buffer::create(context, count * 4, vk::MemoryIntent::readback, "test readback").value_or_throw();
  run_once(context, [&](vk::CommandRecorder& rec) { rec.copy(buffer, first * 4, readback, 0, count * 4); });
  std::memcpy(words.data(), readback.mapped(), count * 4);
  return words;
}

// One entry of a select list: (key, tie, payload), as the kernels write it.
struct ListEntry {
  uint32_t key = 0xFFFFFFFFu, tie = 0xFFFFFFFFu, payload = 0xFFFFFFFFu;
  bool operator==(const ListEntry&) const = default;
};

// Tile 0 of `row` in a downloaded list buffer [row][tile][keep] x 3 words.
inline std::vector<ListEntry> list_row(std::span<const uint32_t> lists, uint32_t row, uint32_t tiles, uint32_t keep) {
  std::vector<ListEntry> out(keep);
  const uint64_t base = (uint64_t{row} * tiles) * keep * 3;
  for (uint32_t i = 0; i < keep; ++i) out[i] = {lists[base + 3 * i], lists[base + 3 * i + 1], lists[base + 3 * i + 2]};
  return out;
}

// The eviction candidates of select_tile's SOURCE_EVICT variant, modelled on
// the host: held slots (score bits, position) and chunk rows (valid, position).
struct EvictInputs {
  std::vector<int32_t> held_positions;
  std::vector<uint32_t> held_scores;  // int32 or float bits
  std::vector<int32_t> row_positions;
  std::vector<uint8_t> row_valid;
  uint32_t new_rows = 0;  // leading chunk rows that compete (0: protect_new)
  uint32_t n_sink = 0;
  uint32_t policy = 0;  // kPolicy*
  bool int_scores = true;
  uint32_t init_bits = 0;  // the chunk's initial-score word (attention policies)

  // The score a new row starts with (shaders/new_entry.glsl, spec 2.4).
  uint32_t initial_score_bits(int32_t position) const {
    if (policy == 0u || policy == 1u) return static_cast<uint32_t>(position);  // fifo, lru
    if (policy == 2u) return 0u;                                               // lfu
    return init_bits;
  }
};

// The `keep` smallest eligible (score, position) candidates, ascending, as
// list entries (padded with empty entries), by std::partial_sort. Scores
// compare natively (int32, or float with -0 == +0); `reversed_ties` breaks
// score ties by the larger position instead (a deliberately wrong order).
inline std::vector<ListEntry> expected_victims(const EvictInputs& in, uint32_t keep, bool reversed_ties = false) {
  struct Candidate {
    uint32_t score_bits;
    int32_t position;
    uint32_t payload;
  };
  std::vector<Candidate> c;
  for (uint32_t i = 0; i < in.held_positions.size(); ++i)
    if (in.held_positions[i] >= static_cast<int32_t>(in.n_sink)) c.push_back({in.held_scores[i], in.held_positions[i], i});
  for (uint32_t r = 0; r < in.new_rows; ++r)
    if (in.row_valid[r] && in.row_positions[r] >= static_cast<int32_t>(in.n_sink))
      c.push_back({in.initial_score_bits(in.row_positions[r]), in.row_positions[r], 0x80000000u | r});
  auto less_score = [&](uint32_t a, uint32_t b) {
    if (in.int_scores) return static_cast<int32_t>(a) < static_cast<int32_t>(b);
    return bits_float(a) < bits_float(b);
  };
  auto before = [&](const Candidate& a, const Candidate& b) {
    if (less_score(a.score_bits, b.score_bits)) return true;
    if (less_score(b.score_bits, a.score_bits)) return false;
    return reversed_ties ? a.position > b.position : a.position < b.position;
  };
  const size_t n = std::min<size_t>(keep, c.size());
  std::partial_sort(c.begin(), c.begin() + static_cast<std::ptrdiff_t>(n), c.end(), before);
  std::vector<ListEntry> out(keep);
  for (size_t i = 0; i < n; ++i) {
    const uint32_t key = in.int_scores ? ordered_int(static_cast<int32_t>(c[i].score_bits))
                                       : ordered_float(bits_float(c[i].score_bits));
    out[i] = {key, ordered_int(c[i].position), c[i].payload};
  }
  return out;
}

}  // namespace attendre::test
