#include "model/model_tokenizer.hpp"

#include "core/try.hpp"

#include <algorithm>

namespace attendre {
namespace {

Result<int32_t> checked_id(const tokenizer::Pipeline& tokenizer, uint32_t id) {
  ATTENDRE_REQUIRE(id < static_cast<uint32_t>(tokenizer.size()), "token id " + std::to_string(id) +
                                                                      " is out of range: the vocabulary has " +
                                                                      std::to_string(tokenizer.size()) + " tokens");
  return static_cast<int32_t>(id);
}

std::optional<uint32_t> unsigned_id(std::optional<int32_t> id) {
  return id ? std::optional<uint32_t>(static_cast<uint32_t>(*id)) : std::nullopt;
}

}  // namespace

Result<Tokenizer> TokenizerAccess::from_file(const gguf::File& file) {
  ATTENDRE_TRY_ASSIGN(tokenizer::Pipeline built, tokenizer::Pipeline::from_gguf(file));
  auto impl = std::make_shared<Tokenizer::Impl>(Tokenizer::Impl{std::move(built), {}});
  const int32_t size = impl->tokenizer.size();
  if (const auto eos = impl->tokenizer.eos()) impl->stop_tokens.push_back(static_cast<uint32_t>(*eos));
  // Chat models end a turn with their own token (Llama 3's <|eot_id|>,
  // Qwen2's <|im_end|>), read as the vocabulary reads every special id.
  ATTENDRE_TRY_ASSIGN(const std::optional<int32_t> eot,
                      tokenizer::special_token_id(file, "tokenizer.ggml.eot_token_id", static_cast<size_t>(size)));
  if (eot && std::find(impl->stop_tokens.begin(), impl->stop_tokens.end(), static_cast<uint32_t>(*eot)) ==
                 impl->stop_tokens.end())
    impl->stop_tokens.push_back(static_cast<uint32_t>(*eot));
  return Tokenizer(std::move(impl));
}

Result<Tokenizer> Tokenizer::open(const std::filesystem::path& path) {
  ATTENDRE_TRY_ASSIGN(const gguf::File file, gguf::File::open(path));
  return TokenizerAccess::from_file(file);
}

size_t Tokenizer::continuation_point(std::string_view text, size_t limit) {
  return tokenizer::Pipeline::continuation_point(text, limit);
}

Result<std::vector<uint32_t>> Tokenizer::encode(std::string_view text, const EncodeOptions& options) const {
  tokenizer::EncodeOptions o;
  o.add_bos = options.add_bos;
  o.continuation = options.continuation;
  o.more_follows = options.more_follows;
  o.parse_special = options.parse_special;
  ATTENDRE_TRY_ASSIGN(const std::vector<int32_t> ids, impl_->tokenizer.encode(text, o));
  return std::vector<uint32_t>(ids.begin(), ids.end());
}

Result<std::string> Tokenizer::decode(std::span<const uint32_t> ids) const {
  std::vector<int32_t> signed_ids;
  signed_ids.reserve(ids.size());
  for (uint32_t id : ids) {
    ATTENDRE_TRY_ASSIGN(const int32_t checked, checked_id(impl_->tokenizer, id));
    signed_ids.push_back(checked);
  }
  return impl_->tokenizer.decode(signed_ids);
}

Result<std::string_view> Tokenizer::piece(uint32_t id) const {
  ATTENDRE_TRY_ASSIGN(const int32_t checked, checked_id(impl_->tokenizer, id));
  return impl_->tokenizer.piece(checked);
}

uint32_t Tokenizer::size() const { return static_cast<uint32_t>(impl_->tokenizer.size()); }
std::optional<uint32_t> Tokenizer::bos() const { return unsigned_id(impl_->tokenizer.bos()); }
bool Tokenizer::adds_bos() const { return impl_->tokenizer.vocabulary().add_bos; }
std::optional<uint32_t> Tokenizer::eos() const { return unsigned_id(impl_->tokenizer.eos()); }
const std::vector<uint32_t>& Tokenizer::stop_tokens() const { return impl_->stop_tokens; }

}  // namespace attendre
