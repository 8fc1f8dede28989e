#include "model_backend.hpp"

#include "common/human_bytes.hpp"

#include <attendre/reading.hpp>

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

void ModelTokenStream::begin_part(Part part) {
  part_ = part;
  pending_start_ = 0;
  encoder_.begin_part();
}

void ModelTokenStream::feed(std::string_view text, std::vector<Token>& out) { encoder_.feed(text, sink(out)).or_throw(); }

void ModelTokenStream::end_part(std::vector<Token>& out) { encoder_.end_part(sink(out)).or_throw(); }

void ModelTokenStream::end_document(std::vector<Token>& out) { encoder_.end_document(sink(out)).or_throw(); }

attendre::DocumentEncoder::Sink ModelTokenStream::sink(std::vector<Token>& out) {
  return [this, &out](const attendre::DocumentEncoder::Piece& piece) {
    // Byte i of the piece is byte pending_start_ + i - carried of the part
    // (carried bytes belong to the part before: clipped to its start).
    const auto part_offset = [&](size_t i) {
      return i < piece.carried ? pending_start_ : pending_start_ + (i - piece.carried);
    };
    size_t cursor = 0;
    for (const uint32_t id : piece.ids) {
      const auto [begin, finish] = locate(piece.text, cursor, encoder_.tokenizer().piece(id).value_or_throw());
      Token token;
      token.id = id;
      token.part = part_;
      token.offset = part_offset(begin);
      token.length = static_cast<uint32_t>(part_offset(finish) - token.offset);
      out.push_back(token);
      cursor = finish;
    }
    pending_start_ = part_offset(piece.text.size());
  };
}

ModelBackend::ModelBackend(const std::filesystem::path& path, const ModelBackendOptions& options)
    : model_(attendre::Model::open(path, options.model).value_or_throw()), options_(options) {}

std::string ModelBackend::description() const {
  const attendre::ModelInfo& info = model_.info();
  const std::string name = info.name.empty() ? model_.path().filename().string() : info.name;
  return name + " (" + info.architecture + ", " + std::to_string(info.blocks) + " blocks, " +
         std::to_string(info.parameters) + " parameters, " + attendre::apps::human_bytes(info.tensor_bytes) +
         " of tensors, trained on " + std::to_string(info.context_length) + " positions)";
}

attendre::StackConfig ModelBackend::stack_shape() const {
  attendre::MemoryPlan plan = model_.default_memory();
  if (options_.lm_infinite.enabled) plan.all.lm_infinite = options_.lm_infinite.resolve(model_.info().context_length);
  return model_.stack_config(plan).value_or_throw();
}

std::unique_ptr<TokenStream> ModelBackend::make_token_stream() const {
  return std::make_unique<ModelTokenStream>(model_.tokenizer());
}

void ModelBackend::append_input(const Token& token, int64_t position, StackInputs& inputs) const {
  inputs.tokens.push_back(static_cast<uint32_t>(token.id));
  inputs.positions.push_back(position);
}

std::optional<std::string> ModelBackend::answer(attendre::TransformerStack& stack, std::span<const float> last_logits,
                                                int64_t next_position) {
  // The answer is the first line of what the model generates (a model
  // that goes on past it writes a new question, or more story).
  return attendre::answer_after(stack, model_.tokenizer(), last_logits, next_position, options_.answer_tokens).value_or_throw().text;
}

}  // namespace reader
