// The encoder-decoder on the device (encoder_decoder.hpp): the encoder's
// final rows enter the encoder output memory inside the encoder's own
// command buffers, and the decoder's cross-attention blocks load it without
// a trip through the host.
#pragma once

#include <attendre/context.hpp>
#include <attendre/encoder_decoder.hpp>

#include <memory>
#include <vector>

namespace attendre {
namespace gpu {

class EncoderDecoder final : public attendre::EncoderDecoder {
 public:
  // Fails as gpu::Stack::create, for either stack, or for the config.
  static Result<std::unique_ptr<EncoderDecoder>> create(Context& context, const EncoderDecoderConfig& config,
                                                        WeightSource& weights);
  ~EncoderDecoder() override;
  const EncoderDecoderConfig& config() const override;
  Status encode(const StackChunk& chunk) override;
  Status finish_encoding() override;
  Result<StackOutput> decode(const StackChunk& one, const StackRequest& request = {}) override;
  std::vector<int64_t> encoder_memory_positions() const override;

 private:
  struct Impl;
  explicit EncoderDecoder(std::unique_ptr<Impl>&& impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace gpu
}  // namespace attendre
