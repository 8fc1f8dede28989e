// T5 and t5encoder from GGUF files (include/attendre/model.hpp): tiny
// fixtures of every weight type read back exactly under the stacks' names,
// hyper-parameters come from the t5.* keys, and with unbounded memories the
// float64 encoder-decoder equals T5 written out from its definition
// (t5_direct_forward.hpp) on every one of them; generation starts from the
// decoder start token; every problem is one line naming the key or tensor.
#include "model_checks.hpp"
#include "model_fixtures.hpp"
#include "model_test_support.hpp"
#include "stack_support.hpp"
#include "t5_direct_forward.hpp"

#include <attendre/generate.hpp>
#include <attendre/model.hpp>
#include <attendre/reference/encoder_decoder.hpp>
#include <attendre/reference/stack.hpp>

#include <cstring>
#include <limits>

using namespace attendre;
using gguf::MetadataValue;
using gguf::TensorType;

namespace {

const std::vector<uint32_t> kDecoded = {test::kT5DecoderStart, 40, 7, 103, 3};

// The stack name a T5 file's tensor is read under (the inverse of llama.cpp's
// naming, written out from its table of T5 tensors), "" for one no stack reads.
std::string stack_name(const std::string& file_name) {
  if (file_name == "token_embd.weight") return "enc.token_embd.weight";
  if (file_name == "output.weight") return "dec.output.weight";
  if (file_name.find("cross_attn_rel_b") != std::string::npos) return "";
  const size_t block_end = file_name.find('.', 8);
  if (file_name.rfind("enc.blk.", 0) != 0 && file_name.rfind("dec.blk.", 0) != 0) return file_name;
  std::string rest = file_name.substr(block_end + 1);
  const auto rename_output = [](std::string t) { return t.rfind("attn_o.", 0) == 0 ? "attn_output." + t.substr(7) : t; };
  const uint32_t layer = static_cast<uint32_t>(std::stoul(file_name.substr(8, block_end - 8)));
  if (file_name[0] == 'e') return "enc.blk." + std::to_string(layer) + "." + rename_output(rest);
  if (rest.rfind("cross_", 0) == 0) return "dec.blk." + std::to_string(2 * layer + 1) + "." + rename_output(rest.substr(6));
  if (rest.rfind("ffn_", 0) == 0) return "dec.blk." + std::to_string(2 * layer + 1) + "." + rest;
  return "dec.blk." + std::to_string(2 * layer) + "." + rename_output(rest);
}

// Every memory unbounded: the encoder sees the whole input, the decoder all it decoded.
EncoderDecoderPlan unbounded(uint32_t input, uint32_t chunk) {
  return test::unbounded_encoder_decoder(input, chunk, static_cast<uint32_t>(kDecoded.size()));
}

// Logits of `kDecoded` after encoding `input` through the encoder-decoder.
std::vector<float> decoded_logits(attendre::EncoderDecoder& model, std::span<const uint32_t> input) {
  return test::encoder_decoder_logits(model, input, kDecoded);
}

double max_relative_difference(const std::vector<float>& actual, const std::vector<double>& expected) {
  REQUIRE(actual.size() == expected.size());
  double scale = 1.0, worst = 0.0;
  for (double x : expected) scale = std::max(scale, std::fabs(x));
  for (size_t i = 0; i < actual.size(); ++i) worst = std::max(worst, std::fabs(actual[i] - expected[i]));
  return worst / scale;
}

}  // namespace

TEST_CASE("t5 model: fixtures of every weight type read back exactly under the stacks' names, shapes from t5.* keys") {
  test::GgufTempDir dir;
  for (const test::FixtureShape& shape : test::t5_fixture_shapes()) {
    INFO(shape.name());
    const test::Fixture fixture = test::make_fixture(shape, 13);
    const std::filesystem::path path = dir.path / "t5.gguf";
    fixture.writer.write(path).or_throw();
    Model model = Model::open(path).value_or_throw();
    const ModelInfo& info = model.info();
    CHECK(info.architecture == "t5");
    CHECK(info.kind == ModelKind::encoder_decoder);
    CHECK(info.context_length == shape.context);
    CHECK(info.blocks == shape.blocks);
    CHECK(info.decoder_layers == shape.blocks);
    CHECK(info.decoder_start_token == test::kT5DecoderStart);
    const EncoderDecoderConfig c = model.encoder_decoder_config(unbounded(12, 4)).value_or_throw();
    CHECK(c.encoder_memory == 12);
    for (const StackConfig* stack : {&c.encoder, &c.decoder}) {
      CHECK(stack->hidden == shape.hidden);
      CHECK(stack->vocab == fixture.vocab);
      CHECK(stack->final_norm == NormKind::rms);
      for (const BlockConfig& b : stack->blocks) {
        CHECK_FALSE(b.rope);
        CHECK(b.attention.scale() == 1.0);
        CHECK(b.attention.shape.heads_q == shape.heads);
        CHECK(b.attention.shape.head_dim == shape.hidden / shape.heads);
        CHECK(b.norm_eps == 1e-6f);
        CHECK_FALSE(b.qkv_bias);
        CHECK(b.activation == (shape.t5_original ? ActivationKind::relu : ActivationKind::gelu_tanh));
        CHECK(b.gated == !shape.t5_original);
      }
    }
    CHECK(c.encoder.tied_embeddings);
    CHECK(c.decoder.tied_embeddings == shape.t5_original);
    REQUIRE(c.encoder.blocks.size() == shape.blocks);
    for (uint32_t l = 0; l < shape.blocks; ++l) {
      const BlockConfig& e = c.encoder.blocks[l];
      CHECK(e.attention.retrieval.bias == BiasKind::t5);
      CHECK(e.attention.retrieval.t5.bidirectional);
      CHECK(e.attention.retrieval.t5.num_buckets == test::kT5Buckets);
      CHECK(e.attention.retrieval.t5.max_distance == 128);
      CHECK_FALSE(e.attention.retrieval.causal);
      // Block 0's table serves the others, unless a block has its own (UMT5).
      CHECK(e.t5_table_block == (l == 0 || (shape.t5_original && l == 1) ? std::nullopt : std::optional<uint32_t>(0)));
      CHECK(e.ffn == shape.ffn);
    }
    REQUIRE(c.decoder.blocks.size() == 2 * shape.blocks);
    for (uint32_t l = 0; l < shape.blocks; ++l) {
      const BlockConfig& self = c.decoder.blocks[2 * l];
      const BlockConfig& cross = c.decoder.blocks[2 * l + 1];
      CHECK(self.attention.retrieval.bias == BiasKind::t5);
      CHECK_FALSE(self.attention.retrieval.t5.bidirectional);
      CHECK(self.attention.retrieval.causal);
      CHECK(self.ffn == 0);
      CHECK(self.attention.kv.capacity == kDecoded.size());
      CHECK(cross.cross_attention);
      CHECK(cross.attention.retrieval.bias == BiasKind::none);
      CHECK(cross.attention.kv.capacity == 12);
      CHECK(cross.ffn == shape.ffn);
    }

    uint64_t parameters = 0;
    for (const test::FixtureTensor& t : fixture.tensors) {
      INFO(t.name);
      const std::string name = stack_name(t.name);
      if (name.empty()) continue;  // the cross-attention table Hugging Face's T5 never reads
      uint64_t count = 1;
      for (uint64_t d : t.shape) count *= d;
      parameters += count;
      const std::optional<TensorView> view = model.weights().tensor(name, t.shape).value_or_throw();
      REQUIRE(view);
      if (name == "dec.output_norm.weight" && shape.t5_original) {
        // The tied head's d_model^-0.5, folded into the final norm's gain.
        const std::vector<double> file = gguf::dequantize(t.type, t.bytes).value_or_throw();
        REQUIRE(view->type == ElementType::f32);
        const auto* held = reinterpret_cast<const float*>(view->bytes.data());
        for (size_t i = 0; i < file.size(); ++i)
          CHECK(held[i] == static_cast<float>(file[i] / std::sqrt(static_cast<double>(shape.hidden))));
        continue;
      }
      CHECK(view->type == *element_type(static_cast<uint32_t>(t.type)));
      REQUIRE(view->bytes.size() == t.bytes.size());
      CHECK(std::memcmp(view->bytes.data(), t.bytes.data(), t.bytes.size()) == 0);
    }
    CHECK(info.parameters == parameters);
    // The tokenizer is T5's unigram one: no BOS, EOS appended.
    const std::vector<uint32_t> ids = model.tokenizer().encode("once upon a time").value_or_throw();
    CHECK(ids == std::vector<uint32_t>{9, 10, 11, 12, 1});
  }
}

TEST_CASE("t5 model: with unbounded memories the encoder-decoder equals T5 written out from its definition (every type)") {
  test::GgufTempDir dir;
  for (const test::FixtureShape& shape : test::t5_fixture_shapes()) {
    INFO(shape.name());
    const test::Fixture fixture = test::make_fixture(shape, 17);
    const std::filesystem::path path = dir.path / "t5.gguf";
    fixture.writer.write(path).or_throw();
    Model model = Model::open(path).value_or_throw();
    const std::span<const uint32_t> input = test::kFixturePrompt;
    const test::T5Direct direct(fixture);
    const std::vector<double> expected = direct.decode(kDecoded, direct.encode(input));
    reference::EncoderDecoder streamed(model.encoder_decoder_config(unbounded(static_cast<uint32_t>(input.size()), 5)).value_or_throw(),
                                       model.weights());
    // Both in float64; the stack hands out float32 logits.
    CHECK(max_relative_difference(decoded_logits(streamed, input), expected) < 1e-6);

    // The comparison can fail: an encoder whose queries see 6 positions.
    EncoderDecoderPlan narrow = unbounded(static_cast<uint32_t>(input.size()), 5);
    narrow.encoder.all.q_capacity = 0;
    narrow.encoder.all.kv.capacity = narrow.encoder.all.top_k = 6;
    reference::EncoderDecoder forgetful(model.encoder_decoder_config(narrow).value_or_throw(), model.weights());
    CHECK(max_relative_difference(decoded_logits(forgetful, input), expected) > 1e-3);
  }
}

TEST_CASE("t5 model: generation encodes the input and decodes greedily from the start token") {
  test::GgufTempDir dir;
  const test::Fixture fixture = test::make_fixture(test::FixtureShape::for_type("t5", TensorType::f32), 19);
  fixture.writer.write(dir.path / "t5.gguf").or_throw();
  Model model = Model::open(dir.path / "t5.gguf").value_or_throw();
  const std::vector<uint32_t> input = model.tokenizer().encode("the cat sat on the mat").value_or_throw();
  EncoderDecoderPlan plan = unbounded(static_cast<uint32_t>(input.size()), 4);
  plan.decoder_positions = 6;
  reference::EncoderDecoder streamed(model.encoder_decoder_config(plan).value_or_throw(), model.weights());
  GenerateOptions options;
  options.max_tokens = 6;
  std::vector<uint32_t> seen;
  const GenerateResult result =
      generate(streamed, input, *model.info().decoder_start_token, options, [&](uint32_t t) { seen.push_back(t); }).value_or_throw();
  // Greedy by repeated direct forwards of the growing decoder input.
  const test::T5Direct direct(fixture);
  const std::vector<double> encoded = direct.encode(input);
  std::vector<uint32_t> decoded = {test::kT5DecoderStart};
  for (uint32_t n = 0; n < 6; ++n) {
    const std::vector<double> logits = direct.decode(decoded, encoded);
    const auto last = logits.end() - fixture.vocab;
    decoded.push_back(static_cast<uint32_t>(std::max_element(last, logits.end()) - last));
  }
  CHECK(result.tokens == std::vector<uint32_t>(decoded.begin() + 1, decoded.end()));
  CHECK(seen == result.tokens);
  CHECK(result.prompt_tokens == input.size());

  options.prompt_logits = true;
  test::check_error([&] { generate(streamed, input, 0, options).value_or_throw(); }, ErrorCode::invalid_argument,
                    "an encoder-decoder's input has no logits");
}

TEST_CASE("t5encoder: the encoder alone is a bidirectional stack equal to T5's encoder") {
  test::GgufTempDir dir;
  for (TensorType type : {TensorType::f32, TensorType::q8_0}) {
    const test::FixtureShape shape = test::FixtureShape::for_type("t5encoder", type);
    INFO(shape.name());
    const test::Fixture fixture = test::make_fixture(shape, 23);
    fixture.writer.write(dir.path / "t5encoder.gguf").or_throw();
    Model model = Model::open(dir.path / "t5encoder.gguf").value_or_throw();
    CHECK(model.info().kind == ModelKind::encoder);
    CHECK(model.default_memory().all.q_capacity == shape.context);  // every query waits for the whole trained context
    CHECK_FALSE(model.default_memory().all.causal);
    const std::span<const uint32_t> input = test::kFixturePrompt;
    MemoryPlan plan;
    plan.chunk = 4;
    plan.all = MemorySetting::full_bidirectional(input.size(), 4).value_or_throw();
    reference::Stack stack(model.stack_config(plan).value_or_throw(), model.weights());
    const std::vector<float> hidden = test::encoder_hidden(stack, input);
    CHECK(max_relative_difference(hidden, test::T5Direct(fixture).encode(input)) < 1e-6);  // float32 outputs
    test::check_error([&] { (void)model.encoder_decoder_config(unbounded(4, 4)).value_or_throw(); }, ErrorCode::invalid_argument,
                      "t5encoder is not an encoder-decoder: use stack_config()");
  }
}

TEST_CASE("t5 model: a file T5 cannot run is refused in one line naming the key or tensor") {
  test::GgufTempDir dir;
  const std::filesystem::path good = test::write_fixture(dir.path, test::FixtureShape::for_type("t5", TensorType::f32), 5);
  const std::optional<MetadataValue> removed;
  struct Bad {
    const char* what;
    test::GgufEdits edits;
    ErrorCode code;
    std::string needle;
  };
  const Bad cases[] = {
      {"no bucket count", {{{"t5.attention.relative_buckets_count", removed}}}, ErrorCode::malformed_input,
       "metadata key \"t5.attention.relative_buckets_count\": is missing"},
      {"no start token", {{{"t5.decoder_start_token_id", removed}, {"tokenizer.ggml.padding_token_id", removed}}},
       ErrorCode::malformed_input,
       "\"t5.decoder_start_token_id\": is missing, and so is tokenizer.ggml.padding_token_id that T5 starts decoding from"},
      {"no start token, and a padding token past the vocabulary",
       {{{"t5.decoder_start_token_id", removed}, {"tokenizer.ggml.padding_token_id", MetadataValue::u32(700)}}},
       ErrorCode::malformed_input, "tokenizer.ggml.padding_token_id = 700 is outside the 300 tokens"},
      {"no start token, and a padding token that says none",
       {{{"t5.decoder_start_token_id", removed}, {"tokenizer.ggml.padding_token_id", MetadataValue::u32(0xFFFFFFFFu)}}},
       ErrorCode::malformed_input,
       "\"t5.decoder_start_token_id\": is missing, and tokenizer.ggml.padding_token_id that T5 starts decoding from says none"},
      {"a start token past the vocabulary", {{{"t5.decoder_start_token_id", MetadataValue::u32(300)}}},
       ErrorCode::malformed_input, "\"t5.decoder_start_token_id\": 300 is not a token of the 300-token vocabulary"},
      {"an infinite norm epsilon", {{{"t5.attention.layer_norm_rms_epsilon", MetadataValue::f32(std::numeric_limits<float>::infinity())}}},
       ErrorCode::malformed_input, "\"t5.attention.layer_norm_rms_epsilon\": is inf, expected a finite number"},
      {"a negative norm epsilon under T5's other key",
       {{{"t5.attention.layer_norm_rms_epsilon", removed}, {"t5.attention.layer_norm_epsilon", MetadataValue::f32(-1)}}},
       ErrorCode::malformed_input, "\"t5.attention.layer_norm_epsilon\": is -1, expected a positive number"},
      {"no bias table in the first block", {{}, {"enc.blk.0.attn_rel_b.weight"}, {}}, ErrorCode::malformed_input,
       "tensor \"enc.blk.0.attn_rel_b.weight\" of shape [32, 4] is missing"},
      {"a gate in one decoder layer only", {{}, {"dec.blk.1.ffn_gate.weight"}, {}}, ErrorCode::malformed_input,
       "tensor \"dec.blk.1.ffn_gate.weight\" of shape [96, 64] is missing"},
      {"a cross-attention output of the wrong shape",
       {{}, {}, {{"dec.blk.0.cross_attn_o.weight", {64, 32}, TensorType::f32, std::vector<std::byte>(64 * 32 * 4), std::nullopt}}},
       ErrorCode::malformed_input, "tensor \"dec.blk.0.cross_attn_o.weight\" has shape [32, 64], the model's hyper-parameters make it [64, 64]"},
      {"a tensor no stack reads",
       {{}, {}, {{"enc.blk.0.attn_q_norm.weight", {64}, TensorType::f32, std::vector<std::byte>(64 * 4), std::nullopt}}},
       ErrorCode::unsupported, "tensor \"enc.blk.0.attn_q_norm.weight\" is not part of a t5 stack of 6 blocks, and would be ignored"},
  };
  for (const Bad& bad : cases) {
    INFO(bad.what);
    const std::filesystem::path path = dir.path / "bad.gguf";
    test::rewrite_gguf(good, path, bad.edits);
    test::check_error([&] { Model::open(path).value_or_throw(); }, bad.code, bad.needle);
  }
  // Without decoder_start_token_id, T5 starts from its padding token.
  test::rewrite_gguf(good, dir.path / "pad.gguf", {{{"t5.decoder_start_token_id", removed}}});
  CHECK(Model::open(dir.path / "pad.gguf").value_or_throw().info().decoder_start_token == 0u);

  const Model model = Model::open(good).value_or_throw();
  test::check_error([&] { (void)model.stack_config(model.default_memory()).value_or_throw(); }, ErrorCode::invalid_argument,
                    "t5 is an encoder-decoder: use encoder_decoder_config()");
  EncoderDecoderPlan capped = unbounded(8, 4);
  capped.encoder.all.lm_infinite = {true, 4};
  test::check_error([&] { (void)model.encoder_decoder_config(capped).value_or_throw(); }, ErrorCode::invalid_argument,
                    "LM-Infinite caps RoPE distances, and no block of this stack uses RoPE");
}
