// Validation of the chunks fed to a stack, shared by both backends so that
// both reject the same input with the same message.
#pragma once

#include "core/stream_validator.hpp"
#include <attendre/layer.hpp>
#include <attendre/stack.hpp>

namespace attendre {

class StackStreamValidator {
 public:
  // invalid_argument naming the problem, or ok; `rows_limit` is S (or 1 when decoding).
  Status check(const StackChunk& chunk, const StackConfig& config, uint32_t rows_limit) const;
  void accept(const StackChunk& chunk);

 private:
  PositionCursor cursor_;
};

}  // namespace attendre
