// The encoder-decoder of spec section 5: the GPU against the float64
// reference with bounded memories and an encoder memory smaller than the
// input (FIFO), and against a dense encoder-decoder forward when nothing is
// evicted and every encoder query waits for the whole input.
#include "model_checks.hpp"
#include "stack_support.hpp"
#include "support.hpp"

#include <attendre/gpu_encoder_decoder.hpp>
#include <attendre/reference/encoder_decoder.hpp>
#include <attendre/error.hpp>
#include <attendre/reference/stack.hpp>

#include <doctest/doctest.h>

using namespace attendre;

namespace {

// Decoder layers as pairs of blocks: causal self-attention without FFN,
// then cross-attention over the encoder memory with the FFN.
StackConfig decoder_config(uint32_t layers, uint32_t encoder_memory, uint32_t self_capacity) {
  StackConfig d = test::small_stack(2 * layers, {4, 2, 6}, 1, 0, self_capacity, self_capacity, Policy::lru());
  d.vocab = 29;
  for (uint32_t l = 0; l < layers; ++l) {
    BlockConfig& self = d.blocks[2 * l];
    self.ffn = 0;
    self.attention.retrieval.causal = true;
    BlockConfig& cross = d.blocks[2 * l + 1];
    cross.cross_attention = true;
    cross.rope = false;
    cross.attention.kv.capacity = encoder_memory;
    cross.attention.retrieval.top_k = encoder_memory;
    cross.attention.kv.policy = Policy::fifo();
  }
  return d;
}

StackChunk one_token(const uint32_t& token, const int64_t& position) {
  static const uint8_t valid = 1;
  StackChunk c;
  c.rows = 1;
  c.tokens = {&token, 1};
  c.positions = {&position, 1};
  c.valid = {&valid, 1};
  return c;
}

// T5's positions: relative position buckets in every self-attention block
// (bidirectional in the encoder, causal in the decoder), one table per
// stack in its block 0, no RoPE, logits unscaled; cross-attention has none.
void use_t5_buckets(EncoderDecoderConfig& c) {
  auto buckets = [](StackConfig& stack, bool bidirectional) {
    std::optional<uint32_t> owner;
    for (uint32_t l = 0; l < stack.blocks.size(); ++l) {
      BlockConfig& b = stack.blocks[l];
      b.rope = false;
      if (b.cross_attention) continue;
      b.attention.retrieval.bias = BiasKind::t5;
      b.attention.retrieval.scale = 1.0;
      b.attention.retrieval.t5.num_buckets = 8;
      b.attention.retrieval.t5.max_distance = 10;
      b.attention.retrieval.t5.bidirectional = bidirectional;
      b.t5_table_block = owner;
      if (!owner) owner = l;
    }
  };
  buckets(c.encoder, true);
  buckets(c.decoder, false);
}

// Streams `input` through both backends; decodes six tokens and compares
// (relative `epsilon`). Returns the device's logits of the six tokens.
std::vector<float> check_encoder_decoder(const EncoderDecoderConfig& c, const test::TokenStream& input,
                                         uint64_t weight_seed, double epsilon = 1e-3) {
  RandomWeights weights(weight_seed);
  reference::EncoderDecoder cpu(c, weights);
  auto device_owner = gpu::EncoderDecoder::create(test::gpu(), c, weights).value_or_throw();
  gpu::EncoderDecoder& device = *device_owner;
  for (uint32_t first = 0; first < input.rows(); first += c.encoder.chunk) {
    const StackChunk chunk = input.chunk(first, std::min(c.encoder.chunk, input.rows() - first));
    cpu.encode(chunk).or_throw();
    device.encode(chunk).or_throw();
  }
  cpu.finish_encoding().or_throw();
  device.finish_encoding().or_throw();
  std::vector<int64_t> last;
  for (uint32_t r = 0; r < input.rows(); ++r)
    if (input.valid[r]) last.push_back(input.positions[r]);
  last.erase(last.begin(), last.end() - c.encoder_memory);
  CHECK(cpu.encoder_memory_positions() == last);
  CHECK(device.encoder_memory_positions() == last);

  StackRequest request;
  request.logits = true;
  std::vector<float> decoded;
  for (uint32_t t = 0; t < 6; ++t) {
    const uint32_t token = (t * 5 + 1) % c.decoder.vocab;
    const int64_t position = t;
    const StackOutput e = cpu.decode(one_token(token, position), request).value_or_throw();
    const StackOutput a = device.decode(one_token(token, position), request).value_or_throw();
    INFO("decode " << t);
    REQUIRE(e.positions == a.positions);
    for (size_t i = 0; i < e.logits.size(); ++i) CHECK(a.logits[i] == doctest::Approx(e.logits[i]).epsilon(epsilon).scale(1.0));
    decoded.insert(decoded.end(), a.logits.begin(), a.logits.end());
  }
  test::check_no_validation_messages(test::gpu());
  return decoded;
}

// Bounded memories and an encoder memory (O = 20) smaller than the input.
EncoderDecoderConfig bounded_config() {
  EncoderDecoderConfig c;
  c.encoder = test::small_stack(2, {2, 2, 8}, 5, 6, 12, 4, Policy::lra_sum());
  c.encoder.tied_embeddings = true;
  c.encoder_memory = 20;
  c.decoder = decoder_config(2, 20, 8);
  return c;
}

}  // namespace

TEST_CASE("encoder-decoder: GPU equals the reference and the encoder memory keeps the last O outputs") {
  check_encoder_decoder(bounded_config(), test::random_tokens(47, 37, 51, 0.1), 52);
}

TEST_CASE("encoder-decoder: GPU equals the reference with T5 relative position buckets") {
  EncoderDecoderConfig c = bounded_config();
  use_t5_buckets(c);
  check_encoder_decoder(c, test::random_tokens(47, 37, 55, 0.1), 56);
}

TEST_CASE("encoder-decoder: fp16 activations in both stacks equal the reference that rounds them") {
  // The decoder's cross-attention reads the encoder's fp32 output rows
  // whatever the activations; its own normed rows are fp16 like the
  // encoder's. The rounding is in effect: the logits move from fp32's.
  EncoderDecoderConfig c = bounded_config();
  const test::TokenStream input = test::random_tokens(47, 37, 57, 0.1);
  const std::vector<float> fp32 = check_encoder_decoder(c, input, 58);
  // Within 4e-3: a final row's element that fp32 and float64 round to
  // different fp16 neighbours moves the logits read from it by one fp16
  // step of that element (measured 1.24e-3 on one of 368 logits).
  c.encoder.activations = c.decoder.activations = MemoryStorage::f16;
  const std::vector<float> fp16 = check_encoder_decoder(c, input, 58, 4e-3);
  // Measured 0.23, far past the comparison's 4e-3: a side that did not
  // round would fail it.
  CHECK(test::max_difference(fp16, fp32) > 1e-2);
}

TEST_CASE("encoder-decoder: with nothing evicted and N >= T it equals a dense encoder-decoder") {
  EncoderDecoderConfig c;
  c.encoder = test::small_stack(2, {2, 2, 8}, 4, 30, 32, 32, Policy::lfu());
  c.encoder.tied_embeddings = true;
  c.encoder_memory = 32;
  c.decoder = decoder_config(2, 32, 8);
  const test::TokenStream input = test::random_tokens(27, 37, 53, 0.1);
  RandomWeights weights(54);
  PrefixedWeights encoder_weights(weights, "enc."), decoder_weights(weights, "dec.");
  const StackOutput encoded = reference::dense_forward(c.encoder, encoder_weights, input.chunk(0, input.rows()), false);
  std::vector<uint32_t> tokens = {3, 17, 8, 25, 1};
  std::vector<int64_t> positions = {0, 1, 2, 3, 4};
  StackChunk decoded;
  decoded.rows = static_cast<uint32_t>(tokens.size());
  decoded.tokens = tokens;
  decoded.positions = positions;
  StackRequest request;
  request.logits = true;
  const StackOutput dense = reference::dense_forward(c.decoder, decoder_weights, decoded, true, request, encoded.hidden);

  std::vector<std::unique_ptr<attendre::EncoderDecoder>> models;
  models.push_back(std::make_unique<reference::EncoderDecoder>(c, weights));
  models.push_back(gpu::EncoderDecoder::create(test::gpu(), c, weights).value_or_throw());
  for (auto& m : models) {
    for (uint32_t first = 0; first < input.rows(); first += c.encoder.chunk)
      m->encode(input.chunk(first, std::min(c.encoder.chunk, input.rows() - first))).or_throw();
    m->finish_encoding().or_throw();
    CHECK(m->encoder_memory_positions() == encoded.positions);
    for (size_t t = 0; t < tokens.size(); ++t) {
      const StackOutput o = m->decode(one_token(tokens[t], positions[t]), request).value_or_throw();
      for (uint32_t v = 0; v < c.decoder.vocab; ++v)
        CHECK(o.logits[v] == doctest::Approx(dense.logits[t * c.decoder.vocab + v]).epsilon(2e-4).scale(1.0));
    }
  }
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("encoder-decoder: configurations without cross-attention or with a small cross memory are rejected") {
  EncoderDecoderConfig c;
  c.encoder = test::small_stack(1, {2, 2, 8}, 4, 2, 8, 4, Policy::fifo());
  c.encoder_memory = 16;
  c.decoder = decoder_config(1, 8, 8);
  RandomWeights weights(1);
  CHECK_THROWS_WITH_AS(reference::EncoderDecoder(c, weights), doctest::Contains("must hold the encoder memory"), Error);
  c.decoder = test::small_stack(1, {2, 2, 8}, 1, 0, 8, 8, Policy::fifo());
  CHECK_THROWS_WITH_AS(gpu::EncoderDecoder::create(test::gpu(), c, weights).value_or_throw(), doctest::Contains("no cross-attention block"), Error);
}
