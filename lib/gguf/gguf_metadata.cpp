#include "gguf/gguf_metadata.hpp"

#include "core/number_text.hpp"
#include "core/printable.hpp"
#include "core/try.hpp"
#include "gguf/gguf_source.hpp"

#include <cmath>
#include <limits>

namespace attendre::gguf {

Metadata::Metadata(const File& file, std::string_view architecture)
    : file_(file), prefix_(std::string(architecture) + ".") {}

Status Metadata::key_error(ErrorCode code, std::string_view suffix, const std::string& problem) const {
  return {code, file_.path().string() + ": metadata key " + quote(key(suffix)) + ": " + problem};
}

Result<std::optional<Value>> Metadata::required(std::string_view suffix, bool has_default) const {
  std::optional<Value> value = find(suffix);
  if (!value && !has_default) return key_error(ErrorCode::malformed_input, suffix, "is missing");
  return value;
}

Result<uint32_t> Metadata::count(std::string_view suffix, std::optional<uint32_t> fallback) const {
  ATTENDRE_TRY_ASSIGN(const std::optional<Value> value, required(suffix, fallback.has_value()));
  if (!value) return *fallback;
  ATTENDRE_TRY_ASSIGN(const uint64_t n, value->as_u64(key(suffix)));
  if (n == 0 || n > std::numeric_limits<uint32_t>::max())
    return key_error(ErrorCode::malformed_input, suffix, "is " + std::to_string(n) + ", expected a count in [1, 2^32)");
  return static_cast<uint32_t>(n);
}

Result<double> Metadata::number(std::string_view suffix, std::optional<double> fallback) const {
  ATTENDRE_TRY_ASSIGN(const std::optional<Value> value, required(suffix, fallback.has_value()));
  if (!value) return *fallback;
  ATTENDRE_TRY_ASSIGN(const double number, value->as_f64(key(suffix)));
  if (!std::isfinite(number))
    return key_error(ErrorCode::malformed_input, suffix, "is " + shortest_text(number) + ", expected a finite number");
  return number;
}

Result<double> Metadata::positive(std::string_view suffix, std::optional<double> fallback) const {
  ATTENDRE_TRY_ASSIGN(const double number, this->number(suffix, fallback));
  if (!(number > 0.0))
    return key_error(ErrorCode::malformed_input, suffix, "is " + shortest_text(number) + ", expected a positive number");
  return number;
}

Result<float> Metadata::epsilon(std::string_view suffix) const {
  ATTENDRE_TRY_ASSIGN(const double number, positive(suffix));
  // A double past the float range becomes inf, one below it 0.
  const auto single = static_cast<float>(number);
  if (!std::isfinite(single) || !(single > 0.0f))
    return key_error(ErrorCode::malformed_input, suffix,
                     "is " + shortest_text(number) + ", which a float epsilon cannot hold (" + shortest_text(single) +
                         ")");
  return single;
}

Result<std::string> Metadata::text(std::string_view suffix, std::optional<std::string> fallback) const {
  ATTENDRE_TRY_ASSIGN(const std::optional<Value> value, required(suffix, fallback.has_value()));
  if (!value) return std::move(*fallback);
  ATTENDRE_TRY_ASSIGN(const std::string_view text, value->as_string(key(suffix)));
  return std::string(text);
}

Result<uint32_t> Metadata::head_dim(uint32_t hidden, uint32_t heads) const {
  if (find("attention.key_length")) {
    ATTENDRE_TRY_ASSIGN(const uint32_t key_length, count("attention.key_length"));
    ATTENDRE_TRY_ASSIGN(const uint32_t value_length, count("attention.value_length", key_length));
    if (value_length != key_length)
      return key_error(ErrorCode::unsupported, "attention.value_length",
                       "value heads of " + std::to_string(value_length) + " differ from key heads of " +
                           std::to_string(key_length) + ", which the stack does not run");
    return key_length;
  }
  if (hidden % heads != 0)
    return key_error(ErrorCode::malformed_input, "attention.head_count",
                     std::to_string(heads) + " heads do not divide embedding_length " + std::to_string(hidden) +
                         " and " + key("attention.key_length") + " is absent");
  return hidden / heads;
}

Result<uint32_t> Metadata::kv_heads(uint32_t heads) const {
  ATTENDRE_TRY_ASSIGN(const uint32_t kv, count("attention.head_count_kv", heads));
  if (heads % kv != 0)
    return key_error(ErrorCode::malformed_input, "attention.head_count_kv",
                     std::to_string(kv) + " does not divide head_count " + std::to_string(heads));
  return kv;
}

Result<uint32_t> Metadata::vocabulary_size() const {
  ATTENDRE_TRY_ASSIGN(const Value token_array, file_.get("tokenizer.ggml.tokens"));
  ATTENDRE_TRY_ASSIGN(const uint64_t tokens, token_array.size());
  if (tokens == 0 || tokens > std::numeric_limits<uint32_t>::max())
    return malformed_input(file_.path().string() + ": metadata key \"tokenizer.ggml.tokens\": " +
                           std::to_string(tokens) + " tokens, expected [1, 2^32)");
  if (find("vocab_size")) {
    ATTENDRE_TRY_ASSIGN(const uint32_t vocab_size, count("vocab_size"));
    if (vocab_size != tokens)
      return key_error(ErrorCode::malformed_input, "vocab_size",
                       std::to_string(vocab_size) + " differs from the " + std::to_string(tokens) +
                           " tokens of tokenizer.ggml.tokens");
  }
  return static_cast<uint32_t>(tokens);
}

Result<uint32_t> Metadata::block_count(std::string_view suffix, std::optional<uint32_t> fallback) const {
  ATTENDRE_TRY_ASSIGN(const uint32_t blocks, count(suffix, fallback));
  if (blocks > file_.tensors().size())
    return key_error(ErrorCode::malformed_input, suffix,
                     std::to_string(blocks) + " blocks, but the file holds " + std::to_string(file_.tensors().size()) +
                         " tensors");
  return blocks;
}

}  // namespace attendre::gguf
