#include "io/gguf_metadata.hpp"

#include "core/fail.hpp"
#include "io/gguf_source.hpp"

#include <limits>

namespace attendre::gguf {

Metadata::Metadata(const File& file, std::string_view architecture)
    : file_(file), prefix_(std::string(architecture) + ".") {}

void Metadata::fail_key(ErrorCode code, std::string_view suffix, const std::string& problem) const {
  fail(code, file_.path().string() + ": metadata key " + detail::quote_name(key(suffix)) + ": " + problem);
}

void Metadata::fail_tensor(ErrorCode code, const std::string& name, const std::string& problem) const {
  fail(code, file_.path().string() + ": tensor " + detail::quote_name(name) + ": " + problem);
}

std::optional<Value> Metadata::required(std::string_view suffix, bool has_default) const {
  std::optional<Value> value = find(suffix);
  if (!value && !has_default) fail_key(ErrorCode::malformed_input, suffix, "is missing");
  return value;
}

uint32_t Metadata::count(std::string_view suffix, std::optional<uint32_t> fallback) const {
  const std::optional<Value> value = required(suffix, fallback.has_value());
  if (!value) return *fallback;
  const uint64_t n = value->as_u64(key(suffix));
  if (n == 0 || n > std::numeric_limits<uint32_t>::max())
    fail_key(ErrorCode::malformed_input, suffix, "is " + std::to_string(n) + ", expected a count in [1, 2^32)");
  return static_cast<uint32_t>(n);
}

double Metadata::number(std::string_view suffix, std::optional<double> fallback) const {
  const std::optional<Value> value = required(suffix, fallback.has_value());
  return value ? value->as_f64(key(suffix)) : *fallback;
}

std::string Metadata::text(std::string_view suffix, std::optional<std::string> fallback) const {
  const std::optional<Value> value = required(suffix, fallback.has_value());
  return value ? std::string(value->as_string(key(suffix))) : *fallback;
}

uint32_t Metadata::head_dim(uint32_t hidden, uint32_t heads) const {
  if (find("attention.key_length")) {
    const uint32_t key_length = count("attention.key_length");
    if (count("attention.value_length", key_length) != key_length)
      fail_key(ErrorCode::unsupported, "attention.value_length",
               "value heads of " + std::to_string(count("attention.value_length")) + " differ from key heads of " +
                   std::to_string(key_length) + ", which the stack does not run");
    return key_length;
  }
  if (hidden % heads != 0)
    fail_key(ErrorCode::malformed_input, "attention.head_count",
             std::to_string(heads) + " heads do not divide embedding_length " + std::to_string(hidden) + " and " +
                 key("attention.key_length") + " is absent");
  return hidden / heads;
}

uint32_t Metadata::kv_heads(uint32_t heads) const {
  const uint32_t kv = count("attention.head_count_kv", heads);
  if (heads % kv != 0)
    fail_key(ErrorCode::malformed_input, "attention.head_count_kv",
             std::to_string(kv) + " does not divide head_count " + std::to_string(heads));
  return kv;
}

uint32_t Metadata::vocabulary_size() const {
  const uint64_t tokens = file_.get("tokenizer.ggml.tokens").size();
  if (tokens == 0 || tokens > std::numeric_limits<uint32_t>::max())
    fail(ErrorCode::malformed_input, file_.path().string() + ": metadata key \"tokenizer.ggml.tokens\": " +
                                         std::to_string(tokens) + " tokens, expected [1, 2^32)");
  if (find("vocab_size") && count("vocab_size") != tokens)
    fail_key(ErrorCode::malformed_input, "vocab_size",
             std::to_string(count("vocab_size")) + " differs from the " + std::to_string(tokens) +
                 " tokens of tokenizer.ggml.tokens");
  return static_cast<uint32_t>(tokens);
}

uint32_t Metadata::block_count(std::string_view suffix, std::optional<uint32_t> fallback) const {
  const uint32_t blocks = count(suffix, fallback);
  if (blocks > file_.tensors().size())
    fail_key(ErrorCode::malformed_input, suffix,
             std::to_string(blocks) + " blocks, but the file holds " + std::to_string(file_.tensors().size()) + " tensors");
  return blocks;
}

}  // namespace attendre::gguf
