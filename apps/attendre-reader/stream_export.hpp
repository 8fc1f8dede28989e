// --export-stream: block 0's queries, keys and values for every token, as
// the replay tool reads them (spec section 6: q.npy, k.npy, v.npy, float32
// [T, heads, head_dim], positions 0..T-1, all valid), so that
// `attendre-replay --device cpu` can replay the reader's first block with
// the same S, N, M, K and policy and be compared with it.
#pragma once

#include "backend.hpp"
#include "document.hpp"

#include "common/output_set.hpp"

#include <attendre/config.hpp>

#include <array>
#include <string>

namespace reader {

// The files of the folder, which the reader stages before any work
// (an attendre::apps::OutputSet of these names), so that a folder that
// cannot be made fails at once, not after the whole read.
inline const std::array<std::string, 3> kStreamFiles = {"q.npy", "k.npy", "v.npy"};

// Writes the three files into `out`'s staging folder and commits them together.
void export_first_block(const Backend& backend, Document& document, int64_t tokens,
                        const attendre::AttentionShape& shape, attendre::apps::OutputSet& out);

}  // namespace reader
