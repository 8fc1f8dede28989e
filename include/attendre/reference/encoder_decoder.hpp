// The float64 reference of the encoder-decoder (spec section 5, paper
// figure 3): reference stacks for the encoder and the decoder around the
// encoder output memory, the contract gpu::EncoderDecoder is tested against.
#pragma once

#include <attendre/encoder_decoder.hpp>

#include <memory>

namespace attendre {

namespace reference {

class EncoderDecoder final : public attendre::EncoderDecoder {
 public:
  EncoderDecoder(const EncoderDecoderConfig& config, WeightSource& weights);
  ~EncoderDecoder() override;
  const EncoderDecoderConfig& config() const override;
  Status encode(const StackChunk& chunk) override;
  Status finish_encoding() override;
  Result<StackOutput> decode(const StackChunk& one, const StackRequest& request = {}) override;
  std::vector<int64_t> encoder_memory_positions() const override;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace reference

}  // namespace attendre
