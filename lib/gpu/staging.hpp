// Host images of what one step uploads, shared by the layer and the
// standalone K/V memory: the chunk's keys and values as the chunk buffer
// lays them out, its queries as ring rows, and their metadata.
#pragma once

#include "gpu/layouts.hpp"
#include "gpu/query_ring.hpp"

#include <attendre/layer.hpp>
#include <attendre/status.hpp>

#include <vector>

namespace attendre::gpu {

// The first `rows` rows of `chunk` as Q ring rows (rows past chunk.rows are padding).
std::vector<QueryMeta> query_metas(const ChunkView& chunk, uint32_t rows);

// Keys, values, positions, valid flags and tags of the chunk's valid rows
// into `words` at the chunk layout's offsets (the sections before `init`,
// zeroed first).
void pack_kv_rows(const ChunkView& chunk, const ChunkLayout& layout, uint32_t* words);

// The valid rows' queries into `rows` rows of q_row floats (zeros elsewhere).
void pack_query_rows(const ChunkView& chunk, uint32_t q_row, uint32_t rows, float* out);

// Appends the rows of `rows` (row_floats each, one per meta) whose meta is
// valid: what a step read back, reduced to what it emits.
void append_valid_rows(const float* rows, const std::vector<QueryMeta>& metas, uint32_t row_floats,
                       std::vector<float>& out);

// Fails (invalid_argument) when a valid row's position does not fit the
// device's int32 positions.
Status check_int32_positions(const ChunkView& chunk);

}  // namespace attendre::gpu
