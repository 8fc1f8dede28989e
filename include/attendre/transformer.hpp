// Vocabulary of the streaming decoder stack (transformer blocks around the
// ATTENDRE layers): the choices a model configuration names.
#pragma once

#include <attendre/tensor.hpp>

namespace attendre {

// ---------------------------------------------------------------------------
// Block kernel choices (lib/kernels: matmul, norm, rope, activation, embedding)

// Storage of fp32 matmul weights and embedding tables; math is fp32 either
// way (f16 is read as 16-bit values, or unpacked from 32-bit words where
// the device lacks 16-bit storage). Tensors in other encodings keep theirs.
enum class WeightType { f32, f16 };
inline ElementType element_type(WeightType w) { return w == WeightType::f16 ? ElementType::f16 : ElementType::f32; }

// RMSNorm: x / sqrt(mean(x^2) + eps) * g;  LayerNorm: (x - mean) / sqrt(var + eps) * g + b.
enum class NormKind { rms, layer };

// Rotary pairs: normal (2i, 2i+1) as GPT-J / llama.cpp "normal"; neox (i, i + rope_dims / 2).
enum class RopeLayout { normal, neox };

// RoPE frequency scaling: pair i turns by position * theta^(-2i / rope_dims) / s_i
// (core/positions.cpp evaluates the published formulas in float64).
struct RopeScaling {
  // none: s_i = 1. linear (GGUF rope.scaling.type = linear): s_i = factor, i.e.
  // positions divided by factor. llama3 (Meta's Llama 3.1 apply_scaling):
  // wavelengths 2 pi / f_i below original_context / high_freq_factor keep
  // s_i = 1, those above original_context / low_freq_factor get s_i = factor,
  // and those between blend smoothly.
  enum class Kind { none, linear, llama3 };
  Kind kind = Kind::none;
  double factor = 1.0;              // linear and llama3 (rope.scaling.factor)
  double low_freq_factor = 1.0;     // llama3
  double high_freq_factor = 4.0;    // llama3, > low_freq_factor
  double original_context = 8192;  // llama3 and LongRoPE: rope.scaling.original_context_length
  // llama.cpp's form of llama3 scaling: per-pair divisors from the tensor
  // rope_freqs.weight [rope_dims / 2], multiplied into s_i (with none or
  // linear; the tensor already holds what llama3 would compute).
  bool freq_factors = false;
  // phi3's LongRoPE: the divisors (freq_factors) come from one of two
  // tensors, rope_factors_short.weight or rope_factors_long.weight. The
  // memory decides which (apply_memory): the long factors where a block's
  // K/V memory holds more than original_context entries, as llama.cpp
  // picks them where its context (its K/V cache) is longer.
  bool long_rope = false;
  bool long_factors = false;  // long_rope: rope_factors_long.weight, else rope_factors_short.weight
};

// silu(x) = x * sigmoid(x); gelu_tanh = GELU's tanh approximation ("gelu_pytorch_tanh"); relu.
enum class ActivationKind { silu, gelu_tanh, relu };

}  // namespace attendre
