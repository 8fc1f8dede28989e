// Float64 references of the transformer block kernels: the textbook
// formulas, evaluated in double precision.
#include "reference/ops.hpp"

#include "core/half.hpp"
#include "core/fail.hpp"

#include <attendre/error.hpp>

#include <cmath>
#include <numbers>

namespace attendre::reference::ops {

std::vector<double> widen(std::span<const float> values) { return {values.begin(), values.end()}; }

std::vector<double> widen_half(std::span<const uint16_t> bits) {
  std::vector<double> out(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) out[i] = half::half_to_float(bits[i]);
  return out;
}

std::vector<double> matmul(std::span<const double> a, std::span<const double> w, uint32_t rows, uint32_t in,
                           uint32_t out, std::span<const double> bias, std::span<const double> residual) {
  require(a.size() == size_t{rows} * in && w.size() == size_t{out} * in, "matmul: A or W size mismatch");
  require(bias.empty() || bias.size() == out, "matmul: bias size mismatch");
  require(residual.empty() || residual.size() == size_t{rows} * out, "matmul: residual size mismatch");
  std::vector<double> c(size_t{rows} * out);
  for (size_t r = 0; r < rows; ++r)
    for (size_t o = 0; o < out; ++o) {
      double sum = 0.0;
      for (size_t i = 0; i < in; ++i) sum += a[r * in + i] * w[o * in + i];
      if (!bias.empty()) sum += bias[o];
      if (!residual.empty()) sum += residual[r * out + o];
      c[r * out + o] = sum;
    }
  return c;
}

std::vector<double> rms_norm(std::span<const double> x, uint32_t dim, std::span<const double> g, double eps) {
  require(dim > 0 && x.size() % dim == 0 && g.size() == dim, "rms_norm: size mismatch");
  std::vector<double> y(x.size());
  for (size_t base = 0; base < x.size(); base += dim) {
    double squares = 0.0;
    for (size_t i = 0; i < dim; ++i) squares += x[base + i] * x[base + i];
    const double inv = 1.0 / std::sqrt(squares / dim + eps);
    for (size_t i = 0; i < dim; ++i) y[base + i] = x[base + i] * inv * g[i];
  }
  return y;
}

std::vector<double> layer_norm(std::span<const double> x, uint32_t dim, std::span<const double> g,
                               std::span<const double> b, double eps) {
  require(dim > 0 && x.size() % dim == 0 && g.size() == dim && b.size() == dim, "layer_norm: size mismatch");
  std::vector<double> y(x.size());
  for (size_t base = 0; base < x.size(); base += dim) {
    double sum = 0.0;
    for (size_t i = 0; i < dim; ++i) sum += x[base + i];
    const double mean = sum / dim;
    double squares = 0.0;
    for (size_t i = 0; i < dim; ++i) squares += (x[base + i] - mean) * (x[base + i] - mean);
    const double inv = 1.0 / std::sqrt(squares / dim + eps);
    for (size_t i = 0; i < dim; ++i) y[base + i] = (x[base + i] - mean) * inv * g[i] + b[i];
  }
  return y;
}

std::vector<double> rope(std::span<const double> x, std::span<const int64_t> positions, uint32_t heads,
                         uint32_t head_dim, uint32_t rope_dims, const positions::RopeAngles& angles,
                         RopeLayout layout) {
  const size_t row = size_t{heads} * head_dim;
  require(rope_dims % 2 == 0 && rope_dims <= head_dim, "rope: rope_dims must be even and <= head_dim");
  require(angles.divisors.size() == rope_dims / 2, "rope: one divisor per pair");
  require(x.size() == positions.size() * row, "rope: size mismatch");
  std::vector<double> y(x.begin(), x.end());
  const uint32_t half = rope_dims / 2;
  for (size_t r = 0; r < positions.size(); ++r)
    for (size_t h = 0; h < heads; ++h)
      for (uint32_t i = 0; i < half; ++i) {
        const double angle = positions::rope_angle(angles, positions[r], i);
        const size_t d0 = r * row + h * head_dim + (layout == RopeLayout::neox ? i : 2 * i);
        const size_t d1 = d0 + (layout == RopeLayout::neox ? half : 1);
        const double c = std::cos(angle), s = std::sin(angle);
        y[d0] = x[d0] * c - x[d1] * s;
        y[d1] = x[d0] * s + x[d1] * c;
      }
  return y;
}

double activate(ActivationKind kind, double x) {
  switch (kind) {
    case ActivationKind::silu:
      return x / (1.0 + std::exp(-x));
    case ActivationKind::gelu_tanh: {
      const double u = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
      return 0.5 * x * (1.0 + std::tanh(u));
    }
    case ActivationKind::relu:
      return x > 0.0 ? x : 0.0;
  }
  return x;
}

std::vector<double> add(std::span<const double> a, std::span<const double> b) {
  std::vector<double> sum(a.begin(), a.end());
  for (size_t i = 0; i < sum.size(); ++i) sum[i] += b[i];
  return sum;
}

double soft_cap(double x, double cap) { return cap == 0.0 ? x : cap * std::tanh(x / cap); }

std::vector<double> activation(ActivationKind kind, std::span<const double> x) {
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = activate(kind, x[i]);
  return y;
}

std::vector<double> gated_activation(ActivationKind kind, std::span<const double> gate, std::span<const double> up) {
  require(gate.size() == up.size(), "gated_activation: size mismatch");
  std::vector<double> y(gate.size());
  for (size_t i = 0; i < gate.size(); ++i) y[i] = activate(kind, gate[i]) * up[i];
  return y;
}

double gelu_fp16_table(double x) {
  if (x <= -10.0) return 0.0;
  if (x >= 10.0) return x;
  const auto f16 = [](double v) { return half::stored_value(v, MemoryStorage::f16); };
  return f16(activate(ActivationKind::gelu_tanh, f16(x)));
}

std::vector<double> fp16_activation(ActivationKind kind, bool gated, std::span<const double> gate,
                                    std::span<const double> up) {
  require(!gated || gate.size() == up.size(), "fp16_activation: size mismatch");
  std::vector<double> y(gate.size());
  for (size_t i = 0; i < gate.size(); ++i) {
    y[i] = kind == ActivationKind::gelu_tanh ? gelu_fp16_table(gate[i]) : activate(kind, gate[i]);
    if (gated) y[i] *= up[i];
  }
  return y;
}

std::vector<double> embedding(std::span<const double> table, uint32_t dim, std::span<const uint32_t> ids) {
  require(dim > 0 && table.size() % dim == 0, "embedding: table size is not a multiple of dim");
  const size_t vocab = table.size() / dim;
  std::vector<double> y(ids.size() * dim, 0.0);
  for (size_t r = 0; r < ids.size(); ++r)
    if (ids[r] < vocab)
      for (size_t i = 0; i < dim; ++i) y[r * dim + i] = table[ids[r] * size_t{dim} + i];
  return y;
}

}  // namespace attendre::reference::ops
