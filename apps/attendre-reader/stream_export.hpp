// --export-stream: block 0's queries, keys and values for every token, as
// the replay tool reads them (spec section 6: q.npy, k.npy, v.npy, float32
// [T, heads, head_dim], positions 0..T-1, all valid), so that
// `attendre-replay --device cpu` can replay the reader's first block with
// the same S, N, M, K and policy and be compared with it.
#pragma once

#include "backend.hpp"
#include "document.hpp"

#include <attendre/config.hpp>

#include <filesystem>

namespace reader {

// Writes the three files into `folder`, replacing them together (apps::OutputSet).
void export_first_block(const Backend& backend, Document& document, int64_t tokens,
                        const attendre::AttentionShape& shape, const std::filesystem::path& folder);

}  // namespace reader
