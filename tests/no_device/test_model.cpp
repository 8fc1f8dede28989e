// Models from GGUF files (include/attendre/model.hpp): tiny fixtures of every
// architecture and weight type written with the GGUF writer read back
// exactly, hyper-parameters come from metadata, every problem is one line
// naming the key or tensor, and the real files in ../shared/models load with
// the shapes and tokenization llama.cpp gives them.
#include "model_fixtures.hpp"
#include "model_test_support.hpp"

#include <attendre/model.hpp>

#include <cstring>
#include <limits>
#include <span>
#include <tuple>

using namespace attendre;
using gguf::MetadataValue;
using gguf::TensorType;

TEST_CASE("model: tiny llama and qwen2 fixtures of every weight type read back exactly, shapes from metadata") {
  test::GgufTempDir dir;
  for (const test::FixtureShape& shape : test::fixture_shapes()) {
    INFO(shape.name());
    const std::string& architecture = shape.architecture;
    const test::Fixture fixture = test::make_fixture(shape, 11);
    const std::filesystem::path path = dir.path / "model.gguf";
    fixture.writer.write(path).or_throw();
    Model model = Model::open(path).value_or_throw();
    const bool qwen2 = architecture == "qwen2";

    const ModelInfo& info = model.info();
    CHECK(info.architecture == architecture);
    CHECK(info.name == "attendre tiny " + architecture);
    CHECK(info.context_length == shape.context);
    CHECK(info.blocks == shape.blocks);
    const StackConfig c = model.stack_config(model.default_memory()).value_or_throw();
    CHECK(c.hidden == shape.hidden);
    CHECK(c.vocab == fixture.vocab);
    CHECK(c.vocab == model.tokenizer().size());
    CHECK(c.tied_embeddings == qwen2);
    CHECK(c.blocks.size() == shape.blocks);
    CHECK(c.final_norm_eps == 1e-6f);
    for (const BlockConfig& b : c.blocks) {
      CHECK(b.attention.shape.heads_q == shape.heads);
      CHECK(b.attention.shape.heads_kv == shape.heads_kv);
      CHECK(b.attention.shape.head_dim == shape.hidden / shape.heads);
      CHECK(b.ffn == shape.ffn);
      CHECK(b.norm == NormKind::rms);
      CHECK(b.norm_eps == 1e-6f);
      CHECK(b.gated);
      CHECK(b.activation == ActivationKind::silu);
      CHECK(b.rope_layout == (qwen2 ? RopeLayout::neox : RopeLayout::normal));
      CHECK(b.rope_theta == (qwen2 ? 1e6 : 1e4));
      CHECK(b.rope_dims == shape.hidden / shape.heads);
      CHECK(b.qkv_bias == qwen2);
      CHECK_FALSE(b.output_bias);
      CHECK_FALSE(b.ffn_bias);
      // The default memory is the whole trained context, causal, nothing evicted.
      CHECK(b.attention.q_capacity == 0);
      CHECK(b.attention.kv.capacity == shape.context);
      CHECK(b.attention.retrieval.top_k == shape.context);
      CHECK(b.attention.retrieval.causal);
    }

    // Every tensor comes back in its own encoding, byte for byte, as a
    // span into the file's mapping (tensors lie at the file's offsets).
    const gguf::File file = gguf::File::open(path).value_or_throw();
    uint64_t parameters = 0;
    const std::byte* first = nullptr;
    uint64_t first_offset = 0;
    for (const test::FixtureTensor& t : fixture.tensors) {
      INFO(t.name);
      const auto expected = element_type(static_cast<uint32_t>(t.type));
      CHECK(model.weights().type_of(t.name, t.shape).value_or_throw() == expected);
      const std::optional<TensorView> view = model.weights().tensor(t.name, t.shape).value_or_throw();
      REQUIRE(view);
      CHECK(view->type == *expected);
      REQUIRE(view->bytes.size() == t.bytes.size());
      CHECK(std::memcmp(view->bytes.data(), t.bytes.data(), t.bytes.size()) == 0);
      const uint64_t offset = file.find_tensor(t.name)->offset;
      if (!first) first = view->bytes.data(), first_offset = offset;
      CHECK(view->bytes.data() - first == static_cast<ptrdiff_t>(offset - first_offset));
      uint64_t count = 1;
      for (uint64_t d : t.shape) count *= d;
      parameters += count;
    }
    CHECK(info.parameters == parameters);
    CHECK_FALSE(model.weights().type_of("blk.9.attn_q.weight", std::vector<uint64_t>{1}).value_or_throw());
  }
}

namespace {

struct BadFile {
  const char* what;
  test::GgufEdits edits;
  ErrorCode code;
  std::string needle;
};

// Each case applied to the fixture `good` (written into `folder`) is refused
// as it says, naming the file.
void check_bad_files(const std::filesystem::path& good, const std::filesystem::path& folder,
                     std::span<const BadFile> cases) {
  for (const BadFile& bad : cases) {
    INFO(bad.what);
    const std::filesystem::path path = folder / "bad.gguf";
    test::rewrite_gguf(good, path, bad.edits);
    test::check_error([&] { Model::open(path).value_or_throw(); }, bad.code, bad.needle);
    test::check_error([&] { Model::open(path).value_or_throw(); }, bad.code, path.string() + ": ");
  }
}

gguf::TensorToWrite random_tensor(const std::string& name, std::vector<uint64_t> dims, TensorType type) {
  uint64_t count = 1;
  for (uint64_t d : dims) count *= d;
  const gguf::BlockSize block = *gguf::block_size(type);
  return {name, std::move(dims), type, test::random_bytes(count / block.elements * block.bytes, 3), std::nullopt};
}

}  // namespace

TEST_CASE("model: a file the stack cannot run is refused in one line naming the key or tensor") {
  test::GgufTempDir dir;
  const std::filesystem::path good = test::write_fixture(dir.path, test::FixtureShape{}, 5);
  const auto u32 = [](uint32_t v) { return std::optional<MetadataValue>(MetadataValue::u32(v)); };
  const auto text = [](const char* v) { return std::optional<MetadataValue>(MetadataValue::string(v)); };
  const std::optional<MetadataValue> removed;
  const BadFile cases[] = {
      {"another architecture", {{{"general.architecture", text("gemma")}}}, ErrorCode::unsupported,
       "\"general.architecture\": architecture 'gemma' is not supported (supported: llama, qwen2, qwen3, phi3, gemma2, gemma3, t5, t5encoder)"},
      {"a missing count", {{{"llama.block_count", removed}}}, ErrorCode::malformed_input,
       "metadata key \"llama.block_count\": is missing"},
      {"a missing norm epsilon", {{{"llama.attention.layer_norm_rms_epsilon", removed}}}, ErrorCode::malformed_input,
       "\"llama.attention.layer_norm_rms_epsilon\": is missing"},
      {"a missing context length", {{{"llama.context_length", removed}}}, ErrorCode::malformed_input,
       "\"llama.context_length\": is missing"},
      {"heads that do not divide the width", {{{"llama.attention.head_count", u32(5)}}}, ErrorCode::malformed_input,
       "\"llama.attention.head_count\": 5 heads do not divide embedding_length 64 and llama.attention.key_length is absent"},
      {"kv heads that do not divide the heads", {{{"llama.attention.head_count_kv", u32(3)}}}, ErrorCode::malformed_input,
       "\"llama.attention.head_count_kv\": 3 does not divide head_count 4"},
      {"a zero count", {{{"llama.feed_forward_length", u32(0)}}}, ErrorCode::malformed_input,
       "\"llama.feed_forward_length\": is 0, expected a count in [1, 2^32)"},
      {"key and value heads of different sizes",
       {{{"llama.attention.key_length", u32(16)}, {"llama.attention.value_length", u32(8)}}}, ErrorCode::unsupported,
       "\"llama.attention.value_length\": value heads of 8 differ from key heads of 16"},
      {"odd rotary dims", {{{"llama.rope.dimension_count", u32(7)}}}, ErrorCode::malformed_input,
       "\"llama.rope.dimension_count\": 7 must be even and at most the head dim 16"},
      {"YaRN scaling", {{{"llama.rope.scaling.type", text("yarn")}, {"llama.rope.scaling.factor", MetadataValue::f32(4)}}},
       ErrorCode::unsupported,
       "\"llama.rope.scaling.type\": RoPE scaling 'yarn' is not supported (supported: none, linear, llama3, and "
       "per-pair factors in rope_freqs.weight)"},
      {"llama3 factors that do not rise",
       {{{"llama.rope.scaling.type", text("llama3")}, {"llama.rope.scaling.factor", MetadataValue::f32(8)},
         {"llama.rope.scaling.low_freq_factor", MetadataValue::f32(4)}, {"llama.rope.scaling.high_freq_factor", MetadataValue::f32(2)}}},
       ErrorCode::malformed_input,
       "\"llama.rope.scaling.high_freq_factor\": 2 must exceed rope.scaling.low_freq_factor 4"},
      {"llama3 keys beside rope_freqs.weight",
       {{{"llama.rope.scaling.type", text("llama3")}}, {}, {random_tensor("rope_freqs.weight", {8}, TensorType::f32)}},
       ErrorCode::malformed_input,
       "\"llama.rope.scaling.type\": llama3 scaling from keys and rope_freqs.weight would scale the frequencies twice"},
      {"a zero llama3 original context", {{{"llama.rope.scaling.type", text("llama3")}, {"llama.rope.scaling.original_context_length", u32(0)}}},
       ErrorCode::malformed_input, "\"llama.rope.scaling.original_context_length\": is 0, expected a count in [1, 2^32)"},
      {"LongRoPE scaling", {{{"llama.rope.scaling.type", text("longrope")}}}, ErrorCode::unsupported,
       "RoPE scaling 'longrope' is not supported"},
      {"a negative linear factor", {{{"llama.rope.scaling.factor", MetadataValue::f32(-2)}}}, ErrorCode::malformed_input,
       "\"llama.rope.scaling.factor\": is -2, expected a positive number"},
      {"per-pair factors of the wrong size", {{}, {}, {random_tensor("rope_freqs.weight", {5}, TensorType::f32)}},
       ErrorCode::malformed_input, "tensor \"rope_freqs.weight\" has shape [5], the model's hyper-parameters make it [8]"},
      {"a mixture of experts", {{{"llama.expert_count", u32(8)}}}, ErrorCode::unsupported,
       "\"llama.expert_count\": mixtures of experts are not supported"},
      {"a vocabulary size that disagrees with the tokens", {{{"llama.vocab_size", u32(7)}}}, ErrorCode::malformed_input,
       "\"llama.vocab_size\": 7 differs from the 289 tokens of tokenizer.ggml.tokens"},
      {"no vocabulary", {{{"tokenizer.ggml.tokens", removed}}}, ErrorCode::malformed_input,
       "\"tokenizer.ggml.tokens\": is missing"},
      {"more blocks than tensors", {{{"llama.block_count", u32(1000)}}}, ErrorCode::malformed_input,
       "\"llama.block_count\": 1000 blocks, but the file holds 21 tensors"},
      {"a width the tensors do not have", {{{"llama.feed_forward_length", u32(100)}}}, ErrorCode::malformed_input,
       "tensor \"blk.0.ffn_gate.weight\" has shape [96, 64], the model's hyper-parameters make it [100, 64]"},
      {"a missing tensor", {{}, {"blk.1.ffn_up.weight"}, {}}, ErrorCode::malformed_input,
       "tensor \"blk.1.ffn_up.weight\" of shape [96, 64] is missing"},
      {"a tensor the stack would ignore", {{}, {}, {random_tensor("blk.0.attn_q_norm.weight", {16}, TensorType::f32)}},
       ErrorCode::unsupported, "tensor \"blk.0.attn_q_norm.weight\" is not part of a llama stack of 2 blocks, and would be ignored"},
      {"an encoding without a decoder", {{}, {}, {random_tensor("blk.0.attn_q.weight", {64, 64}, TensorType::iq4_nl)}},
       ErrorCode::unsupported, "tensor \"blk.0.attn_q.weight\" is IQ4_NL, an encoding attendre does not decode"},
  };
  check_bad_files(good, dir.path, cases);
  // Scaling that changes nothing is no scaling; none ignores its factor, as llama.cpp does.
  for (const auto& [type, factor] : {std::pair{"none", 4.0f}, {"linear", 1.0f}, {"linear", 0.0f}}) {
    INFO(type << " " << factor);
    const std::filesystem::path path = dir.path / "unscaled.gguf";
    test::rewrite_gguf(good, path, {{{"llama.rope.scaling.type", text(type)}, {"llama.rope.scaling.factor", MetadataValue::f32(factor)}}});
    const Model model = Model::open(path).value_or_throw();
    const StackConfig c = model.stack_config(model.default_memory()).value_or_throw();
    CHECK(c.blocks[0].rope_scaling.kind == RopeScaling::Kind::none);
    CHECK_FALSE(c.blocks[0].rope_scaling.freq_factors);
  }
  test::check_error([&] { Model::open(dir.path / "absent.gguf").value_or_throw(); }, ErrorCode::io_error, "absent.gguf: cannot open");
}

TEST_CASE("model: a gemma2 file without its post norms or with a bad window or soft-cap is refused in one line") {
  test::GgufTempDir dir;
  const std::filesystem::path good = test::write_fixture(dir.path, test::FixtureShape::for_type("gemma2", TensorType::f32), 5);
  const auto u32 = [](uint32_t v) { return std::optional<MetadataValue>(MetadataValue::u32(v)); };
  const auto f32 = [](float v) { return std::optional<MetadataValue>(MetadataValue::f32(v)); };
  const BadFile cases[] = {
      {"a missing post-FFN norm", {{}, {"blk.1.post_ffw_norm.weight"}, {}}, ErrorCode::malformed_input,
       "tensor \"blk.1.post_ffw_norm.weight\" of shape [64] is missing"},
      {"a post-attention norm of another width", {{}, {}, {random_tensor("blk.0.post_attention_norm.weight", {32}, TensorType::f32)}},
       ErrorCode::malformed_input, "tensor \"blk.0.post_attention_norm.weight\" has shape [32], the model's hyper-parameters make it [64]"},
      {"a zero window", {{{"gemma2.attention.sliding_window", u32(0)}}}, ErrorCode::malformed_input,
       "\"gemma2.attention.sliding_window\": is 0, expected a count in [1, 2^32)"},
      {"a negative attention soft-cap", {{{"gemma2.attn_logit_softcapping", f32(-50)}}}, ErrorCode::malformed_input,
       "\"gemma2.attn_logit_softcapping\": is -50, expected a positive number"},
      {"a zero final soft-cap", {{{"gemma2.final_logit_softcapping", f32(0)}}}, ErrorCode::malformed_input,
       "\"gemma2.final_logit_softcapping\": is 0, expected a positive number"},
      {"q/k norms gemma2 does not have", {{}, {}, {random_tensor("blk.0.attn_q_norm.weight", {16}, TensorType::f32)}},
       ErrorCode::unsupported, "tensor \"blk.0.attn_q_norm.weight\" is not part of a gemma2 stack of 2 blocks, and would be ignored"},
  };
  check_bad_files(good, dir.path, cases);
  // Absent keys take llama.cpp's defaults: window 4096, soft-caps 50 and 30.
  const std::filesystem::path path = dir.path / "defaults.gguf";
  const std::optional<MetadataValue> removed;
  test::rewrite_gguf(good, path, {{{"gemma2.attention.sliding_window", removed}, {"gemma2.attn_logit_softcapping", removed},
                                   {"gemma2.final_logit_softcapping", removed}}});
  const Model model = Model::open(path).value_or_throw();
  const StackConfig c = model.stack_config(model.default_memory()).value_or_throw();
  CHECK(c.blocks[0].sliding_window == 4096);
  CHECK(c.blocks[1].sliding_window == 0);
  CHECK(c.blocks[0].attention.retrieval.soft_cap == 50.0);
  CHECK(c.logit_soft_cap == 30.0);
}

TEST_CASE("model: a gemma3 file with a bad q/k norm or local RoPE base is refused in one line, an absent base is 10000") {
  test::GgufTempDir dir;
  test::FixtureShape shape = test::FixtureShape::for_type("gemma3", TensorType::f32);
  shape.blocks = 6;  // five local blocks, then a global one
  const std::filesystem::path good = test::write_fixture(dir.path, shape, 5);
  const auto f32 = [](float v) { return std::optional<MetadataValue>(MetadataValue::f32(v)); };
  const BadFile cases[] = {
      {"a q norm of hidden / heads, not the head dim", {{}, {}, {random_tensor("blk.0.attn_q_norm.weight", {16}, TensorType::f32)}},
       ErrorCode::malformed_input, "tensor \"blk.0.attn_q_norm.weight\" has shape [16], the model's hyper-parameters make it [32]"},
      {"a missing k norm", {{}, {"blk.5.attn_k_norm.weight"}, {}}, ErrorCode::malformed_input,
       "tensor \"blk.5.attn_k_norm.weight\" of shape [32] is missing"},
      {"a zero local RoPE base", {{{"gemma3.rope.freq_base_swa", f32(0)}}}, ErrorCode::malformed_input,
       "\"gemma3.rope.freq_base_swa\": is 0, expected a positive number"},
      {"a negative global RoPE base", {{{"gemma3.rope.freq_base", f32(-1)}}}, ErrorCode::malformed_input,
       "\"gemma3.rope.freq_base\": is -1, expected a positive number"},
      {"a missing post-attention norm", {{}, {"blk.3.post_attention_norm.weight"}, {}}, ErrorCode::malformed_input,
       "tensor \"blk.3.post_attention_norm.weight\" of shape [64] is missing"},
  };
  check_bad_files(good, dir.path, cases);
  // Without rope.freq_base_swa the local blocks turn with llama.cpp's 10000,
  // the global one with rope.freq_base.
  const std::filesystem::path path = dir.path / "defaults.gguf";
  test::rewrite_gguf(good, path, {{{"gemma3.rope.freq_base_swa", std::nullopt}, {"gemma3.rope.freq_base", f32(5e5f)}}});
  const Model model = Model::open(path).value_or_throw();
  const StackConfig c = model.stack_config(model.default_memory()).value_or_throw();
  for (uint32_t l = 0; l < 6; ++l) {
    INFO("block " << l);
    CHECK(c.blocks[l].rope_theta == (l == 5 ? 5e5 : 10000.0));
    CHECK(c.blocks[l].sliding_window == (l == 5 ? 0u : test::kGemmaWindow));
  }
  CHECK(c.logit_soft_cap == 0.0);  // no final_logit_softcapping: no cap
}

TEST_CASE("model: a gemma3 file without a sliding window has only global blocks, and caps its logits where it says so") {
  test::GgufTempDir dir;
  test::FixtureShape shape = test::FixtureShape::for_type("gemma3", TensorType::f32);
  shape.blocks = 6;
  const std::filesystem::path good = test::write_fixture(dir.path, shape, 5);
  const auto u32 = [](uint32_t v) { return std::optional<MetadataValue>(MetadataValue::u32(v)); };
  const auto f32 = [](float v) { return std::optional<MetadataValue>(MetadataValue::f32(v)); };
  // llama.cpp: no attention.sliding_window, or 0, is no window; every block
  // then turns with the global base.
  for (const std::optional<MetadataValue>& window : {std::optional<MetadataValue>(), u32(0)}) {
    INFO("window " << (window ? "0" : "absent"));
    const std::filesystem::path path = dir.path / "global.gguf";
    test::rewrite_gguf(good, path, {{{"gemma3.attention.sliding_window", window}, {"gemma3.rope.freq_base", f32(5e5f)},
                                     {"gemma3.final_logit_softcapping", f32(20.0f)}}});
    const Model model = Model::open(path).value_or_throw();
    const StackConfig c = model.stack_config(model.default_memory()).value_or_throw();
    for (uint32_t l = 0; l < 6; ++l) {
      INFO("block " << l);
      CHECK(c.blocks[l].sliding_window == 0u);
      CHECK(c.blocks[l].rope_theta == 5e5);
    }
    CHECK(c.logit_soft_cap == 20.0);
  }
  const BadFile cases[] = {
      {"a negative final soft-cap", {{{"gemma3.final_logit_softcapping", f32(-30)}}}, ErrorCode::malformed_input,
       "\"gemma3.final_logit_softcapping\": is -30, expected a positive number"},
      {"a window of another type", {{{"gemma3.attention.sliding_window", f32(2.5f)}}}, ErrorCode::malformed_input,
       "\"gemma3.attention.sliding_window\": has type float32, expected an unsigned integer"},
  };
  check_bad_files(good, dir.path, cases);
}

TEST_CASE("model: qwen3's q/k norms and phi3's fused tensors read as llama.cpp lays them out, bad ones refused in one line") {
  test::GgufTempDir dir;
  const uint32_t H = 64, F = 96;
  {
    // qwen3: heads of 32 (key_length), wider than hidden / heads = 16.
    const std::filesystem::path good = test::write_fixture(dir.path, test::FixtureShape::for_type("qwen3", TensorType::f16), 7);
    Model model = Model::open(good).value_or_throw();
    const StackConfig c = model.stack_config(model.default_memory()).value_or_throw();
    CHECK(c.tied_embeddings);
    for (const BlockConfig& b : c.blocks) {
      CHECK(b.qk_norm);
      CHECK(b.attention.shape.head_dim == 32);
      CHECK(b.rope_dims == 32);
      CHECK(b.rope_layout == RopeLayout::neox);
      CHECK_FALSE(b.qkv_bias);
    }
    const BadFile cases[] = {
        {"a missing q norm", {{}, {"blk.1.attn_q_norm.weight"}, {}}, ErrorCode::malformed_input,
         "tensor \"blk.1.attn_q_norm.weight\" of shape [32] is missing"},
        {"a k norm of the wrong size", {{}, {}, {random_tensor("blk.0.attn_k_norm.weight", {16}, TensorType::f32)}},
         ErrorCode::malformed_input,
         "tensor \"blk.0.attn_k_norm.weight\" has shape [16], the model's hyper-parameters make it [32]"},
        {"partial rotary dims", {{{"qwen3.rope.dimension_count", std::optional<MetadataValue>(MetadataValue::u32(16))}}},
         ErrorCode::unsupported, "\"qwen3.rope.dimension_count\": 16 rotary dims of heads of 32: qwen3 rotates whole heads"},
    };
    check_bad_files(good, dir.path, cases);
  }
  const std::filesystem::path good = test::write_fixture(dir.path, test::FixtureShape::for_type("phi3", TensorType::q8_0), 7);
  Model model = Model::open(good).value_or_throw();
  const StackConfig c = model.stack_config(model.default_memory()).value_or_throw();
  CHECK_FALSE(c.tied_embeddings);
  for (const BlockConfig& b : c.blocks) {
    CHECK_FALSE(b.qk_norm);
    CHECK(b.rope_dims == 8);  // half of each head of 16 rotates
    CHECK(b.rope_layout == RopeLayout::neox);
    CHECK(b.gated);
    CHECK(b.activation == ActivationKind::silu);
  }
  // The stack's q, k, v, gate and up are row ranges of the fused tensors:
  // views into the same bytes of the file's mapping, nothing copied.
  const uint64_t KV = 32;  // 2 kv heads of 16
  const auto fused = model.weights().tensor("blk.1.attn_qkv.weight", std::vector<uint64_t>{H + 2 * KV, H}).value_or_throw();
  REQUIRE(fused);
  const uint64_t row = fused->bytes.size() / (H + 2 * KV);  // 64 Q8_0 values: 2 blocks of 34 bytes
  CHECK(row == 68);
  const std::tuple<const char*, uint64_t, uint64_t> parts[] = {{"attn_q", 0, H}, {"attn_k", H, KV}, {"attn_v", H + KV, KV}};
  for (const auto& [name, first, rows] : parts) {
    const auto view = model.weights().tensor("blk.1." + std::string(name) + ".weight", std::vector<uint64_t>{rows, H}).value_or_throw();
    REQUIRE(view);
    CHECK(view->bytes.data() == fused->bytes.data() + first * row);
    CHECK(view->bytes.size() == rows * row);
  }
  // The stack's ffn_up is the second half of the file's: asked for whole, it is refused.
  test::check_error([&] { model.weights().tensor("blk.1.ffn_up.weight", std::vector<uint64_t>{2 * F, H}).value_or_throw(); },
                    ErrorCode::malformed_input, "rows [96, 192) of tensor \"blk.1.ffn_up.weight\"");
  const auto gate = model.weights().tensor("blk.1.ffn_gate.weight", std::vector<uint64_t>{F, H}).value_or_throw();
  const auto up = model.weights().tensor("blk.1.ffn_up.weight", std::vector<uint64_t>{F, H}).value_or_throw();
  REQUIRE(gate);
  REQUIRE(up);
  CHECK(up->bytes.data() == gate->bytes.data() + F * row);
  CHECK(gate->bytes.size() == F * row);
  CHECK(up->bytes.size() == F * row);
  uint64_t parameters = 0;
  const gguf::File file = gguf::File::open(good).value_or_throw();
  for (const gguf::TensorInfo& t : file.tensors()) parameters += t.elements();
  CHECK(model.info().parameters == parameters);  // each fused tensor counted once

  const BadFile cases[] = {
      {"a fused qkv of the wrong height", {{}, {}, {random_tensor("blk.0.attn_qkv.weight", {64, 160}, TensorType::q8_0)}},
       ErrorCode::malformed_input,
       "tensor \"blk.0.attn_qkv.weight\" has shape [160, 64], the model's hyper-parameters make it [128, 64]"},
      {"an ffn_up without the gate rows", {{}, {}, {random_tensor("blk.1.ffn_up.weight", {64, 96}, TensorType::q8_0)}},
       ErrorCode::malformed_input,
       "tensor \"blk.1.ffn_up.weight\" has shape [96, 64], the model's hyper-parameters make it [192, 64]"},
      {"a missing fused ffn_up", {{}, {"blk.0.ffn_up.weight"}, {}}, ErrorCode::malformed_input,
       "tensor \"blk.0.ffn_up.weight\" of shape [192, 64] is missing"},
      {"no fused qkv and no separate q", {{}, {"blk.1.attn_qkv.weight"}, {}}, ErrorCode::malformed_input,
       "tensor \"blk.1.attn_q.weight\" of shape [64, 64] is missing"},
      {"a LongRoPE table without the other", {{}, {}, {random_tensor("rope_factors_long.weight", {4}, TensorType::f32)}},
       ErrorCode::malformed_input,
       "LongRoPE needs both rope_factors_short.weight and rope_factors_long.weight, the file has only rope_factors_long.weight"},
      {"a LongRoPE long table of the wrong size",
       {{}, {}, {random_tensor("rope_factors_long.weight", {8}, TensorType::f32), random_tensor("rope_factors_short.weight", {4}, TensorType::f32)}},
       ErrorCode::malformed_input, "tensor \"rope_factors_long.weight\" has shape [8], the model's hyper-parameters make it [4]"},
      {"a RoPE attention factor with partial rotary dims", {{{"phi3.rope.scaling.attn_factor", std::optional<MetadataValue>(MetadataValue::f32(1.5f))}}},
       ErrorCode::unsupported,
       "\"phi3.rope.scaling.attn_factor\": 1.5 with 8 rotary dims of heads of 16 is not supported (whole heads only)"},
      {"a bias phi3 does not read", {{}, {}, {random_tensor("blk.0.attn_qkv.bias", {128}, TensorType::f32)}},
       ErrorCode::unsupported, "tensor \"blk.0.attn_qkv.bias\" is not part of a phi3 stack of 2 blocks, and would be ignored"},
  };
  check_bad_files(good, dir.path, cases);
}

TEST_CASE("model: an inf, NaN or out-of-range number in the metadata is refused in one line naming the key") {
  test::GgufTempDir dir;
  const std::filesystem::path good = test::write_fixture(dir.path, test::FixtureShape{}, 5);
  const auto f32 = [](float v) { return std::optional<MetadataValue>(MetadataValue::f32(v)); };
  const auto f64 = [](double v) { return std::optional<MetadataValue>(MetadataValue::f64(v)); };
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  const std::string eps = "\"llama.attention.layer_norm_rms_epsilon\": is ";
  const auto llama3 = [](const char* key, float value) {
    return test::GgufEdits{{{"llama.rope.scaling.type", MetadataValue::string("llama3")}, {key, MetadataValue::f32(value)}}};
  };
  const BadFile cases[] = {
      {"an infinite norm epsilon", {{{"llama.attention.layer_norm_rms_epsilon", f32(inf)}}}, ErrorCode::malformed_input,
       eps + "inf, expected a finite number"},
      {"a NaN norm epsilon", {{{"llama.attention.layer_norm_rms_epsilon", f32(nan)}}}, ErrorCode::malformed_input,
       eps + "nan, expected a finite number"},
      {"a negative norm epsilon", {{{"llama.attention.layer_norm_rms_epsilon", f32(-1)}}}, ErrorCode::malformed_input,
       eps + "-1, expected a positive number"},
      {"a zero norm epsilon", {{{"llama.attention.layer_norm_rms_epsilon", f32(0)}}}, ErrorCode::malformed_input,
       eps + "0, expected a positive number"},
      {"a float64 epsilon past the float range", {{{"llama.attention.layer_norm_rms_epsilon", f64(1e300)}}},
       ErrorCode::malformed_input, eps + "1e+300, which a float epsilon cannot hold (inf)"},
      {"a float64 epsilon below the float range", {{{"llama.attention.layer_norm_rms_epsilon", f64(1e-300)}}},
       ErrorCode::malformed_input, eps + "1e-300, which a float epsilon cannot hold (0)"},
      {"an infinite RoPE base", {{{"llama.rope.freq_base", f32(inf)}}}, ErrorCode::malformed_input,
       "\"llama.rope.freq_base\": is inf, expected a finite number"},
      {"a NaN RoPE base in float64", {{{"llama.rope.freq_base", f64(std::numeric_limits<double>::quiet_NaN())}}},
       ErrorCode::malformed_input, "\"llama.rope.freq_base\": is nan, expected a finite number"},
      {"a zero RoPE base", {{{"llama.rope.freq_base", f32(0)}}}, ErrorCode::malformed_input,
       "\"llama.rope.freq_base\": is 0, expected a positive number"},
      {"an infinite linear factor", {{{"llama.rope.scaling.factor", f32(inf)}}}, ErrorCode::malformed_input,
       "\"llama.rope.scaling.factor\": is inf, expected a finite number"},
      {"a NaN linear factor under its old key", {{{"llama.rope.scale_linear", f32(nan)}}}, ErrorCode::malformed_input,
       "\"llama.rope.scale_linear\": is nan, expected a finite number"},
      {"a -inf llama3 low-frequency factor", llama3("llama.rope.scaling.low_freq_factor", -inf), ErrorCode::malformed_input,
       "\"llama.rope.scaling.low_freq_factor\": is -inf, expected a finite number"},
      {"a NaN llama3 high-frequency factor", llama3("llama.rope.scaling.high_freq_factor", nan), ErrorCode::malformed_input,
       "\"llama.rope.scaling.high_freq_factor\": is nan, expected a finite number"},
  };
  check_bad_files(good, dir.path, cases);
}

TEST_CASE("model: memory plans set every block, with per-block overrides and K = M by default") {
  test::GgufTempDir dir;
  const Model model = Model::open(test::write_fixture(dir.path, test::FixtureShape{}, 5)).value_or_throw();
  MemoryPlan plan;
  plan.chunk = 8;
  plan.all.q_capacity = 16;
  plan.all.kv.capacity = 32;
  plan.all.kv.policy = Policy::lfa(1e-3);
  plan.all.kv.n_sink = 4;
  plan.all.causal = false;
  MemorySetting last = plan.all;
  last.kv.capacity = 64;
  last.top_k = 8;
  last.kv.policy = Policy::fifo();
  plan.blocks[1] = last;
  const StackConfig c = model.stack_config(plan).value_or_throw();
  CHECK(c.chunk == 8);
  CHECK(c.blocks[0].attention.q_capacity == 16);
  CHECK(c.blocks[0].attention.kv.capacity == 32);
  CHECK(c.blocks[0].attention.retrieval.top_k == 32);  // 0: K = M
  CHECK(c.blocks[0].attention.kv.policy.kind == PolicyKind::lfa);
  CHECK(c.blocks[0].attention.kv.n_sink == 4);
  CHECK_FALSE(c.blocks[0].attention.retrieval.causal);
  CHECK(c.blocks[1].attention.kv.capacity == 64);
  CHECK(c.blocks[1].attention.retrieval.top_k == 8);
  CHECK(c.blocks[1].attention.kv.policy.kind == PolicyKind::fifo);
  // The model's half stays: shapes and scale are not the plan's.
  CHECK(c.blocks[1].attention.shape.heads_q == 4);
  plan.blocks[2] = last;
  test::check_error([&] { (void)model.stack_config(plan).value_or_throw(); }, ErrorCode::invalid_argument,
                    "a memory override names block 2 of a stack of 2 blocks");
  plan.blocks.erase(2);
  plan.all.kv.capacity = 8;  // M < S + n_sink under protect_new
  test::check_error([&] { (void)model.stack_config(plan).value_or_throw(); }, ErrorCode::infeasible_config, "block 0: infeasible");
  const MemorySetting full = MemorySetting::full_context(100, 8).value_or_throw();
  CHECK(full.kv.capacity == 100);
  CHECK(full.top_k == 100);
  CHECK(full.q_capacity == 0);
  CHECK(full.causal);
  CHECK(full.kv.policy.kind == PolicyKind::fifo);
  CHECK(MemorySetting::full_context(3, 8).value_or_throw().kv.capacity == 8);  // M >= S
}

TEST_CASE("model: the real files load with their hyper-parameters, per-tensor types and llama.cpp's tokens") {
  const auto models = test::shared_models();
  if (!models) return;
  struct Expected {
    const char* file;
    uint32_t blocks, heads, heads_kv, head_dim, context;
    TensorType embedding;
    std::vector<uint32_t> once_upon_a_time;  // as llama.cpp tokenizes it, BOS first
  };
  const std::vector<uint32_t> aidreams = {1, 429, 491, 433, 295, 429, 444, 445, 265, 262, 263, 342, 430};
  const Expected expected[] = {
      {"stories260K.gguf", 5, 8, 4, 8, 2048, TensorType::f32, {1, 403, 407, 261, 378}},
      {"aidreams260K.gguf", 4, 4, 4, 16, 128, TensorType::f32, aidreams},
      {"aidreams260K-F16.gguf", 4, 4, 4, 16, 128, TensorType::f16, aidreams},
      {"aidreams260K-Q8_0.gguf", 4, 4, 4, 16, 128, TensorType::q8_0, aidreams},
      {"aidreams260K-Q4_0.gguf", 4, 4, 4, 16, 128, TensorType::q4_0, aidreams},
  };
  for (const Expected& e : expected) {
    INFO(e.file);
    Model model = Model::open(*models / e.file).value_or_throw();
    CHECK(model.info().architecture == "llama");
    CHECK(model.info().context_length == e.context);
    const StackConfig c = model.stack_config(model.default_memory()).value_or_throw();
    CHECK(c.hidden == 64);
    CHECK(c.vocab == 512);
    CHECK_FALSE(c.tied_embeddings);  // both converters wrote output.weight
    REQUIRE(c.blocks.size() == e.blocks);
    const BlockConfig& b = c.blocks[0];
    CHECK(b.attention.shape.heads_q == e.heads);
    CHECK(b.attention.shape.heads_kv == e.heads_kv);
    CHECK(b.attention.shape.head_dim == e.head_dim);
    CHECK(b.ffn == 172);
    CHECK(b.norm_eps == doctest::Approx(1e-5).epsilon(1e-6));
    CHECK(b.rope_theta == 10000.0);  // absent from the files: the default
    CHECK(b.rope_dims == e.head_dim);
    CHECK(b.rope_layout == RopeLayout::normal);
    CHECK(model.info().parameters > 200000);
    const std::vector<uint64_t> embedding = {512, 64};
    CHECK(model.weights().type_of("token_embd.weight", embedding).value_or_throw() == element_type(static_cast<uint32_t>(e.embedding)));
    // Rows of 172 fit no 32-block: llama-quantize kept ffn_down in F16.
    const std::vector<uint64_t> down = {64, 172};
    if (e.embedding != TensorType::f32)
      CHECK(model.weights().type_of("blk.0.ffn_down.weight", down).value_or_throw() == ElementType::f16);

    const Tokenizer& tokenizer = model.tokenizer();
    const std::vector<uint32_t> ids = tokenizer.encode("Once upon a time").value_or_throw();
    CHECK(ids == e.once_upon_a_time);
    CHECK(tokenizer.decode(ids).value_or_throw() == "Once upon a time");
    CHECK(tokenizer.bos() == 1u);
    CHECK(tokenizer.eos() == 2u);
    CHECK(tokenizer.stop_tokens() == std::vector<uint32_t>{2});
    CHECK(tokenizer.encode("Once", {false, false}).value_or_throw().front() != 1u);
  }
}
