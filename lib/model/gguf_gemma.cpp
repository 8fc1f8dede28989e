// Gemma 2 and Gemma 3 (llama.cpp's gemma2 and gemma3 graphs) over the shared
// decoder description: token embeddings scaled by sqrt(hidden), GELU-gated
// FFNs (tanh approximation, as ggml_gelu), post-attention and post-FFN
// RMSNorms, NeoX RoPE, and sliding-window blocks in a fixed pattern: Gemma
// 2 alternates local and global blocks and soft-caps its attention and
// final logits; Gemma 3 has five local blocks to one global, each kind with
// its own RoPE base (a file without a window, or with 0, has only global
// blocks, and caps its final logits only where it has the key, as in
// llama.cpp). The converters already store RMSNorm weights as
// 1 + w, which llama.cpp multiplies by as they are: so does attendre.
#include "model/gguf_architecture.hpp"

#include "core/try.hpp"
#include "gguf/gguf_metadata.hpp"

#include <cmath>

namespace attendre::gguf {
namespace {

struct GemmaGeneration {
  uint32_t pattern;          // block l is local unless l % pattern == pattern - 1
  // llama.cpp's window when attention.sliding_window is absent; none: the
  // key is optional, and absent or 0 means no window (every block global).
  std::optional<uint32_t> default_window;
  uint32_t large_blocks;     // the 27B's block count, whose queries llama.cpp scales by 1/sqrt(hidden / heads)
  bool soft_caps;            // Gemma 2: attention and final logit soft-capping (Gemma 3: final only, where the file has it)
  bool local_rope_base;      // Gemma 3: local blocks rotate with rope.freq_base_swa, unscaled
};

constexpr GemmaGeneration kGemma2{2, 4096, 46, true, false};
constexpr GemmaGeneration kGemma3{6, std::nullopt, 62, false, true};

}  // namespace

Status describe_gemma(const Metadata& m, const std::string& architecture, StackConfig& c) {
  const GemmaGeneration& g = architecture == "gemma2" ? kGemma2 : kGemma3;
  // llama.cpp scales in fp32: the factors are the floats it computes.
  c.embedding_scale = std::sqrt(static_cast<float>(c.hidden));
  if (g.soft_caps) {
    ATTENDRE_TRY_ASSIGN(c.logit_soft_cap, m.positive("final_logit_softcapping", 30.0));
  } else {
    // llama.cpp's gemma3 caps the final logits only where the file says so
    // (0, as absent, is no cap).
    ATTENDRE_TRY_ASSIGN(const double cap, m.number("final_logit_softcapping", 0.0));
    if (cap != 0.0) {
      ATTENDRE_TRY_ASSIGN(c.logit_soft_cap, m.positive("final_logit_softcapping"));
    }
  }
  double attention_cap = 0.0;
  if (g.soft_caps) {
    ATTENDRE_TRY_ASSIGN(attention_cap, m.positive("attn_logit_softcapping", 50.0));
  }
  uint32_t window = 0;
  if (g.default_window) {
    ATTENDRE_TRY_ASSIGN(window, m.count("attention.sliding_window", g.default_window));
  } else {
    ATTENDRE_TRY_ASSIGN(const double w, m.number("attention.sliding_window", 0.0));
    if (w != 0.0) {
      ATTENDRE_TRY_ASSIGN(window, m.count("attention.sliding_window"));
    }
  }
  double local_base = 0.0;
  if (g.local_rope_base) {
    ATTENDRE_TRY_ASSIGN(local_base, m.positive("rope.freq_base_swa", 10000.0));
  }
  const auto blocks = static_cast<uint32_t>(c.blocks.size());
  for (uint32_t l = 0; l < blocks; ++l) {
    BlockConfig& b = c.blocks[l];
    const AttentionShape& s = b.attention.shape;
    b.activation = ActivationKind::gelu_tanh;
    b.gated = true;
    b.post_norms = true;
    const uint32_t query_dim = blocks == g.large_blocks ? c.hidden / s.heads_q : s.head_dim;
    b.attention.retrieval.scale = 1.0f / std::sqrt(static_cast<float>(query_dim));
    b.attention.retrieval.soft_cap = attention_cap;
    const bool local = window != 0 && l % g.pattern != g.pattern - 1;
    b.sliding_window = local ? window : 0;
    if (local && g.local_rope_base) {
      b.rope_theta = local_base;
      b.rope_scaling = RopeScaling{};
    }
  }
  return {};
}

}  // namespace attendre::gguf
