#include "core/stack_chunk.hpp"
#include "core/try.hpp"

#include <attendre/error.hpp>

#include <cmath>

namespace attendre {

Status StackStreamValidator::check(const StackChunk& chunk, const StackConfig& config, uint32_t rows_limit) const {
  const uint64_t rows = chunk.rows;
  ATTENDRE_REQUIRE(rows <= rows_limit, "stack chunk has " + std::to_string(rows) + " rows, more than " +
                                  std::to_string(rows_limit));
  ATTENDRE_REQUIRE(chunk.positions.size() == rows, "stack chunk positions do not match its rows");
  ATTENDRE_REQUIRE(chunk.valid.empty() || chunk.valid.size() == rows, "stack chunk valid flags do not match its rows");
  auto valid = [&](uint64_t r) { return chunk.valid.empty() || chunk.valid[r] != 0; };
  if (config.vocab > 0) {
    ATTENDRE_REQUIRE(chunk.tokens.size() == rows, "stack chunk needs one token id per row");
    for (uint64_t r = 0; r < rows; ++r)
      ATTENDRE_REQUIRE(!valid(r) || chunk.tokens[r] < config.vocab,
              "token id " + std::to_string(chunk.tokens[r]) + " is outside the vocabulary of " +
                  std::to_string(config.vocab));
  } else {
    ATTENDRE_REQUIRE(chunk.embeddings.size() == rows * config.hidden, "stack chunk needs rows * hidden embedding floats");
    for (uint64_t r = 0; r < rows; ++r)
      for (uint64_t i = 0; valid(r) && i < config.hidden; ++i)
        ATTENDRE_REQUIRE(std::isfinite(chunk.embeddings[r * config.hidden + i]),
                "stack chunk embedding row " + std::to_string(r) + " holds a non-finite value");
  }
  return cursor_.check(chunk.positions, chunk.valid);
}

void StackStreamValidator::accept(const StackChunk& chunk) { cursor_.accept(chunk.positions, chunk.valid); }

}  // namespace attendre
