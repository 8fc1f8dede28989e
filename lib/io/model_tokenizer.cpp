#include "io/model_tokenizer.hpp"

#include "core/fail.hpp"

#include <algorithm>

namespace attendre {
namespace {

int32_t checked_id(const tokenizer::Tokenizer& tokenizer, uint32_t id) {
  require(id < static_cast<uint32_t>(tokenizer.size()), "token id " + std::to_string(id) +
                                                             " is out of range: the vocabulary has " +
                                                             std::to_string(tokenizer.size()) + " tokens");
  return static_cast<int32_t>(id);
}

std::optional<uint32_t> unsigned_id(std::optional<int32_t> id) {
  return id ? std::optional<uint32_t>(static_cast<uint32_t>(*id)) : std::nullopt;
}

}  // namespace

Tokenizer TokenizerAccess::from_file(const gguf::File& file) {
  auto impl = std::make_shared<Tokenizer::Impl>(Tokenizer::Impl{tokenizer::Tokenizer::from_gguf(file), {}});
  const int32_t size = impl->tokenizer.size();
  if (const auto eos = impl->tokenizer.eos()) impl->stop_tokens.push_back(static_cast<uint32_t>(*eos));
  // Chat models end a turn with their own token (Llama 3's <|eot_id|>,
  // Qwen2's <|im_end|>); 0xFFFFFFFF or -1 means none, as for the other ids.
  if (const auto eot = file.find("tokenizer.ggml.eot_token_id")) {
    const int64_t id = eot->as_i64("tokenizer.ggml.eot_token_id");
    if (id >= 0 && id < size && std::find(impl->stop_tokens.begin(), impl->stop_tokens.end(), id) == impl->stop_tokens.end())
      impl->stop_tokens.push_back(static_cast<uint32_t>(id));
  }
  return Tokenizer(std::move(impl));
}

Tokenizer Tokenizer::open(const std::filesystem::path& path) { return TokenizerAccess::from_file(gguf::File::open(path)); }

size_t Tokenizer::continuation_point(std::string_view text, size_t limit) {
  return tokenizer::Tokenizer::continuation_point(text, limit);
}

std::vector<uint32_t> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  tokenizer::EncodeOptions o;
  o.add_bos = options.add_bos;
  o.continuation = options.continuation;
  o.more_follows = options.more_follows;
  o.parse_special = options.parse_special;
  const std::vector<int32_t> ids = impl_->tokenizer.encode(text, o);
  return {ids.begin(), ids.end()};
}

std::string Tokenizer::decode(std::span<const uint32_t> ids) const {
  std::vector<int32_t> signed_ids;
  signed_ids.reserve(ids.size());
  for (uint32_t id : ids) signed_ids.push_back(checked_id(impl_->tokenizer, id));
  return impl_->tokenizer.decode(signed_ids);
}

std::string_view Tokenizer::piece(uint32_t id) const {
  return impl_->tokenizer.piece(checked_id(impl_->tokenizer, id));
}

uint32_t Tokenizer::size() const { return static_cast<uint32_t>(impl_->tokenizer.size()); }
std::optional<uint32_t> Tokenizer::bos() const { return unsigned_id(impl_->tokenizer.bos()); }
std::optional<uint32_t> Tokenizer::eos() const { return unsigned_id(impl_->tokenizer.eos()); }
const std::vector<uint32_t>& Tokenizer::stop_tokens() const { return impl_->stop_tokens; }

}  // namespace attendre
