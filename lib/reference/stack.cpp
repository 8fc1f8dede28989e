// Float64 reference of the time-shifted stack: rows flow from block to
// block exactly as spec section 4 says, each block holding its own Q memory
// (queries and the residual rows that wait with them) and K/V memory.
#include "reference/model_tensors.hpp"
#include "core/stack_chunk.hpp"
#include "reference/block_math.hpp"
#include "core/fail.hpp"
#include "core/try.hpp"
#include "core/half.hpp"
#include "core/numerics.hpp"
#include "core/positions.hpp"
#include "core/stream_validator.hpp"

#include <attendre/error.hpp>
#include <attendre/reference/layer.hpp>
#include <attendre/reference/stack.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

namespace attendre::reference {
namespace {

// Rows passed between blocks, in stream order (padding rows included).
struct Rows {
  std::vector<int64_t> positions;
  std::vector<uint8_t> valid;
  std::vector<double> hidden;
  size_t size() const { return positions.size(); }
};

struct Waiting {
  int64_t position = 0;
  bool valid = false;
  std::vector<double> q, residual;
};

enum class Mode { stream, flush, decode };

}  // namespace

struct Stack::Impl {
  struct Block {
    BlockMath math;
    LayerConfig attention;
    DataOnlyMemory<Waiting> q_memory;
    KeyValueMemory kv;
    const BlockConfig& math_config() const { return math.config(); }
  };

  Impl(const StackConfig& c, WeightSource& weights)
      : config((c.check().or_throw(), c)), tensors(load_model(c, weights)), head(c, tensors) {
    for (size_t l = 0; l < c.blocks.size(); ++l) {
      LayerConfig attention = c.attention(l);
      if (const std::optional<Tensor>& t5 = tensors.blocks[l].t5_table)
        attention.retrieval.t5.table.assign(t5->data.begin(), t5->data.end());
      blocks.push_back(Block{BlockMath(c.hidden, c.blocks[l], tensors.blocks[l], c.activations), attention,
                             DataOnlyMemory<Waiting>(attention.q_capacity),
                             KeyValueMemory(attention.shape, attention.kv, attention.chunk)});
    }
  }

  // The reference hands out no NaN either: a value its arithmetic makes
  // non-finite (in double; in fp16 where it rounds what the device stores
  // so, past 65504), or that is past float32 where it leaves as a float, is
  // the device's numerical error in the device's words. Values past float32
  // that double holds between blocks are computed on (the device, in fp32,
  // reports them instead).
  void require_finite(std::span<const double> values, bool leaves_as_float, const std::string& stage) const;

  Rows run_block(size_t l, Rows in, Mode mode);
  StackOutput run(Rows rows, size_t first_block, Mode mode, const StackRequest& request);
  Rows input_rows(const StackChunk& chunk, uint32_t rows) const;

  StackConfig config;
  ModelTensors tensors;
  HeadMath head;
  std::vector<Block> blocks;
  StackStreamValidator validator;
  bool finished = false;
  uint64_t steps = 0;  // run() calls begun, as the device counts its steps: the current one is steps - 1
};

void Stack::Impl::require_finite(std::span<const double> values, bool leaves_as_float, const std::string& stage) const {
  for (double x : values)
    if (!std::isfinite(leaves_as_float ? static_cast<float>(x) : x))
      numerics::non_finite("step " + std::to_string(steps - 1), stage).or_throw();
}

Rows Stack::Impl::input_rows(const StackChunk& chunk, uint32_t rows) const {
  const uint32_t H = config.hidden;
  Rows r;
  r.positions.assign(rows, 0);
  r.valid.assign(rows, 0);
  r.hidden.assign(uint64_t{rows} * H, 0.0);
  std::vector<uint32_t> tokens(rows, config.vocab);  // out of range: a zero row
  for (uint32_t i = 0; i < chunk.rows; ++i) {
    r.valid[i] = chunk.valid.empty() || chunk.valid[i] != 0;
    if (!r.valid[i]) continue;
    r.positions[i] = chunk.positions[i];
    if (config.vocab > 0) tokens[i] = chunk.tokens[i];
    else std::copy_n(chunk.embeddings.begin() + uint64_t{i} * H, H, r.hidden.begin() + uint64_t{i} * H);
  }
  if (config.vocab > 0) r.hidden = head.embed(tokens);
  return r;
}

Rows Stack::Impl::run_block(size_t l, Rows in, Mode mode) {
  Block& b = blocks[l];
  const AttentionShape& s = b.attention.shape;
  const uint32_t H = config.hidden;
  std::vector<Waiting> evicted;
  if (mode == Mode::flush) {
    evicted = b.q_memory.take_all();  // getAll replaces the evicted queries
  } else {
    const BlockMath::Projected p = b.math.project(in.hidden, in.positions);
    std::vector<Waiting> rows(in.size());
    for (size_t r = 0; r < in.size(); ++r) {
      rows[r].position = in.positions[r];
      rows[r].valid = in.valid[r] != 0;
      for (size_t i = r * s.q_row(); i < (r + 1) * s.q_row(); ++i)  // stored as the Q ring stores it
        rows[r].q.push_back(half::stored_value(p.q[i], b.attention.kv.storage));
      rows[r].residual.assign(in.hidden.begin() + r * H, in.hidden.begin() + (r + 1) * H);
    }
    if (!b.math_config().cross_attention)
      b.kv.insert_rows(p.k, p.v, in.positions, in.valid, {});  // padding inserts nothing
    evicted = mode == Mode::decode ? std::move(rows) : b.q_memory.insert(std::move(rows));
  }

  QueryBatch batch;
  std::vector<double> residual;
  for (const Waiting& w : evicted) {
    if (!w.valid) continue;
    batch.positions.push_back(w.position);
    batch.tags.push_back(0);
    batch.q.insert(batch.q.end(), w.q.begin(), w.q.end());
    residual.insert(residual.end(), w.residual.begin(), w.residual.end());
  }
  RetrievalConfig retrieval = b.attention.retrieval;
  // Decoding needs no Q memory and sees no future, except across to the
  // encoder, which is all past.
  if (mode == Mode::decode && !b.math_config().cross_attention) retrieval.causal = true;
  KeyValueMemory::PairDot dot;
  if (const LmInfinite& lm = b.math_config().lm_infinite; lm.enabled)
    dot = [&](uint32_t h, const double* q, int64_t p_q, const KeyValueMemory::Entry& e) {
      const int64_t d = positions::lm_infinite_distance(p_q - e.position, lm.n_local, b.kv.pinned(e.position));
      return b.math.rotated_dot(q, p_q, &e.key[uint64_t{h / s.group()} * s.head_dim], e.position, d);
    };
  const Retrieval retrieved = b.kv.retrieve(batch, retrieval, b.attention.scale(), dot);
  require_finite(retrieved.outputs, false, "the attention outputs of block " + std::to_string(l));
  b.kv.update_scores(batch, retrieved);
  const std::vector<double> finished_rows =
      batch.size() ? b.math.finish(retrieved.outputs, residual) : std::vector<double>{};

  Rows out;
  out.hidden.assign(evicted.size() * H, 0.0);  // padding rows carry zeros
  size_t next = 0;
  for (size_t r = 0; r < evicted.size(); ++r) {
    out.positions.push_back(evicted[r].valid ? evicted[r].position : 0);
    out.valid.push_back(evicted[r].valid ? 1 : 0);
    if (!evicted[r].valid) continue;
    std::copy_n(finished_rows.begin() + next * H, H, out.hidden.begin() + r * H);
    ++next;
  }
  return out;
}

StackOutput Stack::Impl::run(Rows rows, size_t first_block, Mode mode, const StackRequest& request) {
  ++steps;
  for (size_t l = first_block; l < blocks.size(); ++l) {
    rows = run_block(l, std::move(rows), l == first_block ? mode : (mode == Mode::decode ? mode : Mode::stream));
    require_finite(rows.hidden, false, "the output rows of block " + std::to_string(l));
  }
  StackOutput out;
  std::vector<double> last;
  for (size_t r = 0; r < rows.size(); ++r) {
    if (!rows.valid[r]) continue;
    out.positions.push_back(rows.positions[r]);
    last.insert(last.end(), rows.hidden.begin() + r * config.hidden, rows.hidden.begin() + (r + 1) * config.hidden);
  }
  if (out.positions.empty()) return out;
  const std::vector<double> normed = head.norm(last);
  if (request.hidden) {
    require_finite(normed, true, "the final rows");
    out.hidden.assign(normed.begin(), normed.end());
  }
  if (request.logits) {
    require(config.vocab > 0, "logits requested from a stack without a vocabulary");
    const std::vector<double> logits = head.logits(normed);
    require_finite(logits, true, "the logits");
    out.logits.assign(logits.begin(), logits.end());
  }
  return out;
}

Stack::Stack(const StackConfig& config, WeightSource& weights) : impl_(std::make_unique<Impl>(config, weights)) {}
Stack::~Stack() = default;

const StackConfig& Stack::config() const { return impl_->config; }

// The reference throws inside (it serves tools and tests, built with
// exceptions): its TransformerStack forms capture (core/fail.hpp).
Result<StackOutput> Stack::step(const StackChunk& chunk, const StackRequest& request) {
  Impl& m = *impl_;
  ATTENDRE_REQUIRE(!m.finished, "step() after finish(): use decode()");
  ATTENDRE_TRY(m.validator.check(chunk, m.config, m.config.chunk));
  Result<StackOutput> out = capture([&] { return m.run(m.input_rows(chunk, m.config.chunk), 0, Mode::stream, request); });
  if (out.ok()) m.validator.accept(chunk);
  return out;
}

Result<StackOutput> Stack::drain_step(const StackRequest& request) {
  Impl& m = *impl_;
  return capture([&] { return m.run(m.input_rows(StackChunk{}, m.config.chunk), 0, Mode::stream, request); });
}

Result<StackOutput> Stack::flush_block(size_t block, const StackRequest& request) {
  Impl& m = *impl_;
  return capture([&] { return m.run(Rows{}, block, Mode::flush, request); });
}

void Stack::mark_finished() { impl_->finished = true; }

Result<StackOutput> Stack::decode(const StackChunk& one, const StackRequest& request) {
  Impl& m = *impl_;
  ATTENDRE_REQUIRE(m.finished, "decode() before finish(): drain the stack first");
  ATTENDRE_TRY(m.validator.check(one, m.config, 1));
  Result<StackOutput> out = capture([&] { return m.run(m.input_rows(one, one.rows), 0, Mode::decode, request); });
  if (out.ok()) m.validator.accept(one);
  return out;
}

bool Stack::has_pending() const {
  for (const Impl::Block& b : impl_->blocks)
    for (const Waiting& w : b.q_memory.entries())
      if (w.valid) return true;
  return false;
}

void Stack::load_encoder_memory(std::span<const int64_t> positions, std::span<const double> rows) {
  for (Impl::Block& b : impl_->blocks) {
    if (!b.math_config().cross_attention) continue;
    b.kv = KeyValueMemory(b.attention.shape, b.attention.kv, b.attention.chunk);
    const BlockMath::Projected p = b.math.project_memory(rows);
    b.kv.insert_rows(p.k, p.v, positions, {}, {});
  }
}

double Stack::min_decision_gap() const {
  double gap = std::numeric_limits<double>::infinity();
  for (const Impl::Block& b : impl_->blocks) gap = std::min(gap, b.kv.min_decision_gap());
  return gap;
}

Result<MemorySnapshot> Stack::snapshot(size_t block) {
  ATTENDRE_REQUIRE(block < impl_->blocks.size(), "no block " + std::to_string(block));
  return impl_->blocks[block].kv.snapshot();
}

}  // namespace attendre::reference
