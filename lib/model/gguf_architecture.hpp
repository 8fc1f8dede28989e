// What a GGUF file's metadata says about its model: general.architecture and
// the <arch>.* hyper-parameters as the model's half of its stack
// configurations, checked against the file's tensors (every tensor a stack
// needs is there, with the shape the hyper-parameters give it and an
// encoding attendre decodes, and no tensor a stack would silently ignore).
#pragma once

#include "gguf/gguf.hpp"
#include "gguf/gguf_weights.hpp"

#include <attendre/model.hpp>
#include <attendre/stack.hpp>

#include <map>
#include <optional>
#include <string>

namespace attendre::gguf {

struct ModelDescription {
  ModelInfo info;
  // The decoder (llama, qwen2, qwen3, phi3), the encoder (t5encoder), or an
  // encoder-decoder's encoder (t5); memory fields: default_memory's.
  StackConfig stack;
  // An encoder-decoder's decoder: causal self-attention blocks 2l and
  // cross-attention blocks 2l + 1; memory fields: placeholders that
  // apply_encoder_decoder_memory() replaces.
  std::optional<StackConfig> decoder;
  MemoryPlan default_memory;  // of `stack`
  // How the stacks' names (with "enc." and "dec." in front for an
  // encoder-decoder, as gpu::EncoderDecoder asks) read in the file, and the
  // vectors handed out scaled (gguf_weights.hpp).
  TensorNaming naming;
  std::map<std::string, double> scaled;
  RowSlices slices;  // stack matrices read as rows of fused file tensors (phi3)
};

// Fails with a one-line message naming the file and the key or tensor:
// malformed_input (missing or inconsistent), unsupported (an architecture,
// RoPE scaling type, mixture of experts or encoding not run).
Result<ModelDescription> describe_model(const File& file, WeightType storage);

// The architecture-specific halves (gguf_architecture.cpp: llama, qwen2, qwen3, phi3;
// gguf_gemma.cpp: what gemma2 and gemma3 change in the decoder's blocks;
// gguf_t5.cpp: t5, t5encoder).
Result<ModelDescription> describe_decoder(const File& file, const std::string& architecture, WeightType storage);
class Metadata;
Status describe_gemma(const Metadata& m, const std::string& architecture, StackConfig& config);
Result<ModelDescription> describe_t5(const File& file, const std::string& architecture, WeightType storage);

// Fails with the file's malformed_input when `config` is one the stack
// itself refuses (a context past 32-bit counts, ...): the file's fault.
Status validate_as_file(const File& file, const StackConfig& config);

}  // namespace attendre::gguf
