// A random-weight llama GGUF; see random_llama.hpp.
#include "model/random_llama.hpp"

#include "core/model_spec.hpp"
#include "core/try.hpp"
#include "gguf/quant.hpp"
#include "text/tokenizer_unicode.hpp"

#include <attendre/memory_plan.hpp>
#include <attendre/tensor.hpp>

#include <array>

namespace attendre::gguf {
namespace {

// llama.cpp's llama_ftype for the files whose 2-D tensors are all `type`
// (general.file_type, which llama-bench prints); none for the others.
std::optional<uint32_t> file_type(TensorType type) {
  switch (type) {
    case TensorType::f32: return 0;
    case TensorType::f16: return 1;
    case TensorType::q4_0: return 2;
    case TensorType::q4_1: return 3;
    case TensorType::q8_0: return 7;
    case TensorType::q5_0: return 8;
    case TensorType::q5_1: return 9;
    case TensorType::bf16: return 32;
    default: return std::nullopt;
  }
}

Status check_shape(const RandomLlamaShape& s) {
  const std::array<std::pair<const char*, uint32_t>, 6> counts = {
      {{"hidden", s.hidden}, {"blocks", s.blocks}, {"heads", s.heads}, {"heads-kv", s.heads_kv}, {"ffn", s.ffn},
       {"context", s.context}}};
  for (const auto& [name, count] : counts)
    if (count == 0) return invalid_argument(std::string(name) + " must be at least 1");
  if (s.context > kMaxRandomLlamaContext)
    return invalid_argument("context " + std::to_string(s.context) + " is past the " +
                            std::to_string(kMaxRandomLlamaContext) + " positions a stack counts");
  if (s.hidden % s.heads != 0)
    return invalid_argument("hidden " + std::to_string(s.hidden) + " does not split into " + std::to_string(s.heads) +
                            " heads");
  if ((s.hidden / s.heads) % 2 != 0)
    return invalid_argument("heads of " + std::to_string(s.hidden / s.heads) + " values (hidden " +
                            std::to_string(s.hidden) + " / heads " + std::to_string(s.heads) +
                            ") are odd: RoPE turns pairs");
  if (s.heads % s.heads_kv != 0)
    return invalid_argument("heads " + std::to_string(s.heads) + " do not split into groups of heads-kv " +
                            std::to_string(s.heads_kv));
  return {};
}

// The stack the file describes, as lib/model reads a llama file back
// (gguf_architecture.cpp): what model_spec() needs. Its memories are the
// smallest valid ones, which name no tensor, so any context length works.
Result<StackConfig> stack_of(const RandomLlamaShape& s, uint32_t vocab) {
  StackConfig c;
  c.hidden = s.hidden;
  c.vocab = vocab;
  c.tied_embeddings = s.tied_head;
  c.final_norm_eps = s.norm_eps;
  BlockConfig b;
  b.attention.shape = {s.heads, s.heads_kv, s.hidden / s.heads};
  b.ffn = s.ffn;
  b.norm_eps = s.norm_eps;
  b.rope_theta = s.rope_theta;
  c.blocks.assign(s.blocks, b);
  MemoryPlan plan;
  plan.chunk = 1;
  ATTENDRE_TRY_ASSIGN(plan.all, MemorySetting::full_context(1, plan.chunk));
  ATTENDRE_TRY(apply_memory(c, plan));
  ATTENDRE_TRY(c.check());
  return c;
}

// The built-in vocabulary (random_llama.hpp); its size.
Result<uint32_t> add_builtin_vocabulary(Writer& w) {
  const auto& bytes = tokenizer::unicode::byte_level_alphabet();
  std::vector<std::string> tokens(bytes.begin(), bytes.end());
  std::vector<int32_t> types(tokens.size(), 1);
  tokens.push_back("<|endoftext|>");
  types.push_back(3);
  const uint32_t end = static_cast<uint32_t>(tokens.size() - 1);
  ATTENDRE_TRY(w.add("tokenizer.ggml.model", MetadataValue::string("gpt2")));
  ATTENDRE_TRY(w.add("tokenizer.ggml.pre", MetadataValue::string("gpt-2")));
  ATTENDRE_TRY(w.add("tokenizer.ggml.tokens", MetadataValue::strings(tokens)));
  ATTENDRE_TRY(w.add("tokenizer.ggml.token_type", MetadataValue::i32s(types)));
  ATTENDRE_TRY(w.add("tokenizer.ggml.merges", MetadataValue::strings({})));
  ATTENDRE_TRY(w.add("tokenizer.ggml.bos_token_id", MetadataValue::u32(end)));
  ATTENDRE_TRY(w.add("tokenizer.ggml.eos_token_id", MetadataValue::u32(end)));
  ATTENDRE_TRY(w.add("tokenizer.ggml.add_bos_token", MetadataValue::boolean(false)));
  return end + 1;
}

// Every tokenizer.* key of `file`, in its order; the vocabulary size.
Result<uint32_t> copy_vocabulary(const File& file, Writer& w) {
  const std::optional<Value> tokens = file.find("tokenizer.ggml.tokens");
  if (!tokens) return malformed_input(file.path().string() + ": no tokenizer.ggml.tokens: not a vocabulary");
  ATTENDRE_TRY_ASSIGN(const uint64_t count, tokens->size());
  if (count == 0 || count > UINT32_MAX)
    return malformed_input(file.path().string() + ": tokenizer.ggml.tokens holds " + std::to_string(count) +
                           " tokens, expected [1, 2^32)");
  for (const std::string& key : file.keys()) {
    if (!key.starts_with("tokenizer.")) continue;
    ATTENDRE_TRY_ASSIGN(const Value value, file.get(key));
    ATTENDRE_TRY_ASSIGN(MetadataValue copy, copy_value(value, key));
    ATTENDRE_TRY(w.add(key, std::move(copy)));
  }
  return static_cast<uint32_t>(count);
}

// Bytes of a [rows][cols] tensor of `type`; invalid_argument when its rows
// do not split into the type's blocks.
Result<uint64_t> tensor_bytes(const std::string& name, uint64_t rows, uint64_t cols, TensorType type) {
  const BlockSize block = *block_size(type);
  if (cols % block.elements != 0)
    return invalid_argument(name + ": rows of " + std::to_string(cols) + " values do not split into the " +
                            std::to_string(block.elements) + "-value blocks of " + to_string(type));
  return rows * (cols / block.elements) * block.bytes;
}

struct PlannedTensor {
  std::string name;
  std::vector<uint64_t> shape;  // row-major
  TensorType type;
};

Result<std::vector<PlannedTensor>> plan_tensors(const ModelSpec& spec, TensorType weights) {
  std::vector<PlannedTensor> out;
  const auto matrix = [&](const MatrixSpec& m) { out.push_back({m.name, {m.rows, m.cols}, weights}); };
  const auto vector = [&](const VectorSpec& v) { out.push_back({v.name, {v.size}, TensorType::f32}); };
  matrix(*spec.token_embd);
  for (const BlockSpec& b : spec.blocks) {
    vector(b.attn_norm);
    for (const MatrixSpec* m : {&b.wq, &b.wk, &b.wv, &b.wo}) matrix(*m);
    vector(*b.ffn_norm);
    for (const MatrixSpec* m : {&*b.gate, &*b.up, &*b.down}) matrix(*m);
  }
  vector(spec.output_norm);
  if (spec.output) matrix(*spec.output);
  uint64_t total = 0;
  for (const PlannedTensor& t : out) {
    const uint64_t cols = t.shape.back(), rows = t.shape.size() == 2 ? t.shape[0] : 1;
    ATTENDRE_TRY_ASSIGN(const uint64_t bytes, tensor_bytes(t.name, rows, cols, t.type));
    total += bytes;
  }
  if (total > kMaxRandomLlamaBytes)
    return invalid_argument("the tensors would take " + std::to_string(total) + " bytes, more than the " +
                            std::to_string(kMaxRandomLlamaBytes) + " this writer holds in memory");
  return out;
}

}  // namespace

std::optional<RandomLlamaShape> named_llama_shape(std::string_view name) {
  if (name == "smollm-135m") {
    RandomLlamaShape s;
    s.hidden = 576;
    s.blocks = 30;
    s.heads = 9;
    s.heads_kv = 3;
    s.ffn = 1536;
    s.context = 2048;
    return s;
  }
  return std::nullopt;
}

Result<Writer> random_llama(const RandomLlamaOptions& options) {
  const RandomLlamaShape& s = options.shape;
  ATTENDRE_TRY(check_shape(s));
  if (!has_reference_codec(options.weights) || !block_size(options.weights))
    return Status(ErrorCode::unsupported, "no quantizer writes " + to_string(options.weights) + " tensors");

  ATTENDRE_TRY_ASSIGN(Writer w, Writer::create());
  const std::string a = "llama.";
  ATTENDRE_TRY(w.add("general.architecture", MetadataValue::string("llama")));
  ATTENDRE_TRY(w.add("general.name", MetadataValue::string(options.name)));
  if (const std::optional<uint32_t> type = file_type(options.weights))
    ATTENDRE_TRY(w.add("general.file_type", MetadataValue::u32(*type)));
  ATTENDRE_TRY(w.add(a + "context_length", MetadataValue::u32(s.context)));
  ATTENDRE_TRY(w.add(a + "embedding_length", MetadataValue::u32(s.hidden)));
  ATTENDRE_TRY(w.add(a + "block_count", MetadataValue::u32(s.blocks)));
  ATTENDRE_TRY(w.add(a + "feed_forward_length", MetadataValue::u32(s.ffn)));
  ATTENDRE_TRY(w.add(a + "attention.head_count", MetadataValue::u32(s.heads)));
  ATTENDRE_TRY(w.add(a + "attention.head_count_kv", MetadataValue::u32(s.heads_kv)));
  ATTENDRE_TRY(w.add(a + "rope.dimension_count", MetadataValue::u32(s.hidden / s.heads)));
  ATTENDRE_TRY(w.add(a + "rope.freq_base", MetadataValue::f32(static_cast<float>(s.rope_theta))));
  ATTENDRE_TRY(w.add(a + "attention.layer_norm_rms_epsilon", MetadataValue::f32(s.norm_eps)));
  uint32_t vocab = 0;
  if (options.vocabulary) {
    ATTENDRE_TRY_ASSIGN(vocab, copy_vocabulary(*options.vocabulary, w));
  } else {
    ATTENDRE_TRY_ASSIGN(vocab, add_builtin_vocabulary(w));
  }
  ATTENDRE_TRY(w.add(a + "vocab_size", MetadataValue::u32(vocab)));

  ATTENDRE_TRY_ASSIGN(const StackConfig config, stack_of(s, vocab));
  ATTENDRE_TRY_ASSIGN(const ModelSpec spec, model_spec(config));
  ATTENDRE_TRY_ASSIGN(const std::vector<PlannedTensor> tensors, plan_tensors(spec, options.weights));
  const RandomWeights random(options.seed);
  for (const PlannedTensor& t : tensors) {
    const std::vector<float> values = random.values(t.name, t.shape);
    ATTENDRE_TRY_ASSIGN(std::vector<std::byte> bytes, quantize(t.type, values));
    ATTENDRE_TRY(w.add_tensor({t.name, {t.shape.rbegin(), t.shape.rend()}, t.type, std::move(bytes), std::nullopt}));
  }
  return w;
}

}  // namespace attendre::gguf
