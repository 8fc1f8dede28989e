#include "io/gguf_rope_scaling.hpp"

namespace attendre::gguf {

RopeScaling read_rope_scaling(const Metadata& m) {
  const std::string type = m.text("rope.scaling.type", "linear");
  double factor = m.number("rope.scaling.factor", m.number("rope.scale_linear", 0.0));
  if (factor == 0.0) factor = 1.0;
  RopeScaling s;
  if (type == "linear") {
    if (!(factor > 0.0))
      m.fail_key(ErrorCode::malformed_input, m.find("rope.scaling.factor") ? "rope.scaling.factor" : "rope.scale_linear",
                 "is " + std::to_string(factor) + ", expected a positive factor");
    if (factor != 1.0) {
      s.kind = RopeScaling::Kind::linear;
      s.factor = factor;
    }
  } else if (type != "none") {
    // YaRN also rescales attention logits and LongRoPE switches factor
    // tables by length: running them as plain RoPE would be silently wrong.
    m.fail_key(ErrorCode::unsupported, "rope.scaling.type",
               "RoPE scaling '" + type +
                   "' is not supported (supported: none, linear, and llama3's per-pair factors in rope_freqs.weight)");
  }
  // llama.cpp divides each pair's frequency by its factor under any type.
  s.freq_factors = m.file().find_tensor("rope_freqs.weight") != nullptr;
  return s;
}

}  // namespace attendre::gguf
