// The tokenizer of a GGUF model, for applications: text to token ids and
// back, as llama.cpp does it for the vocabulary's model (SentencePiece BPE,
// byte-level BPE with the file's pre-tokenizer, or T5 unigram). Ids are the
// uint32 ids a stack takes. A handle: copies share one immutable tokenizer,
// which several threads may use at once.
//
// Each fallible call returns a Result (include/attendre/status.hpp);
// Result::value_or_throw() throws its failure as attendre::Error where the
// application has exceptions.
#pragma once

#include <attendre/status.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace attendre {

class Tokenizer {
 public:
  // The vocabulary of the GGUF file at `path` (a model or a vocabulary-only
  // file). Fails io_error, malformed_input naming the key, or unsupported
  // for a tokenizer model or pre-tokenizer attendre lacks.
  static Result<Tokenizer> open(const std::filesystem::path& path);

  struct EncodeOptions {
    std::optional<bool> add_bos;  // nullopt: as the vocabulary says (tokenizer.ggml.add_bos_token)
    bool parse_special = false;   // control tokens' text ("<s>") becomes their ids
    // A document cut at continuation_point()s and encoded piece by piece
    // gives the ids of the whole when every piece but the first is a
    // `continuation` (no BOS, no space prefix at its start) and every piece
    // but the last says `more_follows` (no EOS at its end).
    bool continuation = false;
    bool more_follows = false;
  };
  // The ids of UTF-8 `text`. Fails invalid_argument naming the byte offset
  // of invalid UTF-8, or when BOS is asked for and the vocabulary has none.
  Result<std::vector<uint32_t>> encode(std::string_view text, const EncodeOptions& options) const;
  Result<std::vector<uint32_t>> encode(std::string_view text) const { return encode(text, EncodeOptions{}); }
  // Where `text` may be cut so that its pieces, encoded one after the other
  // (all but the first with `continuation`), give the ids of the whole: the
  // offset of the last space at or before `limit` that follows an ASCII
  // letter or digit and precedes an ASCII letter ("word| word"), where no
  // tokenizer attendre reads joins the two sides. 0 when there is none
  // (text without such spaces, e.g. Chinese, has to be encoded whole).
  static size_t continuation_point(std::string_view text, size_t limit);
  // The text of `ids` (control tokens render as nothing, the space the
  // encoder prefixed is dropped); invalid_argument for an id out of range.
  Result<std::string> decode(std::span<const uint32_t> ids) const;
  // The bytes token `id` stands for on its own ("" for control tokens);
  // invalid_argument for an id out of range.
  Result<std::string_view> piece(uint32_t id) const;

  uint32_t size() const;  // number of tokens
  std::optional<uint32_t> bos() const;
  // Whether encode() puts BOS first by default (tokenizer.ggml.add_bos_token):
  // where it does, a window of text read on its own starts with BOS too.
  bool adds_bos() const;
  std::optional<uint32_t> eos() const;
  // The ids that end a generation: EOS and, where the file names one, the
  // end-of-turn token (tokenizer.ggml.eot_token_id).
  const std::vector<uint32_t>& stop_tokens() const;

 private:
  struct Impl;
  friend struct TokenizerAccess;  // builds one inside the library
  explicit Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace attendre
