// Read-only access to a GGUF file's <arch>.* hyper-parameters, with the
// defaults llama.cpp applies when a key is absent and one-line messages that
// name the file and the key. Shared by every architecture's description.
#pragma once

#include "gguf/gguf.hpp"

#include <attendre/status.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace attendre::gguf {

class Metadata {
 public:
  Metadata(const File& file, std::string_view architecture);

  const File& file() const { return file_; }
  std::string key(std::string_view suffix) const { return prefix_ + std::string(suffix); }
  std::optional<Value> find(std::string_view suffix) const { return file_.find(key(suffix)); }

  // "<file>: metadata key \"<arch>.suffix\": problem".
  Status key_error(ErrorCode code, std::string_view suffix, const std::string& problem) const;

  // A positive count that fits 32 bits (the stack counts in 32 bits); absent,
  // `fallback`, or malformed_input naming the key when there is none.
  Result<uint32_t> count(std::string_view suffix, std::optional<uint32_t> fallback = std::nullopt) const;
  // A finite number (any numeric type): an inf or NaN hyper-parameter would
  // run to garbage without a word, so it is refused naming the key.
  Result<double> number(std::string_view suffix, std::optional<double> fallback = std::nullopt) const;
  // A finite number > 0 (scales, bases, factors).
  Result<double> positive(std::string_view suffix, std::optional<double> fallback = std::nullopt) const;
  // A norm epsilon: positive, and still positive and finite as the float the stack keeps.
  Result<float> epsilon(std::string_view suffix) const;
  Result<std::string> text(std::string_view suffix, std::optional<std::string> fallback = std::nullopt) const;

  // The attention head dimension: attention.key_length (which value_length
  // must equal), else embedding_length / head_count.
  Result<uint32_t> head_dim(uint32_t hidden, uint32_t heads) const;
  // head_count_kv (default head_count), which must divide head_count.
  Result<uint32_t> kv_heads(uint32_t heads) const;
  // The vocabulary size: the tokens of tokenizer.ggml.tokens (vocab_size must agree).
  Result<uint32_t> vocabulary_size() const;
  // block_count-like keys: a count no larger than the file's tensors (each
  // block has tensors of its own), checked before it sizes anything.
  Result<uint32_t> block_count(std::string_view suffix, std::optional<uint32_t> fallback = std::nullopt) const;

 private:
  // The value at `suffix`; absent, nullopt when a default stands in, else an error.
  Result<std::optional<Value>> required(std::string_view suffix, bool has_default) const;

  const File& file_;
  std::string prefix_;
};

}  // namespace attendre::gguf
