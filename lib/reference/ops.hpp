// Float64 references of the transformer block kernels (lib/kernels: matmul,
// norm, rope, activation, embedding): plain loops over row-major tensors,
// the contract the GPU kernels are tested against.
#pragma once

#include "core/positions.hpp"

#include <attendre/transformer.hpp>

#include <cstdint>
#include <span>
#include <vector>

namespace attendre::reference::ops {

// Widening helpers: fp32 values, or fp16 bits (see core/half.hpp).
std::vector<double> widen(std::span<const float> values);
std::vector<double> widen_half(std::span<const uint16_t> bits);

// C[r][o] = sum_i A[r][i] * W[o][i] (+ bias[o]) (+ residual[r][o]); A is
// [rows][in], W [out][in]; bias (out) and residual (rows * out) may be empty.
std::vector<double> matmul(std::span<const double> a, std::span<const double> w, uint32_t rows, uint32_t in,
                           uint32_t out, std::span<const double> bias = {}, std::span<const double> residual = {});

// y = x / sqrt(mean(x^2) + eps) * g, per row of dim values.
std::vector<double> rms_norm(std::span<const double> x, uint32_t dim, std::span<const double> g, double eps);

// y = (x - mean) / sqrt(var + eps) * g + b (population variance), per row.
std::vector<double> layer_norm(std::span<const double> x, uint32_t dim, std::span<const double> g,
                               std::span<const double> b, double eps);

// Rotary embedding of rows [heads][head_dim], one position per row: pair i <
// rope_dims / 2 of each head turns by positions::rope_angle(angles, position,
// i): the float angle llama.cpp forms, whose cosine and sine (and the
// rotation) are then evaluated in float64 (docs/spec-notes.md says why).
std::vector<double> rope(std::span<const double> x, std::span<const int64_t> positions, uint32_t heads,
                         uint32_t head_dim, uint32_t rope_dims, const positions::RopeAngles& angles,
                         RopeLayout layout);

// One activation value: silu, gelu_tanh (tanh approximation) or relu.
double activate(ActivationKind kind, double x);
// Soft-capping (Gemma 2): cap * tanh(x / cap); x itself for cap = 0.
double soft_cap(double x, double cap);
// act(x) elementwise.
std::vector<double> activation(ActivationKind kind, std::span<const double> x);
// act(gate) * up elementwise.
std::vector<double> gated_activation(ActivationKind kind, std::span<const double> gate, std::span<const double> up);
// GELU as ggml's CPU backend evaluates it, from a table of fp16 values: 0 for
// x <= -10, x for x >= 10, else the fp16 rounding of gelu_tanh at the fp16
// rounding of x.
double gelu_fp16_table(double x);
// The FFN's activated rows as a stack with fp16 activations computes them,
// before they are stored: act(gate) * up (gated) or act(gate), GELU from
// ggml's table (gelu_fp16_table).
std::vector<double> fp16_activation(ActivationKind kind, bool gated, std::span<const double> gate,
                                    std::span<const double> up);

// a + b elementwise (equal sizes).
std::vector<double> add(std::span<const double> a, std::span<const double> b);

// Rows table[ids[r]] of dim values; ids >= vocab (= table.size() / dim) give zeros.
std::vector<double> embedding(std::span<const double> table, uint32_t dim, std::span<const uint32_t> ids);

}  // namespace attendre::reference::ops
