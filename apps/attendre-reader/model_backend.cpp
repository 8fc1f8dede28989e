#include "model_backend.hpp"

#include "common/human_bytes.hpp"
#include "text_source.hpp"

#include <attendre/generate.hpp>

#include <algorithm>

namespace reader {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// The end of the UTF-8 character that byte `at` of `text` belongs to.
size_t character_end(std::string_view text, size_t at) {
  while (at < text.size() && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80) ++at;
  return at;
}

// Where the token whose bytes are `piece` lies in `text`, from `cursor` on.
// A piece matches the text as it is, or past a space the tokenizer added
// (SentencePiece's prefix) or merged away; failing both (a normalizing
// tokenizer), it covers as many bytes as it has, ending on a character.
std::pair<size_t, size_t> locate(std::string_view text, size_t cursor, std::string_view piece) {
  if (piece.empty() || text.substr(cursor).starts_with(piece)) return {cursor, cursor + piece.size()};
  while (!piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
  size_t start = cursor;
  while (start < text.size() && is_space(text[start])) ++start;
  if (piece.empty()) return {cursor, cursor};
  if (text.substr(start).starts_with(piece)) return {start, start + piece.size()};
  return {start, character_end(text, std::min(text.size(), start + piece.size()))};
}

}  // namespace

void ModelTokenizer::begin_part(Part part) {
  part_ = part;
  carried_ = pending_.size();  // the previous part's trailing spaces start this one's text
  pending_start_ = 0;
}

void ModelTokenizer::feed(std::string_view text, std::vector<Token>& out) {
  pending_.append(text);
  if (pending_.size() < kPiece + carried_) return;
  size_t cut = attendre::Tokenizer::continuation_point(pending_, pending_.size());
  if (cut <= carried_) {
    if (pending_.size() < kForcedCut + carried_) return;
    cut = pending_.size();
    while (cut > carried_ && (static_cast<unsigned char>(pending_[cut - 1]) & 0xC0) == 0x80) --cut;  // inside a character
    if (cut > carried_) --cut;  // before the character's first byte
  }
  encode(cut, out);
}

void ModelTokenizer::end_part(std::vector<Token>& out) {
  size_t end = pending_.size();
  while (end > 0 && pending_[end - 1] == ' ') --end;
  if (end > carried_) encode(end, out);
}

void ModelTokenizer::end_document(std::vector<Token>& out) {
  if (!pending_.empty()) encode(pending_.size(), out);
}

void ModelTokenizer::encode(size_t end, std::vector<Token>& out) {
  const std::string_view text = std::string_view(pending_).substr(0, end);
  attendre::Tokenizer::EncodeOptions options;
  options.continuation = started_;
  options.more_follows = true;  // the answer follows the document: never an EOS before it
  started_ = true;
  // Byte i of `text` is byte pending_start_ + i - carried_ of the part
  // (carried bytes belong to the part before: clipped to its start).
  const auto part_offset = [this](size_t i) {
    return i < carried_ ? pending_start_ : pending_start_ + (i - carried_);
  };
  size_t cursor = 0;
  for (const uint32_t id : tokenizer_.encode(text, options)) {
    const auto [begin, finish] = locate(text, cursor, tokenizer_.piece(id));
    Token token;
    token.id = id;
    token.part = part_;
    token.offset = part_offset(begin);
    token.length = static_cast<uint32_t>(part_offset(finish) - token.offset);
    out.push_back(token);
    cursor = finish;
  }
  pending_start_ = part_offset(end);
  pending_.erase(0, end);
  carried_ = 0;
}

ModelBackend::ModelBackend(const std::filesystem::path& path, const ModelBackendOptions& options)
    : model_(attendre::Model::open(path, options.model)), options_(options) {}

std::string ModelBackend::description() const {
  const attendre::ModelInfo& info = model_.info();
  const std::string name = info.name.empty() ? model_.path().filename().string() : info.name;
  return name + " (" + info.architecture + ", " + std::to_string(info.blocks) + " blocks, " +
         std::to_string(info.parameters) + " parameters, " + attendre::apps::human_bytes(info.tensor_bytes) +
         " of tensors, trained on " + std::to_string(info.context_length) + " positions)";
}

attendre::StackConfig ModelBackend::stack_shape() const { return model_.stack_config(model_.default_memory()); }

std::unique_ptr<Tokenizer> ModelBackend::make_tokenizer() const {
  return std::make_unique<ModelTokenizer>(model_.tokenizer());
}

void ModelBackend::append_input(const Token& token, int64_t position, StackInputs& inputs) const {
  inputs.tokens.push_back(static_cast<uint32_t>(token.id));
  inputs.positions.push_back(position);
}

std::optional<std::string> ModelBackend::answer(attendre::TransformerStack& stack, std::span<const float> last_logits,
                                                int64_t next_position) {
  attendre::GenerateOptions options;
  options.max_tokens = options_.answer_tokens;
  options.stop_tokens = model_.tokenizer().stop_tokens();
  const attendre::GenerateResult result = attendre::generate_after(stack, last_logits, next_position, options);
  // The answer is its first line: a model that goes on past it writes a
  // new question, or more story.
  // A small model may stop inside a character, or emit stray bytes: the
  // answer keeps what is valid UTF-8 (the JSON and the report need it).
  std::string text = model_.tokenizer().decode(result.tokens);
  text.resize(utf8_prefix(text).valid);
  const size_t first = text.find_first_not_of(" \t\n");
  if (first == std::string::npos) return std::string();
  const size_t newline = text.find('\n', first);
  text = text.substr(first, newline == std::string::npos ? std::string::npos : newline - first);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\r')) text.pop_back();
  return text;
}

}  // namespace reader
