#include "yardstick.hpp"

#include "core/fail.hpp"

#include <algorithm>

namespace reader {

Yardstick::Yardstick(const Backend& backend, Document& document, const Schedule& schedule,
                     const attendre::AttentionShape& shape, double scale)
    : full_(shape, scale) {
  // Candidates: every query retrieving at a sampled input step; then every
  // k-th of them, so that candidates x keys stays within the budget.
  std::vector<int64_t> candidates;
  for (int64_t p = 0; p < schedule.tokens; ++p) {
    const uint64_t step = schedule.retrieval_step(p);
    if (step < schedule.input_steps() && schedule.sampled(step)) candidates.push_back(p);
  }
  const uint64_t most = std::max<uint64_t>(1, kMaxPairs / static_cast<uint64_t>(schedule.tokens));
  const uint64_t every = (candidates.size() + most - 1) / most;
  std::vector<int64_t> chosen;
  for (size_t i = 0; i < candidates.size(); i += std::max<uint64_t>(every, 1)) chosen.push_back(candidates[i]);

  std::unique_ptr<TokenStream> tokenizer = backend.make_token_stream();
  std::vector<float> q(shape.q_row()), k(shape.kv_row()), v(shape.kv_row());
  size_t next = 0;
  document.walk(*tokenizer, [&](const TokenView& t) {
    if (next == chosen.size() || t.position != chosen[next]) return;
    backend.first_block_qkv(t.token, q, k, v);
    const uint64_t step = schedule.retrieval_step(t.position);
    full_.add_query(t.position, q, schedule.horizon(step));
    by_step_[step].push_back(t.position);
    ++next;
  });
  document.walk(*tokenizer, [&](const TokenView& t) {
    backend.first_block_qkv(t.token, q, k, v);
    full_.add_key(t.position, k);
  });
}

std::span<const int64_t> Yardstick::queries_at(uint64_t step) const {
  const auto it = by_step_.find(step);
  return it == by_step_.end() ? std::span<const int64_t>() : std::span<const int64_t>(it->second);
}

void KeyWindow::add(const Backend& backend, const Token& token, int64_t position) {
  std::vector<float>& k = keys_[position];
  k.resize(shape_.kv_row());
  q_.resize(shape_.q_row());
  v_.resize(shape_.kv_row());
  backend.first_block_qkv(token, q_, k, v_);
}

void KeyWindow::keep_only(std::span<const int64_t> held) {
  for (auto it = keys_.begin(); it != keys_.end();)
    it = std::binary_search(held.begin(), held.end(), it->first) ? std::next(it) : keys_.erase(it);
}

std::span<const float> KeyWindow::key(int64_t position) const {
  const auto it = keys_.find(position);
  attendre::require(it != keys_.end(), "KeyWindow: no key kept for position " + std::to_string(position));
  return it->second;
}

}  // namespace reader
