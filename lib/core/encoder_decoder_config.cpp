#include "core/try.hpp"

#include <attendre/encoder_decoder.hpp>
#include <attendre/error.hpp>

namespace attendre {

Status EncoderDecoderConfig::check() const {
  ATTENDRE_TRY(encoder.check());
  ATTENDRE_TRY(decoder.check());
  ATTENDRE_REQUIRE(encoder_memory >= 1, "the encoder output memory needs a capacity O of at least 1");
  ATTENDRE_REQUIRE(encoder.hidden == decoder.hidden, "encoder and decoder hidden sizes differ");
  bool cross = false;
  for (size_t l = 0; l < decoder.blocks.size(); ++l) {
    const BlockConfig& b = decoder.blocks[l];
    if (!b.cross_attention) continue;
    cross = true;
    ATTENDRE_REQUIRE(b.attention.kv.capacity >= encoder_memory, "decoder block " + std::to_string(l) +
                                                           ": cross-attention M must hold the encoder memory O=" +
                                                           std::to_string(encoder_memory));
  }
  ATTENDRE_REQUIRE(cross, "the decoder has no cross-attention block");
  return {};
}

}  // namespace attendre
