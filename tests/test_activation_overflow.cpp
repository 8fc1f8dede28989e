// Activations that leave the float32 range on the device, or the fp16
// range where they are stored in fp16, are the numerical error naming the
// step and the stage, on every device path that runs blocks (gpu::Stack,
// its recorded steps, the encoder-decoder), never zeros or infinities handed
// out as an answer. The case that once passed silently: a norm whose sum of
// squares overflows float32 (values past ~1.8e19) normalized its rows to
// zeros, 1/sqrt(inf), which every later stage kept finite. The float64
// reference refuses what is not finite in its own arithmetic alike.
#include "app_device.hpp"
#include "scaled_weights.hpp"
#include "stack_support.hpp"
#include "support.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu_encoder_decoder.hpp>
#include <attendre/gpu_stack.hpp>
#include <attendre/reference/stack.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

namespace attendre {
namespace {

// RandomWeights' token embeddings (|x| < sqrt(3 / 24) ~ 0.35 for 24
// hidden) times 8e38: up to ~2.8e38, finite float32 values whose squares
// are not.
constexpr double kNearFloatMax = 8e38;

// The status of feeding `tokens` to `stack` chunk by chunk, then finish().
Status run_status(TransformerStack& stack, const test::TokenStream& tokens, const StackRequest& request) {
  const uint32_t S = stack.config().chunk;
  for (uint32_t first = 0; first < tokens.rows(); first += S) {
    const Result<StackOutput> out = stack.step(tokens.chunk(first, std::min(S, tokens.rows() - first)), request);
    if (!out.ok()) return out.status();
  }
  return stack.finish(request).status();
}

bool mentions(const Status& status, const std::string& part) {
  return status.message().find(part) != std::string::npos;
}

StackRequest logits_only() {
  StackRequest r;
  r.hidden = false;
  r.logits = true;
  return r;
}

TEST_CASE("activation overflow: a token embedding near the float32 maximum is a numerical error, not zero logits") {
  // The embedded rows are finite; block 0's attention norm overflows. In
  // every storage of the activations and of the memories: fp16 rows hold
  // the NaN rows as infinities, which the products turn into NaN.
  for (MemoryStorage activations : {MemoryStorage::f32, MemoryStorage::f16}) {
    for (MemoryStorage memories : {MemoryStorage::f32, MemoryStorage::f16}) {
      StackConfig config = test::small_stack(2, {2, 1, 12}, 4, 0, 16, 16, Policy::lra_sum());
      config.activations = activations;
      for (BlockConfig& b : config.blocks) b.attention.kv.storage = memories;
      INFO("activations " << to_string(activations) << ", memories " << to_string(memories));
      test::ScaledWeights weights({"token_embd"}, kNearFloatMax, 101);
      const test::TokenStream tokens = test::random_tokens(8, config.vocab, 102);
      auto stack_owner = gpu::Stack::create(test::gpu(), config, weights).value_or_throw();
      gpu::Stack& stack = *stack_owner;
      const Status status = run_status(stack, tokens, logits_only());
      REQUIRE(!status.ok());
      CHECK(status.code() == ErrorCode::numerical_error);
      CHECK(status.message() == "step 0: non-finite values (NaN or infinity) in the attention outputs of block 0");
    }
  }
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("activation overflow: the float64 reference computes a token embedding near the float32 maximum") {
  // Its norms compute in double, where these squares are finite: it hands
  // out the finite logits of the model (the device cannot, and says so).
  // It refuses only what is not finite in its own arithmetic (below).
  const StackConfig config = test::small_stack(2, {2, 1, 12}, 4, 0, 16, 16, Policy::lra_sum());
  test::ScaledWeights weights({"token_embd"}, kNearFloatMax, 101);
  reference::Stack cpu(config, weights);
  const auto out = test::run_stack(cpu, test::random_tokens(8, config.vocab, 102), false, logits_only());
  REQUIRE(out.size() == 8);
  for (const auto& [position, emitted] : out)
    CHECK(std::all_of(emitted.logits.begin(), emitted.logits.end(), [](float x) { return std::isfinite(x); }));
}

TEST_CASE("activation overflow: hidden states whose final norm overflows float32 are a numerical error, not zeros") {
  // One block whose FFN writes rows near 1e20: finite, but the final norm's
  // squares are not. Hidden states alone leave (no logits check behind
  // them), for a stack of token ids and one of embeddings.
  for (uint32_t vocab : {37u, 0u}) {
    StackConfig config = test::small_stack(1, {2, 1, 12}, 4, 0, 16, 16, Policy::lra_sum());
    config.vocab = vocab;
    INFO("vocab " << vocab);
    test::ScaledWeights weights({"ffn_down"}, 1e20, 103);
    auto stack_owner = gpu::Stack::create(test::gpu(), config, weights).value_or_throw();
    gpu::Stack& stack = *stack_owner;
    const test::TokenStream tokens = test::random_tokens(4, 37, 104);
    std::vector<float> embeddings(4ull * config.hidden, 0.5f);
    StackChunk chunk = tokens.chunk(0, 4);
    if (vocab == 0) chunk.tokens = {}, chunk.embeddings = embeddings;
    const Result<StackOutput> out = stack.step(chunk, {});
    REQUIRE(!out.ok());
    CHECK(out.status().code() == ErrorCode::numerical_error);
    CHECK(out.status().message() == "step 0: non-finite values (NaN or infinity) in the final rows");
  }
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("activation overflow: a step recorded into an application's command buffer reports it at the wait") {
  // The final norm overflows (as above), its hidden rows copied into the
  // application's buffer: the recorded steps' own checks report it.
  const StackConfig config = test::small_stack(1, {2, 1, 12}, 4, 0, 16, 16, Policy::lra_sum());
  test::ScaledWeights weights({"ffn_down"}, 1e20, 103);
  const test::TokenStream tokens = test::random_tokens(4, config.vocab, 104);
  test::App app;
  {
    auto context_owner = Context::adopt(app.external()).value_or_throw();
    Context& context = *context_owner;
    auto stack_owner = gpu::Stack::create(context, config, weights).value_or_throw();
    gpu::Stack& stack = *stack_owner;
    const VkDeviceSize bytes = uint64_t{config.chunk} * config.hidden * 4;
    test::AppBuffer hidden(app, bytes, false);
    gpu::StackRecordInputs in;
    in.chunk = tokens.chunk(0, 4);
    gpu::StackRecordOutputs out;
    out.hidden = BufferRange{hidden.buffer, 0, bytes};
    out.consumer = {VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_READ_BIT};
    app.begin();
    stack.record(app.cb, in, out).value_or_throw();
    app.submit_and_wait();
    const Status status = stack.wait();
    REQUIRE(!status.ok());
    CHECK(status.code() == ErrorCode::numerical_error);
    CHECK(mentions(status, "non-finite values (NaN or infinity) in the final rows"));
  }
  app.check_no_messages();
}

TEST_CASE("activation overflow: rows past fp16 in fp16 activations or memories are a numerical error on both backends") {
  // FFN products near 2e6 (gate and up ~1.5e3 each): past fp16 in the
  // activated rows, not in fp32. Values near 1.7e5: past fp16 in the
  // memory, not in fp32.
  struct Case {
    const char* scaled;
    double factor;
    bool half_activations, half_memories;
    const char* stage;
  };
  for (const Case& c : {Case{"ffn_up", 1e3, true, false, "the output rows of block 0"},
                        Case{"attn_v", 1e5, false, true, "the attention outputs of block 0"}}) {
    INFO(c.scaled);
    for (bool half : {false, true}) {
      StackConfig config = test::small_stack(1, {2, 1, 12}, 4, 0, 16, 16, Policy::lra_sum());
      if (half && c.half_activations) config.activations = MemoryStorage::f16;
      if (half && c.half_memories) config.blocks[0].attention.kv.storage = MemoryStorage::f16;
      test::ScaledWeights weights({c.scaled, "ffn_gate"}, c.factor, 105);
      const test::TokenStream tokens = test::random_tokens(8, config.vocab, 106);
      auto stack_owner = gpu::Stack::create(test::gpu(), config, weights).value_or_throw();
      gpu::Stack& stack = *stack_owner;
      // The float64 reference rounds what it stores in fp16 as the device
      // does, and once handed out the NaN logits that followed.
      reference::Stack cpu(config, weights);
      for (const Status& status : {run_status(stack, tokens, logits_only()), run_status(cpu, tokens, logits_only())}) {
        if (!half) {
          if (!status.ok()) FAIL_CHECK(status.message());
          continue;
        }
        REQUIRE(!status.ok());
        CHECK(status.code() == ErrorCode::numerical_error);
        CHECK(status.message() == std::string("step 0: non-finite values (NaN or infinity) in ") + c.stage);
      }
    }
  }
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("activation overflow: an encoder whose final norm overflows is a numerical error, not zeros in its memory") {
  // The encoder's final rows enter the encoder output memory on the device
  // (no readback, no logits behind them).
  EncoderDecoderConfig c;
  c.encoder = test::small_stack(1, {2, 2, 8}, 5, 0, 12, 4, Policy::lra_sum());
  c.encoder_memory = 8;
  c.decoder = test::small_stack(1, {2, 2, 8}, 1, 0, 8, 8, Policy::fifo());
  c.decoder.blocks[0].cross_attention = true;
  c.decoder.blocks[0].rope = false;
  c.decoder.blocks[0].attention.kv.capacity = 8;
  c.decoder.blocks[0].attention.retrieval.top_k = 8;
  test::ScaledWeights weights({"enc.blk.0.ffn_down"}, 1e20, 107);
  auto device_owner = gpu::EncoderDecoder::create(test::gpu(), c, weights).value_or_throw();
  gpu::EncoderDecoder& device = *device_owner;
  const test::TokenStream tokens = test::random_tokens(10, c.encoder.vocab, 108);
  Status status = device.encode(tokens.chunk(0, 5));
  if (status.ok()) status = device.encode(tokens.chunk(5, 5));
  if (status.ok()) status = device.finish_encoding();
  REQUIRE(!status.ok());
  CHECK(status.code() == ErrorCode::numerical_error);
  CHECK(mentions(status, "non-finite values (NaN or infinity) in the final rows"));
  // Both encoder steps overflow; the encoder reads nothing back, so step 0's
  // values are reported at the next call, for step 0, the first non-finite
  // step (gpu::StepExecutor).
  CHECK(status.message().rfind("step 0: ", 0) == 0);
  test::check_no_validation_messages(test::gpu());
}

}  // namespace
}  // namespace attendre
