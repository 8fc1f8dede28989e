// vocabulary_from_gguf: the tokenizer.ggml.* keys into a Vocabulary, with
// the defaults llama.cpp's llama_vocab::impl::load applies when a key is
// absent. Only reading happens here; the Pipeline constructor checks.
#include "core/try.hpp"
#include "gguf/gguf.hpp"
#include "text/tokenizer.hpp"
#include "text/tokenizer_pretokenizers.hpp"
#include "text/tokenizer_unicode.hpp"
#include "text/tokenizer_vocabulary.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <span>

namespace attendre::tokenizer {
namespace {

Status malformed(const gguf::File& file, const std::string& problem) {
  return malformed_input(file.path().string() + ": " + problem);
}

bool is_signed(gguf::ValueType type) {
  return type == gguf::ValueType::i8 || type == gguf::ValueType::i16 || type == gguf::ValueType::i32 ||
         type == gguf::ValueType::i64;
}

// The value of a special token id key as its type writes it, for messages.
std::string id_text(const gguf::Value& value) {
  // Values the reader made are never empty, and read_id read this one already.
  return is_signed(value.type().value()) ? std::to_string(value.as_i64("id").value())
                                             : std::to_string(value.as_u64("id").value());
}

// A special token id: absent keys give `fallback` (dropped when it does not
// fit the vocabulary, as llama.cpp does); 0xFFFFFFFF and -1, which
// converters write for "none", give nullopt. Other negative ids are kept,
// for validate() to refuse with their value.
Result<std::optional<int32_t>> read_id(const gguf::File& file, std::string_view key, std::optional<int32_t> fallback,
                                       size_t token_count) {
  using Id = std::optional<int32_t>;
  const std::optional<gguf::Value> value = file.find(key);
  if (!value) {
    if (fallback && static_cast<size_t>(*fallback) < token_count) return fallback;
    return Id();
  }
  // Values the reader made are never empty: their type is there.
  if (is_signed(value->type().value())) {
    ATTENDRE_TRY_ASSIGN(const int64_t id, value->as_i64(key));
    if (id == -1) return Id();
    if (id < std::numeric_limits<int32_t>::min() || id > std::numeric_limits<int32_t>::max())
      return malformed(file, std::string(key) + " = " + std::to_string(id) + " is not a token id");
    return Id(static_cast<int32_t>(id));
  }
  ATTENDRE_TRY_ASSIGN(const uint64_t id, value->as_u64(key));
  if (id == std::numeric_limits<uint32_t>::max() || id == std::numeric_limits<uint64_t>::max()) return Id();
  if (id > static_cast<uint64_t>(std::numeric_limits<int32_t>::max()))
    return malformed(file, std::string(key) + " = " + std::to_string(id) + " is not a token id");
  return Id(static_cast<int32_t>(id));
}

// validate() refuses add_bos/add_eos without their id as an absent key; a
// key that is there but says "none" is named with its value.
Status check_required_id(const gguf::File& file, std::string_view flag_key, bool required, std::string_view id_key,
                         const std::optional<int32_t>& id) {
  if (!required || id) return {};
  const std::optional<gguf::Value> value = file.find(id_key);
  if (!value) return {};
  return malformed(file, std::string(flag_key) + " is true but " + std::string(id_key) + " is " + id_text(*value) +
                             ", which means none");
}

// The special token ids llama.cpp reads besides those a Vocabulary keeps.
// Tokenizing needs none of them, but one outside the vocabulary is as
// broken as a BOS outside it (and a model's end of turn stops generation),
// so each is checked alike.
constexpr std::string_view kOtherSpecialIdKeys[] = {
    "tokenizer.ggml.eot_token_id",     "tokenizer.ggml.eom_token_id",     "tokenizer.ggml.seperator_token_id",
    "tokenizer.ggml.cls_token_id",     "tokenizer.ggml.mask_token_id",    "tokenizer.ggml.prefix_token_id",
    "tokenizer.ggml.suffix_token_id",  "tokenizer.ggml.middle_token_id",  "tokenizer.ggml.fim_pre_token_id",
    "tokenizer.ggml.fim_suf_token_id", "tokenizer.ggml.fim_mid_token_id", "tokenizer.ggml.fim_pad_token_id",
    "tokenizer.ggml.fim_rep_token_id", "tokenizer.ggml.fim_sep_token_id",
};

// Whether `value` is an array of `element` (false for a scalar).
bool is_array_of(const gguf::Value& value, gguf::ValueType element) {
  return value.type().value() == gguf::ValueType::array && value.element_type().value() == element;
}

Result<std::vector<float>> read_scores(const gguf::File& file) {
  constexpr std::string_view key = "tokenizer.ggml.scores";
  const std::optional<gguf::Value> value = file.find(key);
  if (!value) return std::vector<float>();
  // llama.cpp accepts integer scores too.
  if (is_array_of(*value, gguf::ValueType::i32)) {
    ATTENDRE_TRY_ASSIGN(const std::vector<int32_t> integers, file.get_i32s(key));
    return std::vector<float>(integers.begin(), integers.end());
  }
  return file.get_f32s(key);
}

Result<std::vector<TokenType>> read_types(const gguf::File& file) {
  constexpr std::string_view key = "tokenizer.ggml.token_type";
  std::vector<TokenType> types;
  if (!file.find(key)) return types;
  ATTENDRE_TRY_ASSIGN(const std::vector<int32_t> values, file.get_i32s(key));
  for (const int32_t type : values) types.push_back(static_cast<TokenType>(type));
  return types;
}

Result<std::string> read_bytes(const gguf::File& file, std::string_view key) {
  const std::optional<gguf::Value> value = file.find(key);
  if (!value) return std::string();
  if (!is_array_of(*value, gguf::ValueType::u8) && !is_array_of(*value, gguf::ValueType::i8))
    return malformed(file, std::string(key) + " is not an array of bytes");
  const bool is_unsigned = is_array_of(*value, gguf::ValueType::u8);
  // An array of bytes: every element is an in-range u8 or i8 (checked at open).
  const uint64_t size = value->size().value();
  std::string bytes(size, '\0');
  for (uint64_t i = 0; i < size; ++i) {
    const gguf::Value element = value->at(i).value();
    bytes[i] = static_cast<char>(is_unsigned ? element.as_u64(key).value()
                                             : static_cast<uint64_t>(element.as_i64(key).value()));
  }
  return bytes;
}

std::string lowercase(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

bool contains_any(std::string_view text, std::initializer_list<std::string_view> parts) {
  return std::any_of(parts.begin(), parts.end(), [&](std::string_view part) { return text.find(part) != std::string_view::npos; });
}

// Whether per-token types can be read for every token: a type array of the
// wrong length is left for validate() to report.
bool types_fit(const Vocabulary& vocabulary) {
  return vocabulary.types.empty() || vocabulary.types.size() == vocabulary.tokens.size();
}

// The types llama.cpp gives some tokens by their text when it loads a
// vocabulary, over what the GGUF says; they decide which texts are split out
// of raw text (user-defined: always; control: only when special tokens are
// parsed), so they are set here, before the strip attributes, which Phi-3
// gives to the special tokens as they stand after this.
void set_types_by_text(Vocabulary& vocabulary) {
  if (!types_fit(vocabulary)) return;
  // The tokens that end generation are made control tokens: Phi-3's </s> is
  // user-defined in its GGUF, Qwen2's is normal.
  static constexpr std::string_view kEndOfGeneration[] = {
      "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
      "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
      "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
  };
  // gpt-oss's channel markers are always rendered, so always split out.
  static constexpr std::string_view kAlwaysUserDefined[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"};
  const auto is_one_of = [](std::string_view text, std::span<const std::string_view> texts) {
    return std::find(texts.begin(), texts.end(), text) != texts.end();
  };
  const auto has = [&](std::string_view text) {
    return std::find(vocabulary.tokens.begin(), vocabulary.tokens.end(), text) != vocabulary.tokens.end();
  };
  // Where <|end|> ends a message but not generation (gpt-oss's harmony
  // format, Solar Open), it is user-defined; where <|tool_response> exists
  // (Gemma 4), </s> is ordinary text.
  const bool end_is_text = (has("<|return|>") && has("<|call|>")) || (has("<|calls|>") && has("<|flush|>"));
  const bool end_of_sequence_is_text = has("<|tool_response>");
  for (size_t i = 0; i < vocabulary.tokens.size(); ++i) {
    const std::string& text = vocabulary.tokens[i];
    std::optional<TokenType> type;
    if (text == "<|end|>" && end_is_text) type = TokenType::user_defined;
    else if (text == "</s>" && end_of_sequence_is_text) type = TokenType::normal;
    else if (is_one_of(text, kEndOfGeneration)) type = TokenType::control;
    else if (is_one_of(text, kAlwaysUserDefined)) type = TokenType::user_defined;
    if (!type || token_type(vocabulary, static_cast<int32_t>(i)) == *type) continue;
    if (vocabulary.types.empty()) vocabulary.types.assign(vocabulary.tokens.size(), TokenType::normal);
    vocabulary.types[i] = *type;
  }
}

// Per-token attributes GGUF does not store, set by name as llama.cpp does.
Status set_strip_tokens(const gguf::File& file, Vocabulary& vocabulary) {
  if (!types_fit(vocabulary)) return {};
  const auto id_of = [&](std::string_view text) -> std::optional<int32_t> {
    const auto found = std::find(vocabulary.tokens.begin(), vocabulary.tokens.end(), text);
    if (found == vocabulary.tokens.end()) return std::nullopt;
    return static_cast<int32_t>(found - vocabulary.tokens.begin());
  };
  ATTENDRE_TRY_ASSIGN(const std::string general_name, file.get_string("general.name", ""));
  const std::string name = lowercase(general_name);
  ATTENDRE_TRY_ASSIGN(const std::string architecture, file.get_string("general.architecture", ""));
  if (contains_any(vocabulary.pre, {"jina-v2-de", "jina-v2-es", "jina-v2-code"}) ||
      contains_any(architecture, {"nomic-bert-moe", "jina-bert-v3"})) {
    if (const auto mask = id_of("<mask>")) vocabulary.lstrip.push_back(*mask);
  } else if (contains_any(name, {"phi-3", "phi3"})) {
    // Phi-3's special tokens eat the whitespace after them, bar these three.
    const auto kept = {id_of("<unk>"), id_of("<s>"), id_of("<|endoftext|>")};
    for (size_t i = 0; i < vocabulary.tokens.size(); ++i) {
      const auto id = static_cast<int32_t>(i);
      const bool special = is_special(token_type(vocabulary, id));
      const bool is_kept = std::find(kept.begin(), kept.end(), std::optional<int32_t>(id)) != kept.end();
      if ((special || vocabulary.tokens[i] == "</s>") && !is_kept) vocabulary.rstrip.push_back(id);
    }
  } else if (contains_any(name, {"modern-bert"})) {
    if (const auto mask = id_of("[MASK]")) vocabulary.lstrip.push_back(*mask);
  }
  return {};
}

}  // namespace

Result<Vocabulary> vocabulary_from_gguf(const gguf::File& file) {
  Vocabulary vocabulary;
  ATTENDRE_TRY_ASSIGN(const std::string model, file.get_string("tokenizer.ggml.model"));
  ATTENDRE_TRY_ASSIGN(vocabulary.pre, file.get_string("tokenizer.ggml.pre", ""));
  ATTENDRE_TRY_ASSIGN(vocabulary.tokens, file.get_strings("tokenizer.ggml.tokens"));
  const size_t count = vocabulary.tokens.size();
  std::optional<int32_t> bos, eos, unknown, padding;
  bool add_bos = false, add_eos = false, add_space_prefix = false;
  if (model == "llama") {
    vocabulary.model = Model::sentencepiece_bpe;
    bos = 1, eos = 2, unknown = 0;
    add_bos = true, add_space_prefix = true;
  } else if (model == "gpt2") {
    vocabulary.model = Model::byte_level_bpe;
    ATTENDRE_TRY_ASSIGN(vocabulary.merges, file.get_strings("tokenizer.ggml.merges"));
    // An unknown pre-tokenizer is reported by the Pipeline, which names
    // the supported ones.
    if (const PreTokenizerSpec* spec = find_pre_tokenizer(vocabulary.pre)) {
      add_bos = spec->add_bos;
      vocabulary.clean_spaces = spec->clean_spaces;
    }
  } else if (model == "t5") {
    vocabulary.model = Model::unigram;
    eos = 1, unknown = 2, padding = 0;
    add_eos = true;
    ATTENDRE_TRY_ASSIGN(vocabulary.precompiled_charsmap, read_bytes(file, "tokenizer.ggml.precompiled_charsmap"));
  } else {
    return Status(ErrorCode::unsupported, file.path().string() + ": tokenizer.ggml.model '" +
                                              unicode::printable(model) + "' is not supported (llama, gpt2, t5)");
  }
  ATTENDRE_TRY_ASSIGN(vocabulary.scores, read_scores(file));
  ATTENDRE_TRY_ASSIGN(vocabulary.types, read_types(file));
  ATTENDRE_TRY_ASSIGN(vocabulary.bos, read_id(file, "tokenizer.ggml.bos_token_id", bos, count));
  ATTENDRE_TRY_ASSIGN(vocabulary.eos, read_id(file, "tokenizer.ggml.eos_token_id", eos, count));
  ATTENDRE_TRY_ASSIGN(vocabulary.unknown, read_id(file, "tokenizer.ggml.unknown_token_id", unknown, count));
  ATTENDRE_TRY_ASSIGN(vocabulary.padding, read_id(file, "tokenizer.ggml.padding_token_id", padding, count));
  for (const std::string_view key : kOtherSpecialIdKeys) ATTENDRE_TRY(special_token_id(file, key, count));
  ATTENDRE_TRY_ASSIGN(vocabulary.add_bos, file.get_bool("tokenizer.ggml.add_bos_token", add_bos));
  ATTENDRE_TRY_ASSIGN(vocabulary.add_eos, file.get_bool("tokenizer.ggml.add_eos_token", add_eos));
  ATTENDRE_TRY(check_required_id(file, "tokenizer.ggml.add_bos_token", vocabulary.add_bos, "tokenizer.ggml.bos_token_id",
                                 vocabulary.bos));
  ATTENDRE_TRY(check_required_id(file, "tokenizer.ggml.add_eos_token", vocabulary.add_eos, "tokenizer.ggml.eos_token_id",
                                 vocabulary.eos));
  ATTENDRE_TRY_ASSIGN(vocabulary.add_space_prefix,
                      file.get_bool("tokenizer.ggml.add_space_prefix", add_space_prefix));
  ATTENDRE_TRY_ASSIGN(vocabulary.remove_extra_whitespaces,
                      file.get_bool("tokenizer.ggml.remove_extra_whitespaces", false));
  set_types_by_text(vocabulary);
  ATTENDRE_TRY(set_strip_tokens(file, vocabulary));
  return vocabulary;
}

Result<std::optional<int32_t>> special_token_id(const gguf::File& file, std::string_view key, size_t token_count) {
  ATTENDRE_TRY_ASSIGN(const std::optional<int32_t> id, read_id(file, key, std::nullopt, token_count));
  if (!id) return id;
  Status in_range = check_token_id(*id, token_count, key);
  if (!in_range.ok()) return std::move(in_range).within(file.path().string());
  return id;
}

}  // namespace attendre::tokenizer
