// T5 from GGUF as llama.cpp's convert_hf_to_gguf.py writes it (src/models/
// t5-enc.cpp and t5-dec.cpp run it there): pre-norm RMSNorm blocks without
// biases (T5LayerNorm has no mean and no shift), relative position buckets
// in every self-attention (the table in block 0 unless a block has its own,
// as in UMT5), logits unscaled (T5 folds 1/sqrt(d) into its weights),
// a gated-GELU FFN where ffn_gate exists (T5 v1.1, FLAN-T5, mT5) and a plain
// ReLU one where it does not (the original T5). The encoder reads the input
// bidirectionally; each decoder layer is attendre's self-attention block 2l
// (no FFN) followed by its cross-attention block 2l + 1 (with the FFN).
#include "model/gguf_architecture.hpp"

#include "core/try.hpp"
#include "gguf/gguf_metadata.hpp"
#include "model/gguf_tensor_check.hpp"
#include "text/tokenizer.hpp"

#include <cmath>
#include <string_view>

namespace attendre::gguf {
namespace {

// T5's relative_attention_max_distance: not in GGUF, and 128 in every T5
// config and in llama.cpp (llama_relative_position_bucket).
constexpr uint32_t kT5MaxDistance = 128;

// llama.cpp names the attention output "attn_o" in T5 files, "attn_output" elsewhere.
std::string t5_tensor(std::string_view stack_tensor) {
  if (stack_tensor.rfind("attn_output.", 0) == 0) return "attn_o" + std::string(stack_tensor.substr(11));
  return std::string(stack_tensor);
}

// "enc.blk.3.attn_q.weight" -> {"enc.blk.", 3, "attn_q.weight"}; false for other names.
bool split_block_name(std::string_view name, std::string_view& prefix, uint32_t& block, std::string_view& rest) {
  for (std::string_view p : {"enc.blk.", "dec.blk."}) {
    if (name.rfind(p, 0) != 0) continue;
    const size_t dot = name.find('.', p.size());
    if (dot == std::string_view::npos || dot == p.size()) return false;
    block = 0;
    for (char c : name.substr(p.size(), dot - p.size())) {
      if (c < '0' || c > '9') return false;
      block = block * 10 + static_cast<uint32_t>(c - '0');
    }
    prefix = p;
    rest = name.substr(dot + 1);
    return true;
  }
  return false;
}

// The encoder-decoder's stack names ("enc." / "dec." + core/model_spec.hpp's)
// to llama.cpp's T5 names; "" for a name the file spells as the stack does.
std::string t5_file_name(const std::string& stack_name) {
  if (stack_name == "enc.token_embd.weight" || stack_name == "dec.token_embd.weight") return "token_embd.weight";
  if (stack_name == "dec.output.weight") return "output.weight";
  std::string_view prefix, rest;
  uint32_t block = 0;
  if (!split_block_name(stack_name, prefix, block, rest)) return {};
  if (prefix == "enc.blk.") return "enc.blk." + std::to_string(block) + "." + t5_tensor(rest);
  const std::string layer = "dec.blk." + std::to_string(block / 2) + ".";
  if (block % 2 == 0) return layer + t5_tensor(rest);  // self-attention: norm, q/k/v/o, bias table
  if (rest.rfind("ffn_", 0) == 0) return layer + std::string(rest);
  return layer + "cross_" + t5_tensor(rest);  // cross_attn_norm, cross_attn_q, ..., cross_attn_o
}

struct T5Stacks {
  uint32_t hidden, vocab, ffn, buckets, heads, heads_kv, head_dim;
  float eps;
};

BlockConfig t5_block(const T5Stacks& t, bool gated) {
  BlockConfig b;
  b.attention.shape = {t.heads, t.heads_kv, t.head_dim};
  b.attention.retrieval.scale = 1.0;
  b.ffn = t.ffn;
  b.norm = NormKind::rms;
  b.norm_eps = t.eps;
  b.gated = gated;
  // llama.cpp's LLM_FFN_GELU is ggml_gelu, the tanh approximation ("gelu_new" in T5 v1.1's gated-gelu).
  b.activation = gated ? ActivationKind::gelu_tanh : ActivationKind::relu;
  b.rope = false;
  return b;
}

// Self-attention with T5 buckets; the table is the block's own where the
// file has one, else the one of the stack's first block.
void use_buckets(BlockConfig& b, const T5Stacks& t, bool bidirectional, bool own_table, uint32_t first_block) {
  b.attention.retrieval.bias = BiasKind::t5;
  b.attention.retrieval.t5.num_buckets = t.buckets;
  b.attention.retrieval.t5.max_distance = kT5MaxDistance;
  b.attention.retrieval.t5.bidirectional = bidirectional;
  if (!own_table) b.t5_table_block = first_block;
}

StackConfig t5_stack(const T5Stacks& t, uint32_t blocks) {
  StackConfig c;
  c.hidden = t.hidden;
  c.vocab = t.vocab;
  c.final_norm = NormKind::rms;
  c.final_norm_eps = t.eps;
  c.blocks.reserve(blocks);
  return c;
}

StackConfig encoder_stack(const File& file, const T5Stacks& t, uint32_t blocks) {
  StackConfig c = t5_stack(t, blocks);
  c.tied_embeddings = true;  // the token table embeds; the encoder has no LM head of its own
  const bool gated = file.find_tensor("enc.blk.0.ffn_gate.weight") != nullptr;
  for (uint32_t l = 0; l < blocks; ++l) {
    BlockConfig b = t5_block(t, gated);
    use_buckets(b, t, true, l == 0 || file.find_tensor("enc.blk." + std::to_string(l) + ".attn_rel_b.weight"), 0);
    c.blocks.push_back(b);
  }
  return c;
}

StackConfig decoder_stack(const File& file, const T5Stacks& t, uint32_t layers) {
  StackConfig c = t5_stack(t, 2 * layers);
  c.tied_embeddings = file.find_tensor("output.weight") == nullptr;
  const bool gated = file.find_tensor("dec.blk.0.ffn_gate.weight") != nullptr;
  for (uint32_t l = 0; l < layers; ++l) {
    BlockConfig self = t5_block(t, gated);
    self.ffn = 0;  // the layer's FFN follows its cross-attention
    use_buckets(self, t, false, l == 0 || file.find_tensor("dec.blk." + std::to_string(l) + ".attn_rel_b.weight"), 0);
    BlockConfig cross = t5_block(t, gated);
    cross.cross_attention = true;
    c.blocks.push_back(self);
    c.blocks.push_back(cross);
  }
  return c;
}

}  // namespace

Result<ModelDescription> describe_t5(const File& file, const std::string& architecture, WeightType storage) {
  const bool encoder_only = architecture == "t5encoder";
  const Metadata m(file, architecture);
  ModelDescription d;
  d.info.architecture = architecture;
  ATTENDRE_TRY_ASSIGN(d.info.name, file.get_string("general.name", ""));
  d.info.kind = encoder_only ? ModelKind::encoder : ModelKind::encoder_decoder;
  // convert_hf_to_gguf.py writes n_positions, 512 when the config has none.
  ATTENDRE_TRY_ASSIGN(d.info.context_length, m.count("context_length"));
  T5Stacks t{};
  ATTENDRE_TRY_ASSIGN(t.hidden, m.count("embedding_length"));
  ATTENDRE_TRY_ASSIGN(t.vocab, m.vocabulary_size());
  ATTENDRE_TRY_ASSIGN(t.ffn, m.count("feed_forward_length"));
  ATTENDRE_TRY_ASSIGN(t.buckets, m.count("attention.relative_buckets_count"));
  ATTENDRE_TRY_ASSIGN(t.heads, m.count("attention.head_count"));
  ATTENDRE_TRY_ASSIGN(t.head_dim, m.head_dim(t.hidden, t.heads));
  ATTENDRE_TRY_ASSIGN(t.heads_kv, m.kv_heads(t.heads));
  // The converter writes T5's layer_norm_epsilon under both keys.
  const char* eps_key = m.find("attention.layer_norm_rms_epsilon") || !m.find("attention.layer_norm_epsilon")
                            ? "attention.layer_norm_rms_epsilon"
                            : "attention.layer_norm_epsilon";
  ATTENDRE_TRY_ASSIGN(t.eps, m.epsilon(eps_key));
  ATTENDRE_TRY_ASSIGN(d.info.blocks, m.block_count("block_count"));
  d.stack = encoder_stack(file, t, d.info.blocks);
  d.stack.weights = storage;
  d.default_memory.chunk = std::min<uint32_t>(64, d.info.context_length);
  ATTENDRE_TRY_ASSIGN(d.default_memory.all,
                      MemorySetting::full_bidirectional(d.info.context_length, d.default_memory.chunk));
  ATTENDRE_TRY(apply_memory(d.stack, d.default_memory));
  ATTENDRE_TRY(validate_as_file(file, d.stack));

  std::vector<CheckedStack> stacks = {{&d.stack, encoder_only ? "" : "enc."}};
  std::set<std::string> ignorable;
  if (encoder_only) {
    d.naming = [](const std::string& name) {
      const std::string file_name = t5_file_name("enc." + name);
      return file_name.empty() ? "enc." + name : file_name;
    };
  } else {
    ATTENDRE_TRY_ASSIGN(d.info.decoder_layers, m.block_count("decoder_block_count", d.info.blocks));
    if (const auto start = m.find("decoder_start_token_id")) {
      ATTENDRE_TRY_ASSIGN(const uint64_t id, start->as_u64(m.key("decoder_start_token_id")));
      if (id >= t.vocab)
        return m.key_error(ErrorCode::malformed_input, "decoder_start_token_id",
                           std::to_string(id) + " is not a token of the " + std::to_string(t.vocab) +
                               "-token vocabulary");
      d.info.decoder_start_token = static_cast<uint32_t>(id);
    } else {
      // The padding id, read (and range-checked) as the vocabulary reads it.
      constexpr std::string_view kPadding = "tokenizer.ggml.padding_token_id";
      ATTENDRE_TRY_ASSIGN(const std::optional<int32_t> pad, tokenizer::special_token_id(file, kPadding, t.vocab));
      if (!pad)
        return m.key_error(ErrorCode::malformed_input, "decoder_start_token_id",
                           file.find(kPadding) ? "is missing, and tokenizer.ggml.padding_token_id that T5 starts "
                                                 "decoding from says none"
                                               : "is missing, and so is tokenizer.ggml.padding_token_id that T5 "
                                                 "starts decoding from");
      d.info.decoder_start_token = static_cast<uint32_t>(*pad);
    }
    d.decoder = decoder_stack(file, t, d.info.decoder_layers);
    d.decoder->weights = storage;
    EncoderDecoderConfig placeholder{d.stack, *d.decoder, 1};
    ATTENDRE_TRY(apply_encoder_decoder_memory(placeholder, {d.default_memory, 1, 1}));
    d.decoder = placeholder.decoder;
    ATTENDRE_TRY(validate_as_file(file, *d.decoder));
    stacks.push_back({&*d.decoder, "dec."});
    d.naming = t5_file_name;
    // With tied embeddings T5 scales the decoder's output by d_model^-0.5
    // before the LM head (Hugging Face's T5ForConditionalGeneration); the
    // final RMSNorm's gain is where a stack can hold that factor.
    if (d.decoder->tied_embeddings) d.scaled["dec.output_norm.weight"] = 1.0 / std::sqrt(static_cast<double>(t.hidden));
    // Hugging Face's T5 builds cross-attention without a bias table, and
    // llama.cpp loads this one (t5-small's checkpoint has it) but never uses it.
    for (uint32_t l = 0; l < d.info.decoder_layers; ++l)
      ignorable.insert("dec.blk." + std::to_string(l) + ".cross_attn_rel_b.weight");
  }
  FileWeights weights(file, d.naming);
  ATTENDRE_TRY_ASSIGN(d.info, check_tensors(file, weights, stacks, ignorable, d.info));
  return d;
}

}  // namespace attendre::gguf
