// The tokenizer pipeline (tokenizer::Pipeline): special tokens split out first, then the vocabulary's model
// on each text fragment; decoding through a table of each token's bytes,
// built once. See tokenizer.hpp for the contract.
#include "core/try.hpp"
#include "text/tokenizer.hpp"

#include "gguf/gguf.hpp"
#include "text/tokenizer_models.hpp"
#include "text/tokenizer_special.hpp"
#include "text/tokenizer_unicode.hpp"
#include "text/tokenizer_vocabulary.hpp"

#include <algorithm>
#include <limits>

namespace attendre::tokenizer {
namespace {

Result<std::unique_ptr<TextModel>> make_model(const Vocabulary& vocabulary, const TokenIndex& index) {
  switch (vocabulary.model) {
    case Model::sentencepiece_bpe: return make_sentencepiece_bpe(vocabulary, index);
    case Model::byte_level_bpe: return make_byte_level_bpe(vocabulary, index);
    case Model::unigram: return make_unigram(vocabulary);
  }
  return invalid_argument("tokenizer: Vocabulary::model holds no known model");
}

// The bytes a token stands for, as llama.cpp's token_to_piece renders them
// with special = true.
std::string render(const Vocabulary& vocabulary, int32_t id) {
  const std::string& text = vocabulary.tokens[static_cast<size_t>(id)];
  switch (token_type(vocabulary, id)) {
    case TokenType::control:
    case TokenType::unknown:
    case TokenType::user_defined: return text;
    case TokenType::byte: return std::string(1, static_cast<char>(*byte_of_token(text)));
    case TokenType::unused: return {};
    case TokenType::normal:
    case TokenType::undefined: break;
  }
  if (vocabulary.model == Model::byte_level_bpe) return unicode::byte_level_decode(text);
  return unicode::unescape_spaces(text);
}

// Hugging Face's clean_up_tokenization_spaces, pass for pass as llama.cpp's
// detokenize does it in place (each pass sees the previous pass's output,
// and the second blanks the space it drops, which the third then sees).
void clean_up_spaces(std::string& text) {
  if (text.empty()) return;
  size_t total = 1;
  for (size_t i = 1; i < text.size(); ++i) {  // " ?", " !", " .", " ,"
    const char c = text[i];
    if (text[i - 1] == ' ' && (c == '?' || c == '!' || c == '.' || c == ',')) --total;
    text[total++] = c;
  }
  text.resize(total);
  total = 1;
  for (size_t i = 1; i < text.size(); ++i) {  // " ' " -> "'"
    const char c = text[i];
    if (c == '\'' && i + 1 < text.size() && text[i - 1] == ' ' && text[i + 1] == ' ') {
      --total;
      text[++i] = '\0';
    }
    text[total++] = c;
  }
  text.resize(total);
  total = 1;
  for (size_t i = 1; i < text.size(); ++i) {  // " 's", " 'm", " 're", " 've"
    const char c = text[i];
    if (text[i - 1] == ' ' && c == '\'' && i + 1 < text.size()) {
      const char next = text[i + 1];
      if (next == 's' || next == 'm') {
        --total;
      } else if (i + 2 < text.size() && text[i + 2] == 'e' && (next == 'r' || next == 'v')) {
        --total;
      }
    }
    text[total++] = c;
  }
  text.resize(total);
}

}  // namespace

// Built in place by build and never moved: the index and the model
// refer to the vocabulary, the model to the index.
struct Pipeline::Impl {
  // `source` has passed validate().
  explicit Impl(Vocabulary source) : vocabulary(std::move(source)), specials(vocabulary) {}

  void render_pieces() {
    const auto count = static_cast<int32_t>(vocabulary.tokens.size());
    pieces.reserve(vocabulary.tokens.size());
    for (int32_t id = 0; id < count; ++id) pieces.push_back(render(vocabulary, id));
  }

  bool hidden(int32_t id) const {
    const TokenType type = token_type(vocabulary, id);
    return type == TokenType::control || type == TokenType::unknown;
  }

  // The tokens after which the encoder starts a new fragment (and so a new
  // space prefix): those the splitter claims. Unknown tokens count only for
  // SentencePiece BPE, whose byte fallback never emits them inside a
  // fragment; the unigram model does.
  bool ends_text(int32_t id) const {
    const TokenType type = token_type(vocabulary, id);
    return type == TokenType::control || type == TokenType::user_defined ||
           (type == TokenType::unknown && vocabulary.model == Model::sentencepiece_bpe);
  }

  bool known(int32_t id) const { return id >= 0 && static_cast<size_t>(id) < pieces.size(); }
  // `position`: where the id sits in a decoded sequence, for the message.
  Status unknown_id(int32_t id, std::optional<size_t> position = std::nullopt) const {
    const std::string where = position ? " at position " + std::to_string(*position) : "";
    return invalid_argument("tokenizer: id " + std::to_string(id) + where + " is outside the " +
                            std::to_string(pieces.size()) + " tokens");
  }

  Vocabulary vocabulary;
  TokenIndex index;
  SpecialTokenSplitter specials;
  std::unique_ptr<TextModel> model;
  std::vector<std::string> pieces;  // each token's bytes, special tokens as their text
};

Pipeline::Pipeline(std::unique_ptr<const Impl> impl) : impl_(std::move(impl)) {}

Result<Pipeline> Pipeline::build(Vocabulary vocabulary) {
  ATTENDRE_TRY(validate(vocabulary));
  auto impl = std::make_unique<Impl>(std::move(vocabulary));
  ATTENDRE_TRY_ASSIGN(impl->index, TokenIndex::build(impl->vocabulary));
  ATTENDRE_TRY_ASSIGN(impl->model, make_model(impl->vocabulary, impl->index));
  impl->render_pieces();
  return Pipeline(std::unique_ptr<const Impl>(std::move(impl)));
}

Result<Pipeline> Pipeline::from_gguf(const gguf::File& file) {
  ATTENDRE_TRY_ASSIGN(Vocabulary vocabulary, vocabulary_from_gguf(file));
  Result<Pipeline> built = build(std::move(vocabulary));
  if (built.ok()) return built;
  return std::move(built).status().within(file.path().string());
}

Pipeline::Pipeline(Pipeline&&) noexcept = default;
Pipeline& Pipeline::operator=(Pipeline&&) noexcept = default;
Pipeline::~Pipeline() = default;

size_t Pipeline::continuation_point(std::string_view text, size_t limit) {
  const auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  for (size_t i = std::min(limit, text.size() >= 2 ? text.size() - 2 : 0); i >= 1; --i)
    if (text[i] == ' ' && (letter(text[i - 1]) || digit(text[i - 1])) && letter(text[i + 1])) return i;
  return 0;
}

Result<std::vector<int32_t>> Pipeline::encode(std::string_view utf8, const EncodeOptions& options) const {
  const Vocabulary& vocabulary = impl_->vocabulary;
  if (utf8.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max()))
    return invalid_argument("tokenizer: text of " + std::to_string(utf8.size()) + " bytes exceeds 2 GiB");
  ATTENDRE_TRY(unicode::check_utf8(utf8, "tokenizer: text"));
  const bool add_bos = !options.continuation && options.add_bos.value_or(vocabulary.add_bos);
  const bool add_eos = !options.more_follows && options.add_eos.value_or(vocabulary.add_eos);
  if (add_bos && !vocabulary.bos) return invalid_argument("tokenizer: BOS asked for, but the vocabulary has none");
  if (add_eos && !vocabulary.eos) return invalid_argument("tokenizer: EOS asked for, but the vocabulary has none");
  std::vector<int32_t> ids;
  if (add_bos) ids.push_back(*vocabulary.bos);
  bool first = true;
  for (const Fragment& fragment : impl_->specials.split(utf8, options.parse_special)) {
    if (fragment.token >= 0)
      ids.push_back(fragment.token);
    else
      ATTENDRE_TRY(
          impl_->model->encode(fragment.text, vocabulary.add_space_prefix && !(first && options.continuation), ids));
    first = false;
  }
  if (add_eos) ids.push_back(*vocabulary.eos);
  return ids;
}

Result<std::string> Pipeline::decode(std::span<const int32_t> ids, const DecodeOptions& options) const {
  const Vocabulary& vocabulary = impl_->vocabulary;
  // Byte-level BPE never adds a prefix space (llama.cpp ignores the flag
  // there when encoding), so it never strips one either.
  const bool strip = options.strip_space_prefix && vocabulary.add_space_prefix &&
                     vocabulary.model != Model::byte_level_bpe;
  std::string text;
  bool text_starts = true;
  for (size_t i = 0; i < ids.size(); ++i) {
    const int32_t id = ids[i];
    if (!impl_->known(id)) return impl_->unknown_id(id, i);
    const std::string& piece = impl_->pieces[static_cast<size_t>(id)];
    if (!impl_->hidden(id) || options.render_special) {
      const bool drop_space = strip && text_starts && !impl_->ends_text(id) && !piece.empty() && piece.front() == ' ';
      text.append(piece, drop_space ? 1 : 0);
      if (!piece.empty()) text_starts = false;
    }
    if (impl_->ends_text(id)) text_starts = true;
  }
  if (options.clean_up_spaces) clean_up_spaces(text);
  return text;
}

Result<std::string_view> Pipeline::piece(int32_t id, bool render_special) const {
  if (!impl_->known(id)) return impl_->unknown_id(id);
  if (impl_->hidden(id) && !render_special) return std::string_view();
  return std::string_view(impl_->pieces[static_cast<size_t>(id)]);
}

const Vocabulary& Pipeline::vocabulary() const { return impl_->vocabulary; }
int32_t Pipeline::size() const { return static_cast<int32_t>(impl_->pieces.size()); }
std::optional<int32_t> Pipeline::bos() const { return impl_->vocabulary.bos; }
std::optional<int32_t> Pipeline::eos() const { return impl_->vocabulary.eos; }
std::optional<int32_t> Pipeline::unknown() const { return impl_->vocabulary.unknown; }

Result<TokenType> Pipeline::type(int32_t id) const {
  if (!impl_->known(id)) return impl_->unknown_id(id);
  return token_type(impl_->vocabulary, id);
}

std::optional<int32_t> Pipeline::find(std::string_view text) const {
  const int32_t id = impl_->index.find(text);
  if (id < 0) return std::nullopt;
  return id;
}

}  // namespace attendre::tokenizer
