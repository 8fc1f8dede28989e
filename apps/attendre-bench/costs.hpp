// The cost model: bytes and flops each kernel's job needs at least, from
// its shape alone, all in one place. It counts what the job must move and
// compute (each key read once, each output written once), not what an
// implementation happens to do, so efficiency = max(bytes / copy bandwidth,
// flops / FMA peak) / measured time reads as "the share of the device's
// limit this kernel reaches". SCHEMA.md restates every formula.
#pragma once

#include "results.hpp"

#include <attendre/config.hpp>

#include <cstdint>

namespace bench {

struct Cost {
  double bytes = 0.0, flops = 0.0;
};

// One layer step at its steady state: S queries leave the Q memory and
// retrieve from a full K/V memory of M entries; S entries are evicted and
// S inserted.
struct LayerShape {
  uint32_t M = 0, K = 0, D = 0, S = 0, heads_q = 0, heads_kv = 0, N = 0;
  uint32_t retrieved() const { return K < M ? K : M; }  // K >= M is full attention
  Shape shape() const;
};

Cost score_cost(const LayerShape& s);
Cost topk_cost(const LayerShape& s);
Cost attend_cost(const LayerShape& s);
Cost flash_attend_cost(const LayerShape& s);
Cost policy_cost(const LayerShape& s);
Cost evict_select_cost(const LayerShape& s);
Cost compact_cost(const LayerShape& s, bool attention_scored);

// Transformer block kernels; weight_bytes is per value: 4 (f32), 2 (f16,
// bf16), block bytes / block values for the GGUF block types.
Cost matmul_cost(uint64_t rows, uint64_t in, uint64_t out, double weight_bytes, bool residual);
Cost norm_cost(uint64_t rows, uint64_t cols);
Cost rope_cost(uint64_t rows, uint64_t heads, uint64_t head_dim);
Cost activation_cost(uint64_t rows, uint64_t ffn, bool gated);
Cost embedding_cost(uint64_t rows, uint64_t hidden, uint32_t weight_bytes);
Cost add_cost(uint64_t rows, uint64_t cols);

// Fills gbps, gflops, efficiency and bound of `k` from its bytes, flops and
// median_ms (and weight_gbps, copy_fraction from weight_bytes when set).
void rate(KernelResult& k, const Limits& limits);

}  // namespace bench
