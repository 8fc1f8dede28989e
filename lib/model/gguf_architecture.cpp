// general.architecture and <arch>.* keys into a StackConfig, with the
// defaults llama.cpp applies when a key is absent (rope.freq_base 10000,
// rope.dimension_count = head dim, head_count_kv = head_count).
#include "model/gguf_architecture.hpp"

#include "core/model_spec.hpp"
#include "core/number_text.hpp"
#include "core/printable.hpp"
#include "core/try.hpp"
#include "gguf/gguf_metadata.hpp"
#include "model/gguf_rope_scaling.hpp"
#include "model/gguf_tensor_check.hpp"

#include <algorithm>
#include <array>
#include <set>

namespace attendre::gguf {
namespace {

// How a decoder-only architecture's blocks differ from the pre-norm
// RMSNorm / SwiGLU / RoPE block every supported one shares, as llama.cpp's
// graph for it computes them.
struct Architecture {
  std::string_view name;
  RopeLayout rope_layout;  // llama's converters permute q/k into adjacent pairs; the others keep NeoX halves
  bool qkv_bias;           // required q/k/v biases; without, the file's blk.0 says which biases exist
  bool qk_norm;            // qwen3, gemma3: per-head RMS norms of q and k before RoPE (attn_q_norm, attn_k_norm)
  // phi3: q, k and v as rows of one attn_qkv where a block has it, and the
  // gate and up rows fused in ffn_up [2 * ffn][hidden] (SwiGLU of its halves).
  bool fused;
  bool gemma = false;      // describe_gemma() changes the blocks (gguf_gemma.cpp)
};
constexpr std::array<Architecture, 6> kDecoders = {{
    {"llama", RopeLayout::normal, false, false, false},
    {"qwen2", RopeLayout::neox, true, false, false},
    {"qwen3", RopeLayout::neox, false, true, false},
    {"phi3", RopeLayout::neox, false, false, true},
    {"gemma2", RopeLayout::neox, false, false, false, true},
    {"gemma3", RopeLayout::neox, false, true, false, true},
}};

// phi3's fused tensors as row slices (gguf_weights.hpp): the stack's q, k,
// v of block l from blk.l.attn_qkv rows [q | k | v] when the block has that
// tensor (llama.cpp then reads no attn_q/k/v), and its gate and up from
// blk.l.ffn_up rows [gate | up], which llama.cpp's SwiGLU splits in halves
// (silu of the first half times the second).
RowSlices fused_slices(const File& file, const StackConfig& c) {
  RowSlices slices;
  for (size_t l = 0; l < c.blocks.size(); ++l) {
    const BlockConfig& b = c.blocks[l];
    const std::string p = "blk." + std::to_string(l) + ".";
    const uint64_t q = b.attention.shape.q_row(), kv = b.attention.shape.kv_row();
    if (file.find_tensor(p + "attn_qkv.weight")) {
      const std::string fused = p + "attn_qkv.weight";
      slices[p + "attn_q.weight"] = {fused, 0, q, q + 2 * kv};
      slices[p + "attn_k.weight"] = {fused, q, kv, q + 2 * kv};
      slices[p + "attn_v.weight"] = {fused, q + kv, kv, q + 2 * kv};
    }
    const std::string up = p + "ffn_up.weight";
    slices[p + "ffn_gate.weight"] = {up, 0, b.ffn, 2ull * b.ffn};
    slices[p + "ffn_up.weight"] = {up, b.ffn, b.ffn, 2ull * b.ffn};
  }
  return slices;
}

// llama.cpp multiplies the rotated dims of q and k by rope.scaling.attn_factor
// (ggml's mscale; LongRoPE's sqrt(1 + ln(s) / ln(original context))) on
// every architecture. With every dim rotated that is the factor squared on
// the attention logits, which is where attendre applies it; with partial
// rotary dims the unrotated ones keep their size, which no logit scale
// expresses, and such a file is refused.
Status apply_attention_factor(const Metadata& m, StackConfig& c) {
  ATTENDRE_TRY_ASSIGN(const double factor, m.positive("rope.scaling.attn_factor", 1.0));
  if (factor == 1.0) return {};
  for (BlockConfig& b : c.blocks) {
    if (b.rope_dims != b.attention.shape.head_dim)
      return m.key_error(ErrorCode::unsupported, "rope.scaling.attn_factor",
                         shortest_text(factor) + " with " + std::to_string(b.rope_dims) + " rotary dims of heads of " +
                             std::to_string(b.attention.shape.head_dim) + " is not supported (whole heads only)");
    b.attention.retrieval.scale = b.attention.scale() * factor * factor;
  }
  return {};
}

// LongRoPE's table the memory does not pick, checked as the one it picks.
Status check_other_long_rope_table(FileWeights& weights, const File& file, const StackConfig& c) {
  StackConfig other = c;
  for (BlockConfig& b : other.blocks) b.rope_scaling.long_factors = !b.rope_scaling.long_factors;
  ATTENDRE_TRY_ASSIGN(const ModelSpec spec, model_spec(other));
  if (!spec.rope_freqs) return {};  // no block turns by RoPE
  const VectorSpec& v = *spec.rope_freqs;
  const uint64_t shape[] = {v.size};
  ATTENDRE_TRY_ASSIGN(const std::optional<ElementType> type, weights.type_of(v.name, shape));
  if (!type) return Status(ErrorCode::malformed_input, file.path().string() + ": tensor " + quote(v.name) + " is missing");
  return {};
}

Result<BlockConfig> block_config(const Metadata& m, const Architecture& a, uint32_t hidden) {
  const File& file = m.file();
  BlockConfig b;
  AttentionShape& s = b.attention.shape;
  ATTENDRE_TRY_ASSIGN(s.heads_q, m.count("attention.head_count"));
  ATTENDRE_TRY_ASSIGN(s.head_dim, m.head_dim(hidden, s.heads_q));
  ATTENDRE_TRY_ASSIGN(s.heads_kv, m.kv_heads(s.heads_q));
  ATTENDRE_TRY_ASSIGN(b.ffn, m.count("feed_forward_length"));
  b.norm = NormKind::rms;
  ATTENDRE_TRY_ASSIGN(b.norm_eps, m.epsilon("attention.layer_norm_rms_epsilon"));
  b.activation = ActivationKind::silu;
  b.gated = true;
  b.rope = true;
  b.rope_layout = a.rope_layout;
  ATTENDRE_TRY_ASSIGN(b.rope_dims, m.count("rope.dimension_count", s.head_dim));
  if (b.rope_dims % 2 != 0 || b.rope_dims > s.head_dim)
    return m.key_error(ErrorCode::malformed_input, "rope.dimension_count",
                       std::to_string(b.rope_dims) + " must be even and at most the head dim " +
                           std::to_string(s.head_dim));
  // llama.cpp's qwen3 graph asserts that RoPE turns whole heads.
  if (a.qk_norm && b.rope_dims != s.head_dim)
    return m.key_error(ErrorCode::unsupported, "rope.dimension_count",
                       std::to_string(b.rope_dims) + " rotary dims of heads of " + std::to_string(s.head_dim) +
                           ": " + std::string(a.name) + " rotates whole heads");
  ATTENDRE_TRY_ASSIGN(b.rope_theta, m.positive("rope.freq_base", 10000.0));
  ATTENDRE_TRY_ASSIGN(b.rope_scaling, read_rope_scaling(m));
  // llama.cpp's llama loads q/k/v/output and FFN biases when the file has
  // them; its phi3 loads none (a bias in a phi3 file is refused as ignored).
  if (!a.fused) {
    b.qkv_bias = a.qkv_bias || file.find_tensor("blk.0.attn_q.bias");
    b.output_bias = file.find_tensor("blk.0.attn_output.bias") != nullptr;
    b.ffn_bias = file.find_tensor("blk.0.ffn_up.bias") != nullptr;
  }
  b.qk_norm = a.qk_norm;
  return b;
}

}  // namespace

Status validate_as_file(const File& file, const StackConfig& config) {
  Status status = config.check();
  if (status.ok()) return status;
  return Status(ErrorCode::malformed_input, file.path().string() + ": " + status.message());
}

Result<ModelDescription> describe_decoder(const File& file, const std::string& architecture, WeightType storage) {
  const Architecture& a = *std::find_if(kDecoders.begin(), kDecoders.end(),
                                        [&](const Architecture& d) { return d.name == architecture; });
  const Metadata m(file, a.name);
  if (m.find("expert_count")) {
    ATTENDRE_TRY_ASSIGN(const uint32_t experts, m.count("expert_count"));
    if (experts > 1) return m.key_error(ErrorCode::unsupported, "expert_count", "mixtures of experts are not supported");
  }

  ModelDescription d;
  d.info.architecture = a.name;
  ATTENDRE_TRY_ASSIGN(d.info.name, file.get_string("general.name", ""));
  ATTENDRE_TRY_ASSIGN(d.info.context_length, m.count("context_length"));
  StackConfig& c = d.stack;
  ATTENDRE_TRY_ASSIGN(c.hidden, m.count("embedding_length"));
  ATTENDRE_TRY_ASSIGN(c.vocab, m.vocabulary_size());
  c.final_norm = NormKind::rms;
  c.weights = storage;
  // Without output.weight the LM head is the embedding table (SmolLM, Qwen2 0.5B, ...).
  c.tied_embeddings = file.find_tensor("output.weight") == nullptr;
  ATTENDRE_TRY_ASSIGN(const BlockConfig block, block_config(m, a, c.hidden));
  c.final_norm_eps = block.norm_eps;
  ATTENDRE_TRY_ASSIGN(d.info.blocks, m.block_count("block_count"));
  c.blocks.assign(d.info.blocks, block);
  if (a.gemma) ATTENDRE_TRY(describe_gemma(m, architecture, c));
  ATTENDRE_TRY(apply_attention_factor(m, c));

  d.default_memory.chunk = std::min<uint32_t>(64, d.info.context_length);
  ATTENDRE_TRY_ASSIGN(d.default_memory.all,
                      MemorySetting::full_context(d.info.context_length, d.default_memory.chunk));
  ATTENDRE_TRY(apply_memory(c, d.default_memory));
  ATTENDRE_TRY(validate_as_file(file, c));
  if (a.fused) d.slices = fused_slices(file, c);
  FileWeights weights(file, {}, {}, d.slices);
  const CheckedStack stacks[] = {{&c, ""}};
  std::set<std::string> other_table;
  if (c.blocks[0].rope_scaling.long_rope) {
    ATTENDRE_TRY(check_other_long_rope_table(weights, file, c));
    other_table.insert(c.blocks[0].rope_scaling.long_factors ? "rope_factors_short.weight" : "rope_factors_long.weight");
  }
  ATTENDRE_TRY_ASSIGN(d.info, check_tensors(file, weights, stacks, other_table, d.info));
  return d;
}

Result<ModelDescription> describe_model(const File& file, WeightType storage) {
  ATTENDRE_TRY_ASSIGN(const std::string name, file.get_string("general.architecture"));
  if (name == "t5" || name == "t5encoder") return describe_t5(file, name, storage);
  for (const Architecture& a : kDecoders)
    if (a.name == name) return describe_decoder(file, name, storage);
  return Status(ErrorCode::unsupported, file.path().string() + ": metadata key \"general.architecture\": architecture '" +
                                            printable(name) + "' is not supported (supported: llama, qwen2, qwen3, phi3, gemma2, gemma3, t5, t5encoder)");
}

}  // namespace attendre::gguf
