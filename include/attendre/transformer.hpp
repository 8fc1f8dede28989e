// Vocabulary of the streaming decoder stack (transformer blocks around the
// ATTENDRE layers): the choices a model configuration names.
#pragma once

#include <attendre/tensor.hpp>

namespace attendre {

// ---------------------------------------------------------------------------
// Block kernel choices (lib/kernels: matmul, norm, rope, activation, embedding)

// Storage of fp32 matmul weights and embedding tables; math is fp32 either
// way (f16 needs storage_16bit). Tensors in other encodings keep theirs.
enum class WeightType { f32, f16 };
inline ElementType element_type(WeightType w) { return w == WeightType::f16 ? ElementType::f16 : ElementType::f32; }

// RMSNorm: x / sqrt(mean(x^2) + eps) * g;  LayerNorm: (x - mean) / sqrt(var + eps) * g + b.
enum class NormKind { rms, layer };

// Rotary pairs: normal (2i, 2i+1) as GPT-J / llama.cpp "normal"; neox (i, i + rope_dims / 2).
enum class RopeLayout { normal, neox };

// silu(x) = x * sigmoid(x); gelu_tanh = GELU's tanh approximation ("gelu_pytorch_tanh"); relu.
enum class ActivationKind { silu, gelu_tanh, relu };

}  // namespace attendre
