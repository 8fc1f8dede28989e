#include "gpu/staging.hpp"

#include "core/numerics.hpp"

#include <attendre/error.hpp>

#include <algorithm>
#include <cstring>
#include <limits>

namespace attendre::gpu {
namespace {

bool is_valid(const ChunkView& chunk, uint32_t r) { return chunk.valid.empty() || chunk.valid[r] != 0; }

// Copies `count` inputs as every backend reads them (subnormals as zero).
void copy_inputs(const float* from, uint64_t count, float* to) {
  std::transform(from, from + count, to, numerics::flush_subnormal);
}

}  // namespace

std::vector<QueryMeta> query_metas(const ChunkView& chunk, uint32_t rows) {
  std::vector<QueryMeta> metas(rows);
  for (uint32_t r = 0; r < std::min(rows, chunk.rows); ++r) {
    metas[r].valid = is_valid(chunk, r);
    metas[r].position = metas[r].valid ? chunk.positions[r] : 0;
    metas[r].tag = chunk.tags.empty() ? 0u : chunk.tags[r];
  }
  return metas;
}

void pack_kv_rows(const ChunkView& chunk, const ChunkLayout& l, uint32_t* words) {
  std::memset(words, 0, uint64_t{l.init} * 4);  // padding rows: zeros, invalid
  auto* floats = reinterpret_cast<float*>(words);
  const uint64_t kv_row = l.kv_row;
  for (uint32_t r = 0; r < chunk.rows; ++r) {
    if (!is_valid(chunk, r)) continue;
    copy_inputs(chunk.k.data() + r * kv_row, kv_row, floats + l.keys + r * uint64_t{l.key_stride});
    copy_inputs(chunk.v.data() + r * kv_row, kv_row, floats + l.values + r * kv_row);
    words[l.positions + r] = static_cast<uint32_t>(static_cast<int32_t>(chunk.positions[r]));
    words[l.valid + r] = 1u;
    words[l.tags + r] = chunk.tags.empty() ? 0u : chunk.tags[r];
  }
}

void pack_query_rows(const ChunkView& chunk, uint32_t q_row, uint32_t rows, float* out) {
  std::fill_n(out, uint64_t{rows} * q_row, 0.0f);
  for (uint32_t r = 0; r < std::min(rows, chunk.rows); ++r)
    if (is_valid(chunk, r)) copy_inputs(chunk.q.data() + uint64_t{r} * q_row, q_row, out + uint64_t{r} * q_row);
}

void append_valid_rows(const float* rows, const std::vector<QueryMeta>& metas, uint32_t row_floats,
                       std::vector<float>& out) {
  for (size_t i = 0; i < metas.size(); ++i)
    if (metas[i].valid) out.insert(out.end(), rows + i * row_floats, rows + (i + 1) * row_floats);
}

Status check_int32_positions(const ChunkView& chunk) {
  for (uint32_t r = 0; r < chunk.rows; ++r) {
    if (!is_valid(chunk, r)) continue;
    const int64_t p = chunk.positions[r];
    if (p < std::numeric_limits<int32_t>::min() || p > std::numeric_limits<int32_t>::max())
      return invalid_argument("position " + std::to_string(p) + " does not fit the GPU path's int32 positions");
  }
  return {};
}

}  // namespace attendre::gpu
