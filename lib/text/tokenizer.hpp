// Tokenizers of GGUF vocabularies, with the behaviour of llama.cpp (whose
// test vectors they pass) and of the reference tokenizers it follows:
//   tokenizer.ggml.model = "llama": SentencePiece BPE over the token scores,
//     spaces escaped as U+2581, byte fallback to the <0xXX> tokens;
//   tokenizer.ggml.model = "gpt2": byte-level BPE over the merge ranks, after
//     the pre-tokenizer regexes that tokenizer.ggml.pre names (run by PCRE2
//     with Unicode properties; see tokenizer_pretokenizers.cpp for the table);
//   tokenizer.ggml.model = "t5": the unigram model (Viterbi over the scores)
//     after SentencePiece's normaliser (precompiled charsmap, whitespace).
//
// Text goes in and comes out as UTF-8 bytes. Special tokens: user-defined
// tokens (type 4) are always split out of the text before the model runs, as
// in llama.cpp and Hugging Face; control and unknown tokens (types 3 and 2)
// only when EncodeOptions::parse_special asks for it, otherwise their text is
// ordinary text. Several occurrences are claimed longest token first. The
// types are those llama.cpp gives: vocabulary_from_gguf makes the tokens
// that end generation (</s>, <|endoftext|>, <|end|>, ...) control whatever
// their GGUF type, as llama.cpp does by their text (Phi-3's </s> is
// user-defined in its file, yet its text is not split out unparsed).
#pragma once

#include <attendre/status.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attendre::gguf {
class File;
}

namespace attendre::tokenizer {

enum class Model {
  sentencepiece_bpe,  // "llama"
  byte_level_bpe,     // "gpt2"
  unigram,            // "t5"
};

// tokenizer.ggml.token_type values (llama.cpp's llama_token_type).
enum class TokenType : int32_t {
  undefined = 0, normal = 1, unknown = 2, control = 3, user_defined = 4, unused = 5, byte = 6,
};

// Everything a tokenizer needs, as plain data: vocabulary_from_gguf() fills
// it from a file, tests build small ones by hand. Each field names its GGUF key.
struct Vocabulary {
  Model model = Model::sentencepiece_bpe;  // tokenizer.ggml.model
  std::string pre;                         // tokenizer.ggml.pre ("" when absent: llama.cpp's "default")
  std::vector<std::string> tokens;         // tokenizer.ggml.tokens: the text of each id
  std::vector<float> scores;               // tokenizer.ggml.scores: empty (all 0) or one per token
  std::vector<TokenType> types;            // tokenizer.ggml.token_type: empty (all normal) or one per token,
                                           // with llama.cpp's overrides by text (vocabulary_from_gguf)
  std::vector<std::string> merges;         // tokenizer.ggml.merges: "left right", rank = position
  std::string precompiled_charsmap;        // tokenizer.ggml.precompiled_charsmap (unigram), raw bytes
  std::optional<int32_t> bos;              // tokenizer.ggml.bos_token_id
  std::optional<int32_t> eos;              // tokenizer.ggml.eos_token_id
  std::optional<int32_t> unknown;          // tokenizer.ggml.unknown_token_id
  std::optional<int32_t> padding;          // tokenizer.ggml.padding_token_id
  bool add_bos = false;                    // tokenizer.ggml.add_bos_token
  bool add_eos = false;                    // tokenizer.ggml.add_eos_token
  bool add_space_prefix = false;           // tokenizer.ggml.add_space_prefix (SentencePiece and unigram)
  bool remove_extra_whitespaces = false;   // tokenizer.ggml.remove_extra_whitespaces (unigram)
  // Whether the model's own decoder drops spaces before punctuation
  // (Hugging Face's clean_up_tokenization_spaces); see DecodeOptions.
  bool clean_spaces = false;
  // Special tokens that swallow the ASCII whitespace before (lstrip) or
  // after (rstrip) them when split out of the text; llama.cpp sets these by
  // model name (Phi-3, nomic-bert-moe's <mask>) and so does the loader.
  std::vector<int32_t> lstrip, rstrip;
};

// Fills a Vocabulary from the tokenizer.ggml.* keys of `file`, with
// llama.cpp's defaults for absent keys: "llama" adds BOS (id 1, EOS 2,
// unknown 0) and a space prefix; "gpt2" adds BOS only for the Llama-3 family
// of pre-tokenizers; "t5" adds EOS (id 1, unknown 2). A special id of
// 0xFFFFFFFF (or -1) means "none". Token types and strip attributes get
// llama.cpp's fix-ups by token text and model name. Fails malformed_input naming the key on
// a missing or ill-typed key, unsupported on an unknown model.
Result<Vocabulary> vocabulary_from_gguf(const gguf::File& file);

// The special token id at `key` (tokenizer.ggml.eot_token_id, ...) as the
// vocabulary reads it: nullopt when absent or "none" (0xFFFFFFFF, -1),
// malformed_input naming the key and its value when it is not a token of
// the `token_count`.
Result<std::optional<int32_t>> special_token_id(const gguf::File& file, std::string_view key, size_t token_count);

struct EncodeOptions {
  std::optional<bool> add_bos;  // nullopt: as the vocabulary's add_bos says
  std::optional<bool> add_eos;  // nullopt: as the vocabulary's add_eos says
  bool parse_special = false;   // control and unknown tokens' text becomes their ids
  // The text continues a document encoded before (streaming a long text in
  // pieces cut at continuation_point()s): no BOS, no space prefix at its start.
  bool continuation = false;
  bool more_follows = false;  // text follows this piece: no EOS at its end
};

struct DecodeOptions {
  // Control and unknown tokens as their text ("<s>"); by default they render
  // as nothing. User-defined tokens always render as their text.
  bool render_special = false;
  // Undo add_space_prefix: the first piece of text after the start and after
  // each special token the encoder splits out (control, user-defined, and
  // for SentencePiece BPE unknown) loses one leading space, mirroring the
  // encoder, which adds one there. So for SentencePiece and byte-level BPE
  // decode(encode(x)) == x, with BOS or not, and with parse_special when
  // decoding with render_special too (bar tokens that strip whitespace);
  // llama.cpp instead keeps the space when the sequence starts with BOS.
  // (SentencePiece's escaping is not reversible for U+2581 itself, which
  // comes back as a space, as in SentencePiece and llama.cpp.)
  // Unigram decoding gives the normalised text.
  bool strip_space_prefix = true;
  // Hugging Face's clean_up_tokenization_spaces as llama.cpp does it (" ." ->
  // ".", " 's" -> "'s", ...): lossy, so off by default; Vocabulary::clean_spaces
  // says whether the model's own decoder does it.
  bool clean_up_spaces = false;
};

// The whole tokenizer, named Pipeline so that it is not confused with the
// public attendre::Tokenizer handle over it (model/model_tokenizer.hpp):
// special tokens, then the vocabulary's model on each fragment.
// Immutable once built: encode, decode and the lookups may run on one
// Pipeline from several threads at once. Move-only. Each fallible call
// returns a Result.
class Pipeline {
 public:
  // Checks `vocabulary` (array lengths, ids in range, merges naming known
  // tokens, duplicate texts, a supported pre-tokenizer) and builds the
  // lookup structures. Fails malformed_input naming the GGUF key, or
  // unsupported for a pre-tokenizer this library does not know.
  static Result<Pipeline> build(Vocabulary vocabulary);
  // vocabulary_from_gguf, then build; messages name the file.
  static Result<Pipeline> from_gguf(const gguf::File& file);

  Pipeline(Pipeline&&) noexcept;
  Pipeline& operator=(Pipeline&&) noexcept;
  ~Pipeline();

  // The ids of `utf8`. Fails invalid_argument naming the byte offset of the
  // first invalid UTF-8 sequence, and when BOS or EOS is asked for but the
  // vocabulary has none. Empty text gives no ids (besides BOS/EOS).
  Result<std::vector<int32_t>> encode(std::string_view utf8, const EncodeOptions& options = {}) const;
  // The bytes `ids` stand for (not necessarily valid UTF-8 when the ids end
  // inside a character). Fails invalid_argument on an id out of range.
  Result<std::string> decode(std::span<const int32_t> ids, const DecodeOptions& options = {}) const;
  // The bytes one token stands for on its own (no prefix-space stripping;
  // for streaming output, valid while the Pipeline lives); control and
  // unknown tokens give "" unless `render_special`.
  Result<std::string_view> piece(int32_t id, bool render_special = false) const;
  Result<TokenType> type(int32_t id) const;  // invalid_argument when out of range


  const Vocabulary& vocabulary() const;
  // See attendre::Tokenizer::continuation_point: the last space at or before
  // `limit` between an ASCII letter or digit and an ASCII letter, 0 if none.
  // Every pre-tokenizer starts a word at such a space (" ?\p{L}+" and its
  // kin) and no SentencePiece or unigram piece spans one.
  static size_t continuation_point(std::string_view text, size_t limit);
  int32_t size() const;  // number of tokens
  std::optional<int32_t> bos() const;
  std::optional<int32_t> eos() const;
  std::optional<int32_t> unknown() const;
  std::optional<int32_t> find(std::string_view text) const;  // the id whose text is exactly `text`

 private:
  struct Impl;
  explicit Pipeline(std::unique_ptr<const Impl> impl);
  std::unique_ptr<const Impl> impl_;
};

}  // namespace attendre::tokenizer
