// Float64 reference of one ATTENDRE layer step (spec section 3).
#include "core/half.hpp"
#include "core/numerics.hpp"
#include "core/positions.hpp"
#include "core/fail.hpp"
#include "core/stream_validator.hpp"

#include <attendre/error.hpp>
#include <attendre/reference/layer.hpp>

#include <algorithm>

namespace attendre::reference {

Layer::Layer(const LayerConfig& config)
    : config_((config.check().or_throw(), config)),
      q_memory_(config.q_capacity),
      kv_(config.shape, config.kv, config.chunk),
      validator_(std::make_unique<StreamValidator>()) {
  if (config.retrieval.bias == BiasKind::t5) positions::check(config.retrieval.t5, config.shape.heads_q, true, "").or_throw();
}

Layer::~Layer() = default;

StepResult Layer::run_step(const ChunkView& chunk, const StepRequest& request) {
  validator_->check(chunk, config_).or_throw();
  require(!request.evicted || config_.kv.copy_out_evicted, "evicted entries requested but copy_out_evicted is off");
  const size_t q_row = config_.shape.q_row();
  std::vector<QueryRow> rows(config_.chunk);  // padding rows stay invalid
  for (uint32_t r = 0; r < chunk.rows; ++r) {
    QueryRow& row = rows[r];
    row.position = chunk.positions[r];
    row.valid = chunk.valid.empty() || chunk.valid[r] != 0;
    row.tag = chunk.tags.empty() ? 0u : chunk.tags[r];
    if (row.valid)
      for (size_t i = r * q_row; i < (r + 1) * q_row; ++i) row.q.push_back(half::stored_value(numerics::flush_subnormal(chunk.q[i]), config_.kv.storage));
  }
  // 2. before 1.: the two memories are independent, and the K/V insertion
  // is the one that may reject the chunk, before anything changed.
  EvictedEntries evicted_kv = kv_.insert(chunk);
  std::vector<QueryRow> evicted = q_memory_.insert(std::move(rows));
  validator_->accept(chunk, config_);
  return attend_evicted(std::move(evicted), std::move(evicted_kv), request);
}

Result<StepResult> Layer::step(const ChunkView& chunk, const StepRequest& request) {
  return capture([&] { return run_step(chunk, request); });
}

Result<StepResult> Layer::drain_step(const StepRequest& request) { return step(ChunkView{}, request); }

Result<StepResult> Layer::flush(const StepRequest& request) {
  return capture([&] { return run_flush(request); });
}

StepResult Layer::run_flush(const StepRequest& request) {
  return attend_evicted(q_memory_.take_all(), EvictedEntries{}, request);
}

bool Layer::has_pending_queries() const {
  return std::any_of(q_memory_.entries().begin(), q_memory_.entries().end(),
                     [](const QueryRow& row) { return row.valid; });
}

StepResult Layer::attend_evicted(std::vector<QueryRow> evicted, EvictedEntries evicted_kv,
                                 const StepRequest& request) {
  QueryBatch batch;
  for (QueryRow& row : evicted) {
    if (!row.valid) continue;  // only valid evicted queries produce outputs and updates
    batch.positions.push_back(row.position);
    batch.tags.push_back(row.tag);
    batch.q.insert(batch.q.end(), row.q.begin(), row.q.end());
  }
  const Retrieval retrieval = kv_.retrieve(batch, config_.retrieval, config_.scale());  // 3.
  kv_.update_scores(batch, retrieval);                                                 // 4.

  StepResult result;  // 5.
  result.emitted_positions = batch.positions;
  if (request.outputs)
    result.outputs.assign(retrieval.outputs.begin(), retrieval.outputs.end());
  if (request.snapshot) result.snapshot = kv_.snapshot();
  if (request.evicted) result.evicted = std::move(evicted_kv);
  return result;
}

}  // namespace attendre::reference
