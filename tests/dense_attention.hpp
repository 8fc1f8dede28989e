// Plain softmax attention in double precision, written independently of the
// library, for the spec's invariants and the named equivalences.
#pragma once

#include "support.hpp"

#include <cmath>
#include <vector>

namespace attendre::test {

// o[h][d] for query row `query` of `stream` attending to rows `keys` (all
// heads), with scale 1/sqrt(D). Also returns the head-mean weight of each key.
inline std::vector<double> dense_attention(const Stream& s, uint32_t query, const std::vector<uint32_t>& keys,
                                           std::vector<double>* mean_weight = nullptr) {
  const AttentionShape& shape = s.shape;
  const uint32_t D = shape.head_dim;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  std::vector<double> out(shape.q_row(), 0.0);
  if (mean_weight) mean_weight->assign(keys.size(), 0.0);
  for (uint32_t h = 0; h < shape.heads_q; ++h) {
    const uint32_t g = h / shape.group();
    std::vector<double> logit(keys.size());
    double top = -INFINITY;
    for (size_t i = 0; i < keys.size(); ++i) {
      double dot = 0.0;
      for (uint32_t d = 0; d < D; ++d)
        dot += double(s.q[(uint64_t{query} * shape.heads_q + h) * D + d]) *
               double(s.k[(uint64_t{keys[i]} * shape.heads_kv + g) * D + d]);
      logit[i] = scale * dot;
      top = std::max(top, logit[i]);
    }
    double total = 0.0;
    for (double& l : logit) total += (l = std::exp(l - top));
    for (size_t i = 0; i < keys.size(); ++i) {
      const double w = logit[i] / total;
      if (mean_weight) (*mean_weight)[i] += w / shape.heads_q;
      for (uint32_t d = 0; d < D; ++d) out[h * D + d] += w * double(s.v[(uint64_t{keys[i]} * shape.heads_kv + g) * D + d]);
    }
  }
  return out;
}

}  // namespace attendre::test
