#include "model/gguf_rope_scaling.hpp"

#include "core/number_text.hpp"
#include "core/printable.hpp"
#include "core/try.hpp"

namespace attendre::gguf {

Result<RopeScaling> read_rope_scaling(const Metadata& m) {
  ATTENDRE_TRY_ASSIGN(const std::string type, m.text("rope.scaling.type", "linear"));
  const char* factor_key = m.find("rope.scaling.factor") || !m.find("rope.scale_linear") ? "rope.scaling.factor"
                                                                                          : "rope.scale_linear";
  // llama.cpp reads an absent or zero factor as 1.
  ATTENDRE_TRY_ASSIGN(const double given, m.number(factor_key, 0.0));
  double factor = 1.0;
  if (given != 0.0) {
    ATTENDRE_TRY_ASSIGN(factor, m.positive(factor_key));
  }
  // llama.cpp divides each pair's frequency by its factor under any type.
  const bool freq_factors = m.file().find_tensor("rope_freqs.weight") != nullptr;
  RopeScaling s;
  if (type == "linear") {
    if (factor != 1.0) {
      s.kind = RopeScaling::Kind::linear;
      s.factor = factor;
    }
  } else if (type == "llama3") {
    // The tensor already holds what the formula computes: both would scale twice.
    if (freq_factors)
      return m.key_error(ErrorCode::malformed_input, "rope.scaling.type",
                         "llama3 scaling from keys and rope_freqs.weight would scale the frequencies twice");
    s.kind = RopeScaling::Kind::llama3;
    s.factor = factor;
    ATTENDRE_TRY_ASSIGN(s.low_freq_factor, m.positive("rope.scaling.low_freq_factor", 1.0));
    ATTENDRE_TRY_ASSIGN(s.high_freq_factor, m.positive("rope.scaling.high_freq_factor", 4.0));
    if (!(s.high_freq_factor > s.low_freq_factor))
      return m.key_error(ErrorCode::malformed_input, "rope.scaling.high_freq_factor",
                         shortest_text(s.high_freq_factor) + " must exceed rope.scaling.low_freq_factor " +
                             shortest_text(s.low_freq_factor));
    ATTENDRE_TRY_ASSIGN(s.original_context, m.count("rope.scaling.original_context_length", 8192));
  } else if (type != "none") {
    // YaRN also rescales attention logits and LongRoPE switches factor
    // tables by length: running them as plain RoPE would be silently wrong.
    return m.key_error(ErrorCode::unsupported, "rope.scaling.type",
                       "RoPE scaling '" + printable(type) +
                           "' is not supported (supported: none, linear, llama3, and per-pair factors in "
                           "rope_freqs.weight)");
  }
  s.freq_factors = freq_factors;
  // phi3's LongRoPE: convert_hf_to_gguf.py writes Hugging Face's
  // short_factor and long_factor as the tensors rope_factors_short.weight
  // and rope_factors_long.weight, divisors like rope_freqs.weight.
  const bool short_table = m.file().find_tensor("rope_factors_short.weight") != nullptr;
  const bool long_table = m.file().find_tensor("rope_factors_long.weight") != nullptr;
  if (short_table || long_table) {
    if (!short_table || !long_table)
      return Status(ErrorCode::malformed_input,
                    m.file().path().string() + ": LongRoPE needs both rope_factors_short.weight and "
                                               "rope_factors_long.weight, the file has only " +
                        (short_table ? "rope_factors_short.weight" : "rope_factors_long.weight"));
    if (freq_factors || s.kind == RopeScaling::Kind::llama3)
      return Status(ErrorCode::malformed_input, m.file().path().string() +
                                                    ": LongRoPE's factor tables beside rope_freqs.weight or llama3 "
                                                    "scaling would scale the frequencies twice");
    s.freq_factors = true;
    s.long_rope = true;
    // llama.cpp's n_ctx_orig_yarn: the training context where the key is absent.
    ATTENDRE_TRY_ASSIGN(const uint32_t trained, m.count("context_length"));
    ATTENDRE_TRY_ASSIGN(const uint32_t original, m.count("rope.scaling.original_context_length", trained));
    s.original_context = original;
  }
  return s;
}

}  // namespace attendre::gguf
