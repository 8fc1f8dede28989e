// general.architecture and <arch>.* keys into a StackConfig, with the
// defaults llama.cpp applies when a key is absent (rope.freq_base 10000,
// rope.dimension_count = head dim, head_count_kv = head_count).
#include "io/gguf_architecture.hpp"

#include "core/fail.hpp"
#include "core/model_spec.hpp"
#include "io/gguf_source.hpp"
#include "io/gguf_weights.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <limits>
#include <set>

namespace attendre::gguf {
namespace {

// How an architecture's blocks differ from the pre-norm RMSNorm / SwiGLU /
// RoPE block every supported one shares.
struct Architecture {
  std::string_view name;
  RopeLayout rope_layout;  // llama's converters permute q/k into adjacent pairs; qwen2 keeps NeoX halves
  bool qkv_bias;           // required q/k/v biases; without, the file's blk.0 says which biases exist
};
constexpr std::array<Architecture, 2> kArchitectures = {{
    {"llama", RopeLayout::normal, false},
    {"qwen2", RopeLayout::neox, true},
}};

// Read-only access to the <arch>.* keys, with messages that name the key.
class Metadata {
 public:
  Metadata(const File& file, std::string_view architecture) : file_(file), prefix_(std::string(architecture) + ".") {}

  std::string key(std::string_view suffix) const { return prefix_ + std::string(suffix); }
  std::optional<Value> find(std::string_view suffix) const { return file_.find(key(suffix)); }

  [[noreturn]] void fail_key(ErrorCode code, std::string_view suffix, const std::string& problem) const {
    fail(code, file_.path().string() + ": metadata key " + detail::quote_name(key(suffix)) + ": " + problem);
  }

  // A positive count that fits 32 bits (the stack counts in 32 bits).
  uint32_t count(std::string_view suffix, std::optional<uint32_t> fallback = std::nullopt) const {
    const std::optional<Value> value = required(suffix, fallback.has_value());
    if (!value) return *fallback;
    const uint64_t n = value->as_u64(key(suffix));
    if (n == 0 || n > std::numeric_limits<uint32_t>::max())
      fail_key(ErrorCode::malformed_input, suffix, "is " + std::to_string(n) + ", expected a count in [1, 2^32)");
    return static_cast<uint32_t>(n);
  }

  double number(std::string_view suffix, std::optional<double> fallback = std::nullopt) const {
    const std::optional<Value> value = required(suffix, fallback.has_value());
    return value ? value->as_f64(key(suffix)) : *fallback;
  }

 private:
  // The value at `suffix`; absent, nullopt when a default stands in, else an error.
  std::optional<Value> required(std::string_view suffix, bool has_default) const {
    std::optional<Value> value = find(suffix);
    if (!value && !has_default) fail_key(ErrorCode::malformed_input, suffix, "is missing");
    return value;
  }

  const File& file_;
  std::string prefix_;
};

const Architecture& find_architecture(const File& file) {
  const std::string name = file.get_string("general.architecture");
  for (const Architecture& a : kArchitectures)
    if (a.name == name) return a;
  const std::string where = file.path().string() + ": metadata key \"general.architecture\": ";
  // The encoder-decoder (gpu::EncoderDecoder) exists; reading T5's relative
  // position buckets and cross-attention tensors from GGUF is the hook left
  // for the T5 work.
  if (name == "t5" || name == "t5encoder")
    fail(ErrorCode::unsupported, where + "architecture '" + name + "' (T5 relative position buckets) is not supported yet");
  fail(ErrorCode::unsupported, where + "architecture '" + name + "' is not supported (supported: llama, qwen2)");
}

// RoPE scaling changes the angle of every position: linear interpolation,
// YaRN, LongRoPE, or llama3's per-frequency factors stored as the tensor
// rope_freqs.weight. This is the hook for the RoPE-scaling work: read the
// type and factors into each BlockConfig here once the kernels take them.
// Until then a file that asks for scaling is refused, never run unscaled.
void refuse_rope_scaling(const Metadata& m, const File& file) {
  // llama.cpp reads an absent type as "linear" and a factor of 0 as 1.
  std::string type = "linear";
  if (const auto v = m.find("rope.scaling.type")) type = std::string(v->as_string(m.key("rope.scaling.type")));
  double factor = 0.0;
  if (m.find("rope.scaling.factor")) factor = m.number("rope.scaling.factor");
  else if (m.find("rope.scale_linear")) factor = m.number("rope.scale_linear");
  if (factor == 0.0) factor = 1.0;
  if (type != "none" && !(type == "linear" && factor == 1.0)) {
    char text[32];
    std::snprintf(text, sizeof text, "%g", factor);
    m.fail_key(ErrorCode::unsupported, m.find("rope.scaling.type") ? "rope.scaling.type" : "rope.scaling.factor",
               "RoPE scaling '" + type + "' with factor " + text + " is not supported yet");
  }
  if (file.find_tensor("rope_freqs.weight"))
    fail(ErrorCode::unsupported, file.path().string() +
                                     ": tensor \"rope_freqs.weight\": llama3 RoPE scaling (per-frequency factors) is not "
                                     "supported yet");
}

// The attention head dimension: attention.key_length, else hidden / heads.
uint32_t head_dim(const Metadata& m, uint32_t hidden, uint32_t heads) {
  if (m.find("attention.key_length")) {
    const uint32_t key = m.count("attention.key_length");
    if (m.count("attention.value_length", key) != key)
      m.fail_key(ErrorCode::unsupported, "attention.value_length",
                 "value heads of " + std::to_string(m.count("attention.value_length")) + " differ from key heads of " +
                     std::to_string(key) + ", which the stack does not run");
    return key;
  }
  if (hidden % heads != 0)
    m.fail_key(ErrorCode::malformed_input, "attention.head_count",
               std::to_string(heads) + " heads do not divide embedding_length " + std::to_string(hidden) + " and " +
                   m.key("attention.key_length") + " is absent");
  return hidden / heads;
}

BlockConfig block_config(const Metadata& m, const Architecture& a, const File& file, uint32_t hidden) {
  BlockConfig b;
  AttentionShape& s = b.attention.shape;
  s.heads_q = m.count("attention.head_count");
  s.head_dim = head_dim(m, hidden, s.heads_q);
  s.heads_kv = m.count("attention.head_count_kv", s.heads_q);
  if (s.heads_q % s.heads_kv != 0)
    m.fail_key(ErrorCode::malformed_input, "attention.head_count_kv",
               std::to_string(s.heads_kv) + " does not divide head_count " + std::to_string(s.heads_q));
  b.ffn = m.count("feed_forward_length");
  b.norm = NormKind::rms;
  b.norm_eps = static_cast<float>(m.number("attention.layer_norm_rms_epsilon"));
  if (!(b.norm_eps > 0.0f))
    m.fail_key(ErrorCode::malformed_input, "attention.layer_norm_rms_epsilon", "must be positive");
  b.activation = ActivationKind::silu;
  b.gated = true;
  b.rope = true;
  b.rope_layout = a.rope_layout;
  b.rope_dims = m.count("rope.dimension_count", s.head_dim);
  if (b.rope_dims % 2 != 0 || b.rope_dims > s.head_dim)
    m.fail_key(ErrorCode::malformed_input, "rope.dimension_count",
               std::to_string(b.rope_dims) + " must be even and at most the head dim " + std::to_string(s.head_dim));
  b.rope_theta = m.number("rope.freq_base", 10000.0);
  if (!(b.rope_theta > 0.0)) m.fail_key(ErrorCode::malformed_input, "rope.freq_base", "must be positive");
  // llama.cpp's llama loads q/k/v/output and FFN biases when the file has them.
  b.qkv_bias = a.qkv_bias || file.find_tensor("blk.0.attn_q.bias");
  b.output_bias = file.find_tensor("blk.0.attn_output.bias") != nullptr;
  b.ffn_bias = file.find_tensor("blk.0.ffn_up.bias") != nullptr;
  return b;
}

uint32_t vocabulary_size(const Metadata& m, const File& file) {
  const uint64_t tokens = file.get("tokenizer.ggml.tokens").size();
  if (tokens == 0 || tokens > std::numeric_limits<uint32_t>::max())
    fail(ErrorCode::malformed_input, file.path().string() + ": metadata key \"tokenizer.ggml.tokens\": " +
                                         std::to_string(tokens) + " tokens, expected [1, 2^32)");
  if (m.find("vocab_size") && m.count("vocab_size") != tokens)
    m.fail_key(ErrorCode::malformed_input, "vocab_size",
               std::to_string(m.count("vocab_size")) + " differs from the " + std::to_string(tokens) +
                   " tokens of tokenizer.ggml.tokens");
  return static_cast<uint32_t>(tokens);
}

// Every tensor the stack needs is in the file with the hyper-parameters'
// shape and a decodable encoding; every tensor of the file is one of them.
ModelInfo check_tensors(const File& file, const StackConfig& config, ModelInfo info) {
  FileWeights weights(file);
  std::set<std::string> used;
  auto need = [&](const std::string& name, std::vector<uint64_t> shape) {
    if (!weights.type_of(name, shape))
      fail(ErrorCode::malformed_input, file.path().string() + ": tensor " + detail::quote_name(name) + " of shape " +
                                           shape_text(shape) + " is missing");
    const TensorInfo& t = *file.find_tensor(name);
    info.parameters += t.elements();
    info.tensor_bytes += t.bytes;
    used.insert(name);
  };
  auto vector = [&](const std::optional<VectorSpec>& v) {
    if (v) need(v->name, {v->size});
  };
  auto matrix = [&](const std::optional<MatrixSpec>& w) {
    if (!w) return;
    need(w->name, {w->rows, w->cols});
    if (w->bias) need(w->bias->name, {w->bias->size});
  };
  const ModelSpec spec = model_spec(config);
  matrix(spec.token_embd);
  vector(spec.output_norm);
  vector(spec.output_norm_bias);
  matrix(spec.output);
  for (const BlockSpec& b : spec.blocks) {
    vector(b.attn_norm);
    vector(b.attn_norm_bias);
    for (const MatrixSpec& w : {b.wq, b.wk, b.wv, b.wo}) matrix(w);
    vector(b.ffn_norm);
    vector(b.ffn_norm_bias);
    matrix(b.gate);
    matrix(b.up);
    matrix(b.down);
  }
  for (const TensorInfo& t : file.tensors())
    if (!used.count(t.name))
      fail(ErrorCode::unsupported, file.path().string() + ": tensor " + detail::quote_name(t.name) + " is not part of a " +
                                       info.architecture + " stack of " + std::to_string(config.blocks.size()) +
                                       " blocks, and would be ignored");
  return info;
}

}  // namespace

ModelDescription describe_model(const File& file, WeightType storage) {
  const Architecture& a = find_architecture(file);
  const Metadata m(file, a.name);
  refuse_rope_scaling(m, file);
  if (m.find("expert_count") && m.count("expert_count") > 1)
    m.fail_key(ErrorCode::unsupported, "expert_count", "mixtures of experts are not supported");

  ModelDescription d;
  d.info.architecture = a.name;
  d.info.name = file.get_string("general.name", "");
  d.info.context_length = m.count("context_length");
  StackConfig& c = d.stack;
  c.hidden = m.count("embedding_length");
  c.vocab = vocabulary_size(m, file);
  c.final_norm = NormKind::rms;
  c.weights = storage;
  // Without output.weight the LM head is the embedding table (SmolLM, Qwen2 0.5B, ...).
  c.tied_embeddings = file.find_tensor("output.weight") == nullptr;
  const BlockConfig block = block_config(m, a, file, c.hidden);
  c.final_norm_eps = block.norm_eps;
  const uint32_t blocks = m.count("block_count");
  // Each block has tensors of its own: a count past the file's tensors is
  // malformed, and must not size anything before the tensors are checked.
  if (blocks > file.tensors().size())
    m.fail_key(ErrorCode::malformed_input, "block_count",
               std::to_string(blocks) + " blocks, but the file holds " + std::to_string(file.tensors().size()) + " tensors");
  c.blocks.assign(blocks, block);
  d.info.blocks = blocks;

  d.default_memory.chunk = std::min<uint32_t>(64, d.info.context_length);
  d.default_memory.all = MemorySetting::full_context(d.info.context_length, d.default_memory.chunk);
  apply_memory(c, d.default_memory);
  // What the stack itself refuses (a context past 32-bit counts, ...) is the file's fault.
  try {
    c.validate();
  } catch (const Error& e) {
    fail(ErrorCode::malformed_input, file.path().string() + ": " + e.what());
  }
  d.info = check_tensors(file, c, d.info);
  return d;
}

}  // namespace attendre::gguf
