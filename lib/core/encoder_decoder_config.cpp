#include "core/fail.hpp"

#include <attendre/encoder_decoder.hpp>
#include <attendre/error.hpp>

namespace attendre {

void EncoderDecoderConfig::validate() const {
  encoder.validate();
  decoder.validate();
  require(encoder_memory >= 1, "the encoder output memory needs a capacity O of at least 1");
  require(encoder.hidden == decoder.hidden, "encoder and decoder hidden sizes differ");
  bool cross = false;
  for (size_t l = 0; l < decoder.blocks.size(); ++l) {
    const BlockConfig& b = decoder.blocks[l];
    if (!b.cross_attention) continue;
    cross = true;
    require(b.attention.kv.capacity >= encoder_memory, "decoder block " + std::to_string(l) +
                                                           ": cross-attention M must hold the encoder memory O=" +
                                                           std::to_string(encoder_memory));
  }
  require(cross, "the decoder has no cross-attention block");
}

}  // namespace attendre
