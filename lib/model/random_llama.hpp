// A llama-architecture GGUF model of any shape with seeded random weights,
// laid out with the project's GGUF writer as llama.cpp's converters lay one
// out (the llama.* keys lib/model reads and llama.cpp's loader reads, 2-D
// tensors in the chosen encoding, 1-D ones in F32). What it is for: timing
// a real model's shape (SmolLM-135M) on attendre and on llama.cpp with the
// same file when the real weights are not at hand; speed does not depend
// on what the weights are.
//
// The tensors are the ones model_spec() names for the stack the file
// describes, so the file holds exactly what the loader checks for; their
// values are RandomWeights' (the same name and seed give the same values
// everywhere), encoded by the GGUF quantizers (lib/gguf/quant.hpp).
#pragma once

#include "gguf/gguf.hpp"
#include "gguf/gguf_writer.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace attendre::gguf {

struct RandomLlamaShape {
  uint32_t hidden = 0, blocks = 0, heads = 0, heads_kv = 0, ffn = 0;
  uint32_t context = 2048;  // llama.context_length
  bool tied_head = true;    // no output.weight: the LM head is token_embd.weight
  double rope_theta = 10000.0;
  float norm_eps = 1e-5f;
};

// The shapes known by name: "smollm-135m" (HuggingFaceTB/SmolLM-135M:
// hidden 576, 30 blocks, heads 9 / 3 KV, FFN 1536, context 2048, tied
// head, RMSNorm eps 1e-5, RoPE base 10000); nullopt for another name.
std::optional<RandomLlamaShape> named_llama_shape(std::string_view name);
inline constexpr const char* kLlamaShapeNames = "smollm-135m";

struct RandomLlamaOptions {
  RandomLlamaShape shape;
  TensorType weights = TensorType::f16;  // of the 2-D tensors (the embedding table too)
  uint64_t seed = 0;
  // Every tokenizer.* key is copied from it (a vocabulary-only GGUF such as
  // llama.cpp's ggml-vocab-gpt-2.gguf, or a model); null: a byte-level BPE
  // vocabulary of the 256 byte characters and <|endoftext|>, no merges.
  const File* vocabulary = nullptr;
  std::string name = "attendre random llama";  // general.name
};

// The longest context written: the positions a stack counts (2^31), so
// that the loader's default full-context memory fits its 32-bit counts.
inline constexpr uint32_t kMaxRandomLlamaContext = uint32_t{1} << 31;
// The most bytes of tensor data written: the writer holds the file in memory.
inline constexpr uint64_t kMaxRandomLlamaBytes = uint64_t{8} << 30;

// The file's writer with its metadata and every tensor added. Fails with a
// one-line message: invalid_argument for a shape the loader would refuse
// (a zero count, a context past kMaxRandomLlamaContext, heads that do not
// split the hidden width or KV heads that do not split the heads, an odd
// head width, rows that do not split into
// the encoding's blocks, more than kMaxRandomLlamaBytes), unsupported for an
// encoding without a quantizer, malformed_input naming the vocabulary file
// when it has no tokenizer.ggml.tokens.
Result<Writer> random_llama(const RandomLlamaOptions& options);

}  // namespace attendre::gguf
