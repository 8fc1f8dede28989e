// A language model from a GGUF file: its architecture and hyper-parameters
// as a StackConfig, its tensors as a WeightSource over the memory-mapped
// file (no copy: each tensor keeps its file encoding, which the device
// decodes in its kernels), and its tokenizer. The memories (S, N, M, K,
// policy, sinks) are the caller's: stack_config() applies a MemoryPlan.
//
// Architectures (general.architecture): llama (Llama 2/3, TinyLlama, SmolLM,
// llama2.c exports; "normal" RoPE pairs, optional biases; linear RoPE
// scaling and llama3's rope_freqs.weight) and qwen2 (NeoX RoPE, q/k/v
// biases), decoders that run as one stack; t5 (T5, FLAN-T5, mT5: relative
// position buckets, an encoder-decoder that runs as gpu::EncoderDecoder)
// and t5encoder (its encoder alone, a bidirectional stack). Everything else
// (another architecture, YaRN or LongRoPE scaling, ...) is refused with a
// one-line Error naming the key or tensor.
//
// Each fallible call returns a Result (include/attendre/status.hpp);
// Result::value_or_throw() throws its failure as attendre::Error where the
// application has exceptions.
#pragma once

#include <attendre/encoder_decoder.hpp>
#include <attendre/memory_plan.hpp>
#include <attendre/stack.hpp>
#include <attendre/tensor.hpp>
#include <attendre/tokenizer.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

namespace attendre {

// How a model runs: one causal stack (stack_config(), generating with
// generate()), an encoder and a decoder around the encoder output memory
// (encoder_decoder_config()), or one bidirectional stack whose final hidden
// states are the product (stack_config(); its "logits" are the embedding
// table's products, not a language model's).
enum class ModelKind { decoder, encoder_decoder, encoder };

// What the file says about the model besides its stacks.
struct ModelInfo {
  std::string architecture;     // general.architecture
  std::string name;             // general.name ("" when absent)
  ModelKind kind = ModelKind::decoder;
  // <arch>.context_length: the length it was trained on (LM-Infinite's
  // default n_local, paper section 4; T5 files give their n_positions).
  uint32_t context_length = 0;
  // <arch>.block_count: the blocks a MemoryPlan configures (the encoder's
  // for an encoder-decoder).
  uint32_t blocks = 0;
  // Encoder-decoders: <arch>.decoder_block_count (default block_count)
  // decoder layers, each two decoder blocks (self- then cross-attention),
  // and the token decoding starts from (t5.decoder_start_token_id, else
  // the vocabulary's padding token, as T5 starts from its pad).
  uint32_t decoder_layers = 0;
  std::optional<uint32_t> decoder_start_token;
  uint64_t parameters = 0;      // elements of every tensor the stacks use
  uint64_t tensor_bytes = 0;    // their bytes in the file
};

struct ModelOptions {
  // Storage of the file's F32 matrices on the device (f16 halves them);
  // tensors in other encodings keep theirs.
  WeightType weights = WeightType::f32;
};

class Model {
 public:
  // Maps the file and reads the architecture, hyper-parameters, tensor
  // infos and tokenizer. Fails (one line, naming the file and the key or
  // tensor): io_error, malformed_input for missing keys or inconsistent
  // shapes, unsupported for architectures, RoPE scaling types or tensor
  // encodings attendre does not run.
  static Result<Model> open(const std::filesystem::path& path, const ModelOptions& options = {});

  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  const std::filesystem::path& path() const;
  const ModelInfo& info() const;
  // A decoder's or an encoder's stack with the memory plan's settings on
  // every block; invalid_argument for an encoder-decoder.
  Result<StackConfig> stack_config(const MemoryPlan& memory) const;
  // An encoder-decoder's configuration: `memory.encoder` on the encoder's
  // blocks, the decoder as apply_encoder_decoder_memory() sets it;
  // invalid_argument for the other kinds.
  Result<EncoderDecoderConfig> encoder_decoder_config(const EncoderDecoderPlan& memory) const;
  // The default plan of stack_config(), or of the encoder: chunks of 64 and
  // the full trained context (MemorySetting::full_context(context_length),
  // for encoders full_bidirectional()).
  MemoryPlan default_memory() const;
  // The tensors, by the stacks' names (an encoder-decoder's with "enc." and
  // "dec." in front, as gpu::EncoderDecoder asks for them), whatever the
  // file calls them; their bytes stay valid while the Model lives.
  WeightSource& weights();
  const Tokenizer& tokenizer() const;

 private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace attendre
