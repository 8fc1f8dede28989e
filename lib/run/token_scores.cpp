#include "run/token_scores.hpp"

#include <algorithm>
#include <cmath>

namespace attendre::scores {

double log_sum_exp(std::span<const float> row) {
  double top = row[0];
  for (const float x : row) top = std::max(top, static_cast<double>(x));
  double sum = 0.0;
  for (const float x : row) sum += std::exp(x - top);
  return top + std::log(sum);
}

uint32_t top_token(std::span<const float> row) {
  return static_cast<uint32_t>(std::max_element(row.begin(), row.end()) - row.begin());  // the first of equals
}

double kl_divergence(std::span<const float> base, double base_lse, std::span<const float> row, double row_lse) {
  double sum = 0.0;
  for (size_t v = 0; v < base.size(); ++v) {
    const double log_p_base = base[v] - base_lse;
    const double p_base = std::exp(log_p_base);
    if (p_base > 0.0) sum += p_base * (log_p_base - (row[v] - row_lse));
  }
  return sum;
}

KlDivergenceStats kl_statistics(std::vector<double> values, uint64_t same_top) {
  KlDivergenceStats s;
  s.count = values.size();
  if (values.empty()) return s;
  const auto n = static_cast<double>(values.size());
  double sum = 0.0, sum2 = 0.0;
  for (const double v : values) sum += v, sum2 += v * v;
  s.mean = sum / n;
  // llama-perplexity's uncertainty: the standard error, only past 10 values.
  const double variance = sum2 / n - s.mean * s.mean;
  s.mean_uncertainty = variance > 0.0 && values.size() > 10 ? std::sqrt(variance / (n - 1.0)) : 0.0;
  std::sort(values.begin(), values.end());
  const size_t half = values.size() / 2;
  s.median = values.size() % 2 == 0 ? 0.5 * (values[half - 1] + values[half]) : values[half];
  const auto percentile = [&values](double fraction) {
    const double at = fraction * static_cast<double>(values.size() - 1);
    const auto below = static_cast<size_t>(at);
    const double t = at - static_cast<double>(below);
    return (1.0 - t) * values[below] + t * values[std::min(below + 1, values.size() - 1)];
  };
  s.p90 = percentile(0.90);
  s.p95 = percentile(0.95);
  s.p99 = percentile(0.99);
  s.p99_9 = percentile(0.999);
  s.maximum = values.back();
  s.minimum = values.front();
  s.same_top_p = static_cast<double>(same_top) / n;
  return s;
}

}  // namespace attendre::scores
