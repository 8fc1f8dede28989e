// Scoring rows of logits in float64, shared by the perplexity runs: the
// log-sum-exp a token's negative log-likelihood needs, the most likely
// token, one token's KL divergence and llama-perplexity's statistics over
// many (attendre/perplexity.hpp, KlDivergenceStats).
#pragma once

#include <attendre/perplexity.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace attendre::scores {

// log(sum_v exp(row[v])), shifted by the row's largest logit.
double log_sum_exp(std::span<const float> row);

// The id of the largest logit, the smallest on ties (llama-perplexity's
// "top p" token).
uint32_t top_token(std::span<const float> row);

// KL(base || row) = sum_v p_base(v) (log p_base(v) - log p_row(v)), each
// row given with its log_sum_exp().
double kl_divergence(std::span<const float> base, double base_lse, std::span<const float> row, double row_lse);

// Mean (with its standard error), median, percentiles, extremes of the
// per-token values, and the share `same_top` of them.
KlDivergenceStats kl_statistics(std::vector<double> values, uint64_t same_top);

}  // namespace attendre::scores
