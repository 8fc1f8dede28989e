#include "core/number_text.hpp"
#include "core/numerics.hpp"
#include "core/positions.hpp"
#include "core/try.hpp"
#include "core/stream_validator.hpp"

#include <attendre/config.hpp>
#include <attendre/error.hpp>
#include <attendre/layer.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

namespace attendre {
namespace {

constexpr std::array<std::string_view, 7> kPolicyNames = {"fifo",    "lru",     "lfu", "lra_last",
                                                           "lra_max", "lra_sum", "lfa"};

std::string u(uint64_t value) { return std::to_string(value); }

std::string g(double value, int digits = 3) {
  char text[40];
  std::snprintf(text, sizeof text, "%.*g", digits, value);
  return text;
}

// The device computes in fp32: a parameter outside its normal range would
// silently become infinite (and NaN once multiplied by 0) or flush to zero.
Status require_float32(double value, const char* what) {
  ATTENDRE_REQUIRE(numerics::fits_float32(value),
                   std::string(what) + " is " + shortest_text(value) + ": it must be 0 or a float32 magnitude in [1.18e-38, 3.4e38]");
  return {};
}

}  // namespace

std::string_view to_string(PolicyKind kind) { return kPolicyNames[static_cast<size_t>(kind)]; }

std::optional<PolicyKind> parse_policy(std::string_view name) {
  for (size_t i = 0; i < kPolicyNames.size(); ++i)
    if (kPolicyNames[i] == name) return static_cast<PolicyKind>(i);
  return std::nullopt;
}

std::string_view to_string(MemoryStorage storage) { return storage == MemoryStorage::f16 ? "f16" : "f32"; }

std::optional<MemoryStorage> parse_memory_storage(std::string_view name) {
  if (name == "f32") return MemoryStorage::f32;
  if (name == "f16") return MemoryStorage::f16;
  return std::nullopt;
}

std::string_view to_string(RetrievalMode mode) {
  return mode == RetrievalMode::per_head ? "per_head" : "shared";
}

double alibi_slope(uint32_t head, uint32_t heads) {
  return std::exp2(-8.0 * static_cast<double>(head + 1) / static_cast<double>(heads));
}

Status infeasible_insertion(uint64_t needed, uint64_t eligible) {
  return {ErrorCode::infeasible_config, "infeasible insertion: must evict " + std::to_string(needed) +
                                            " entries but only " + std::to_string(eligible) +
                                            " are eligible (pinned positions < n_sink are never evicted)"};
}

double LayerConfig::scale() const {
  return retrieval.scale ? *retrieval.scale : 1.0 / std::sqrt(static_cast<double>(shape.head_dim));
}

uint32_t LayerConfig::max_queries_per_step(bool with_flush) const {
  return with_flush && q_capacity > chunk ? q_capacity : chunk;
}

Status LayerConfig::check() const {
  ATTENDRE_REQUIRE(shape.heads_q >= 1 && shape.heads_kv >= 1 && shape.head_dim >= 1,
          "heads_q, heads_kv and head_dim must be at least 1");
  ATTENDRE_REQUIRE(shape.heads_q % shape.heads_kv == 0, "heads_q (" + u(shape.heads_q) +
                                                   ") must be a multiple of heads_kv (" + u(shape.heads_kv) + ")");
  // A query row (heads_q * head_dim floats) and a key or value row (heads_kv
  // * head_dim) are counted in 32 bits everywhere after this check
  // (AttentionShape::q_row, kv_row): a product past that would wrap.
  ATTENDRE_REQUIRE(uint64_t{shape.heads_q} * shape.head_dim <= 0xFFFFFFFFull,
                   "heads_q * head_dim must fit 32 bits, got heads_q=" + u(shape.heads_q) +
                       " head_dim=" + u(shape.head_dim) + " (" + u(uint64_t{shape.heads_q} * shape.head_dim) + ")");
  ATTENDRE_REQUIRE(chunk >= 1, "chunk size S must be at least 1");
  ATTENDRE_REQUIRE(kv.capacity >= 1, "K/V capacity M must be at least 1");
  ATTENDRE_REQUIRE(retrieval.top_k >= 1, "top-K must be at least 1");
  // The Q ring holds N + S rows and insertion plans over M + S candidates,
  // counted in 32 bits on the device.
  ATTENDRE_REQUIRE(uint64_t{q_capacity} + chunk <= 0xFFFFFFFFull,
          "N + S must fit 32 bits, got N=" + u(q_capacity) + " S=" + u(chunk));
  ATTENDRE_REQUIRE(uint64_t{kv.capacity} + chunk <= 0xFFFFFFFFull,
          "M + S must fit 32 bits, got M=" + u(kv.capacity) + " S=" + u(chunk));
  ATTENDRE_REQUIRE(!(kv.policy.lambda < 0.0), "lfa lambda must be >= 0, got " + shortest_text(kv.policy.lambda));
  ATTENDRE_TRY(require_float32(kv.policy.lambda, "lfa lambda"));
  const InitialScore& init = kv.policy.initial;
  ATTENDRE_TRY(require_float32(init.k, "initial score k"));
  ATTENDRE_TRY(require_float32(init.value, "constant initial score"));
  if (retrieval.scale) ATTENDRE_TRY(require_float32(*retrieval.scale, "scale"));
  ATTENDRE_REQUIRE(retrieval.soft_cap >= 0.0, "attention soft-cap must be >= 0 (0: none), got " + shortest_text(retrieval.soft_cap));
  ATTENDRE_TRY(require_float32(retrieval.soft_cap, "attention soft-cap"));
  ATTENDRE_REQUIRE(retrieval.window <= 0x7FFFFFFFu, "sliding window must be below 2^31, got " + u(retrieval.window));
  if (retrieval.bias == BiasKind::t5) ATTENDRE_TRY(positions::check(retrieval.t5, shape.heads_q, false, ""));

  // Spec 2.1: a configuration in which E eligible entries cannot exist is an
  // error now, never a silent clamp at run time.
  if (kv.n_recent > 0) {
    // Protected: the pinned entries, and the union of the window and (under
    // protect_new) the new rows, both of which are the newest held entries.
    const uint64_t newest = kv.protect_new ? std::max(chunk, kv.n_recent) : kv.n_recent;
    if (static_cast<uint64_t>(kv.capacity) < newest + kv.n_sink)
      return {ErrorCode::infeasible_config,
              std::string("infeasible: the recent window needs M >= n_sink + ") +
                  (kv.protect_new ? "max(S, W) under protect_new" : "W") + ", got M=" + u(kv.capacity) +
                  " S=" + u(chunk) + " n_sink=" + u(kv.n_sink) + " W=" + u(kv.n_recent)};
  } else if (kv.protect_new) {
    if (static_cast<uint64_t>(kv.capacity) < static_cast<uint64_t>(chunk) + kv.n_sink)
      return {ErrorCode::infeasible_config, "infeasible: protect_new needs M >= S + n_sink, got M=" + u(kv.capacity) +
                                                " S=" + u(chunk) + " n_sink=" + u(kv.n_sink)};
  } else if (kv.capacity < kv.n_sink) {
    return {ErrorCode::infeasible_config,
            "infeasible: M=" + u(kv.capacity) + " cannot hold n_sink=" + u(kv.n_sink) + " pinned entries"};
  }
  return {};
}

Status StreamValidator::check(const ChunkView& chunk, const LayerConfig& config, Parts parts) const {
  const bool queries = parts == Parts::all || parts == Parts::queries;
  const bool keys = parts == Parts::all || parts == Parts::keys;
  const AttentionShape& s = config.shape;
  const size_t rows = chunk.rows;
  ATTENDRE_REQUIRE(chunk.rows <= config.chunk,
          "chunk has " + u(chunk.rows) + " rows, more than the layer's S=" + u(config.chunk));
  if (queries)
    ATTENDRE_REQUIRE(chunk.q.size() == rows * s.q_row(), "chunk q holds " + u(chunk.q.size()) +
                                                   " floats, expected rows*heads_q*head_dim = " + u(rows * s.q_row()));
  if (keys) {
    ATTENDRE_REQUIRE(chunk.k.size() == rows * s.kv_row(), "chunk k holds " + u(chunk.k.size()) +
                                                    " floats, expected rows*heads_kv*head_dim = " + u(rows * s.kv_row()));
    ATTENDRE_REQUIRE(chunk.v.size() == rows * s.kv_row(), "chunk v holds " + u(chunk.v.size()) +
                                                    " floats, expected rows*heads_kv*head_dim = " + u(rows * s.kv_row()));
  }
  ATTENDRE_REQUIRE(chunk.positions.size() == rows, "chunk positions hold " + u(chunk.positions.size()) + " values, expected " + u(rows));
  ATTENDRE_REQUIRE(chunk.valid.empty() || chunk.valid.size() == rows, "chunk valid flags hold " + u(chunk.valid.size()) + " values, expected " + u(rows));
  ATTENDRE_REQUIRE(chunk.tags.empty() || chunk.tags.size() == rows, "chunk tags hold " + u(chunk.tags.size()) + " values, expected " + u(rows));
  // Non-finite inputs would make every ordering below meaningless; padding
  // rows are never read, so only valid rows are checked.
  // fp16 storage: a stored element past fp16's range would become infinity.
  const bool half = config.kv.storage == MemoryStorage::f16;
  auto finite_rows = [&](std::span<const float> data, size_t row_floats, const char* name) -> Status {
    for (size_t r = 0; r < rows; ++r) {
      if (!chunk.valid.empty() && chunk.valid[r] == 0) continue;
      for (size_t c = 0; c < row_floats; ++c) {
        const float x = data[r * row_floats + c];
        ATTENDRE_REQUIRE(std::isfinite(x), std::string("chunk ") + name + " row " + u(r) + " holds a non-finite value");
        ATTENDRE_REQUIRE(!half || std::abs(x) <= kMaxHalfMagnitude,
                         std::string("chunk ") + name + " row " + u(r) + " column " + u(c) + " holds " + g(x, 9) +
                             ", beyond the fp16 range (65504) of the memory's storage");
      }
    }
    return {};
  };
  if (queries) ATTENDRE_TRY(finite_rows(chunk.q, s.q_row(), "q"));
  if (keys) {
    ATTENDRE_TRY(finite_rows(chunk.k, s.kv_row(), "k"));
    ATTENDRE_TRY(finite_rows(chunk.v, s.kv_row(), "v"));
  }
  if (parts != Parts::positions) ATTENDRE_TRY(check_magnitudes(chunk, config, parts));
  if (parts == Parts::queries) return {};  // queries alone need not follow the stream's order
  return cursor_.check(chunk.positions, chunk.valid);
}

StreamValidator::Norms StreamValidator::chunk_norms(const ChunkView& chunk, const LayerConfig& config,
                                                    Parts parts) const {
  const AttentionShape& s = config.shape;
  Norms n;
  auto head_norms = [&](std::span<const float> data, uint32_t heads, double& best, uint32_t& row) {
    for (uint32_t r = 0; r < chunk.rows; ++r) {
      if (!chunk.valid.empty() && chunk.valid[r] == 0) continue;
      for (uint32_t h = 0; h < heads; ++h) {
        double squares = 0.0;
        for (uint32_t d = 0; d < s.head_dim; ++d) {
          const double x = data[(uint64_t{r} * heads + h) * s.head_dim + d];
          squares += x * x;
        }
        if (std::sqrt(squares) > best) best = std::sqrt(squares), row = r;
      }
    }
  };
  if (parts == Parts::positions) return n;  // the values are on the device
  if (parts != Parts::keys) head_norms(chunk.q, s.heads_q, n.query, n.query_row);
  if (parts != Parts::queries) {
    head_norms(chunk.k, s.heads_kv, n.key, n.key_row);
    for (uint32_t r = 0; r < chunk.rows; ++r) {
      if (!chunk.valid.empty() && chunk.valid[r] == 0) continue;
      for (uint64_t i = 0; i < s.kv_row(); ++i) {
        const double x = std::abs(static_cast<double>(chunk.v[r * uint64_t{s.kv_row()} + i]));
        if (x > n.value) n.value = x, n.value_row = r;
      }
    }
  }
  return n;
}

// Every query meets every key held with it, and both norms only grow over
// the stream, so bounding the largest query norm seen times the largest key
// norm seen bounds every logit the layer will compute.
Status StreamValidator::check_magnitudes(const ChunkView& chunk, const LayerConfig& config, Parts parts) const {
  const Norms n = chunk_norms(chunk, config, parts);
  ATTENDRE_REQUIRE(n.value <= numerics::kMaxValue, "chunk v row " + u(n.value_row) + " holds |v| = " + g(n.value) +
                                                      ", over the limit of " + g(numerics::kMaxValue) +
                                                      " that keeps float32 attention outputs finite");
  const double scale = std::abs(config.scale());
  const double query = std::max(seen_.query, n.query), key = std::max(seen_.key, n.key);
  if (scale * query * key <= numerics::kMaxLogit) return {};
  const bool blame_query = n.query * key >= query * n.key;
  return invalid_argument("chunk " + std::string(blame_query ? "q row " + u(n.query_row) : "k row " + u(n.key_row)) +
                          ": scale * |q| * |k| reaches " + g(scale * query * key) + " (|q| " + g(query) + ", |k| " +
                          g(key) + "), over the limit of " + g(numerics::kMaxLogit) + " that keeps float32 logits finite");
}

void StreamValidator::accept(const ChunkView& chunk, const LayerConfig& config, Parts parts) {
  if (parts != Parts::queries) cursor_.accept(chunk.positions, chunk.valid);
  const Norms n = chunk_norms(chunk, config, parts);
  seen_.query = std::max(seen_.query, n.query);
  seen_.key = std::max(seen_.key, n.key);
}

Status PositionCursor::check(std::span<const int64_t> positions, std::span<const uint8_t> valid) const {
  int64_t last = last_;
  bool seen = seen_;
  for (size_t r = 0; r < positions.size(); ++r) {
    if (!valid.empty() && valid[r] == 0) continue;
    ATTENDRE_REQUIRE(!seen || positions[r] > last, "positions must strictly increase over valid rows: " +
                                                       std::to_string(positions[r]) + " follows " + std::to_string(last));
    last = positions[r];
    seen = true;
  }
  return {};
}

void PositionCursor::accept(std::span<const int64_t> positions, std::span<const uint8_t> valid) {
  for (size_t r = 0; r < positions.size(); ++r) {
    if (!valid.empty() && valid[r] == 0) continue;
    last_ = positions[r];
    seen_ = true;
  }
}

}  // namespace attendre
