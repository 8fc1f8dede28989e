// Encoder-decoder with an encoder output memory (spec section 5, paper
// figure 3): the encoder streams the input through bidirectional ATTENDRE
// blocks; its outputs enter a FIFO data-only memory of capacity O; once
// encoding finished, every cross-attention block of the decoder loads the
// whole memory, and decoding runs token by token. The device implementation
// is gpu_encoder_decoder.hpp's, the float64 one reference/encoder_decoder.hpp's.
#pragma once

#include <attendre/stack.hpp>

#include <memory>
#include <string>
#include <vector>

namespace attendre {

struct EncoderDecoderConfig {
  StackConfig encoder;  // tensors named "enc." + the stack names
  // Causal self-attention blocks and cross-attention blocks (cross_attention
  // = true, M >= encoder_memory), in the caller's order; tensors "dec." + names.
  StackConfig decoder;
  uint32_t encoder_memory = 0;  // O

  // The first problem named (both stacks, O, the cross-attention blocks), or ok.
  Status check() const;
};

// A WeightSource whose tensor names all start with `prefix`.
class PrefixedWeights final : public WeightSource {
 public:
  PrefixedWeights(WeightSource& inner, std::string prefix) : inner_(inner), prefix_(std::move(prefix)) {}
  Result<std::optional<ElementType>> type_of(const std::string& name, std::span<const uint64_t> shape) override {
    return inner_.type_of(prefix_ + name, shape);
  }
  Result<std::optional<TensorView>> tensor(const std::string& name, std::span<const uint64_t> shape) override {
    return inner_.tensor(prefix_ + name, shape);
  }

 private:
  WeightSource& inner_;
  std::string prefix_;
};

// Errors as values as TransformerStack: every call that can fail returns a
// Status or Result (value_or_throw() and or_throw() throw it where wanted).
class EncoderDecoder {
 public:
  virtual ~EncoderDecoder() = default;
  virtual const EncoderDecoderConfig& config() const = 0;
  // Streams a chunk through the encoder; its valid outputs enter the memory.
  virtual Status encode(const StackChunk& chunk) = 0;
  // Drains the encoder, then loads every cross-attention block.
  virtual Status finish_encoding() = 0;
  // One decoder position after finish_encoding().
  virtual Result<StackOutput> decode(const StackChunk& one, const StackRequest& request = {}) = 0;
  // Positions the encoder output memory holds, oldest first.
  virtual std::vector<int64_t> encoder_memory_positions() const = 0;

};

}  // namespace attendre
