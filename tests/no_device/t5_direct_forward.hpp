// T5 written out from its definition (Hugging Face's modeling_t5.py) for
// the fixtures, in float64: every tensor by llama.cpp's file name, no stack,
// no memory, no attendre code. The yardstick that attendre's mapping of a T5
// file onto its encoder and decoder stacks is tested against.
#pragma once

#include "gguf/quant.hpp"
#include "model_fixtures.hpp"

#include <cmath>
#include <map>
#include <numbers>
#include <span>
#include <string>
#include <vector>

namespace attendre::test {

class T5Direct {
 public:
  explicit T5Direct(const Fixture& f) : shape_(f.shape), vocab_(f.vocab) {
    for (const FixtureTensor& t : f.tensors) tensors_[t.name] = gguf::dequantize(t.type, t.bytes).value_or_throw();
  }

  // The encoder's final hidden states of `input`, [T][hidden].
  std::vector<double> encode(std::span<const uint32_t> input) const {
    std::vector<double> x = embed(input);
    for (uint32_t l = 0; l < shape_.blocks; ++l) {
      const std::string p = "enc.blk." + std::to_string(l) + ".";
      x = add(x, attention(p + "attn", norm(x, p + "attn_norm.weight"), {}, table("enc", l), true));
      x = add(x, feed_forward(p, norm(x, p + "ffn_norm.weight")));
    }
    return norm(x, "enc.output_norm.weight");
  }

  // The decoder's logits at every position of `tokens` (the start token
  // first), [T'][vocab], reading `encoded` through cross-attention.
  std::vector<double> decode(std::span<const uint32_t> tokens, const std::vector<double>& encoded) const {
    std::vector<double> x = embed(tokens);
    for (uint32_t l = 0; l < shape_.blocks; ++l) {
      const std::string p = "dec.blk." + std::to_string(l) + ".";
      x = add(x, attention(p + "attn", norm(x, p + "attn_norm.weight"), {}, table("dec", l), false));
      x = add(x, attention(p + "cross_attn", norm(x, p + "cross_attn_norm.weight"), encoded, nullptr, false));
      x = add(x, feed_forward(p, norm(x, p + "ffn_norm.weight")));
    }
    std::vector<double> h = norm(x, "dec.output_norm.weight");
    const bool tied = !tensors_.count("output.weight");
    // Tied heads rescale the output by d_model^-0.5 before projecting on the vocabulary.
    if (tied)
      for (double& v : h) v /= std::sqrt(static_cast<double>(shape_.hidden));
    return project(h, tied ? "token_embd.weight" : "output.weight", vocab_);
  }

 private:
  const std::vector<double>& at(const std::string& name) const { return tensors_.at(name); }
  size_t rows(const std::vector<double>& x) const { return x.size() / shape_.hidden; }

  std::vector<double> embed(std::span<const uint32_t> tokens) const {
    std::vector<double> x;
    for (uint32_t t : tokens)
      x.insert(x.end(), at("token_embd.weight").begin() + t * shape_.hidden,
               at("token_embd.weight").begin() + (t + 1) * shape_.hidden);
    return x;
  }

  // T5LayerNorm: no mean, no shift.
  std::vector<double> norm(const std::vector<double>& x, const std::string& gain) const {
    std::vector<double> y(x.size());
    const uint32_t H = shape_.hidden;
    for (size_t r = 0; r < rows(x); ++r) {
      double squares = 0.0;
      for (uint32_t i = 0; i < H; ++i) squares += x[r * H + i] * x[r * H + i];
      const double scale = 1.0 / std::sqrt(squares / H + 1e-6);
      for (uint32_t i = 0; i < H; ++i) y[r * H + i] = x[r * H + i] * scale * at(gain)[i];
    }
    return y;
  }

  static std::vector<double> add(std::vector<double> x, const std::vector<double>& y) {
    for (size_t i = 0; i < x.size(); ++i) x[i] += y[i];
    return x;
  }

  // x [n][in] times W^T, W [out][in].
  std::vector<double> project(const std::vector<double>& x, const std::string& w, size_t out) const {
    const size_t in = at(w).size() / out, n = x.size() / in;
    std::vector<double> y(n * out, 0.0);
    for (size_t r = 0; r < n; ++r)
      for (size_t o = 0; o < out; ++o)
        for (size_t i = 0; i < in; ++i) y[r * out + o] += x[r * in + i] * at(w)[o * in + i];
    return y;
  }

  // The bias table a self-attention reads: the layer's own, else layer 0's.
  const std::vector<double>* table(const std::string& stack, uint32_t layer) const {
    const std::string own = stack + ".blk." + std::to_string(layer) + ".attn_rel_b.weight";
    return &at(tensors_.count(own) ? own : stack + ".blk.0.attn_rel_b.weight");
  }

  // _relative_position_bucket of memory_position - query_position, with
  // torch's float32 log as T5 computes it.
  uint32_t bucket(int64_t relative, bool bidirectional) const {
    int64_t buckets = kT5Buckets, result = 0;
    if (bidirectional) {
      buckets /= 2;
      if (relative > 0) result += buckets;
      relative = std::abs(relative);
    } else {
      relative = -std::min<int64_t>(relative, 0);
    }
    const int64_t max_exact = buckets / 2;
    if (relative < max_exact) return static_cast<uint32_t>(result + relative);
    const float large = std::log(static_cast<float>(relative) / static_cast<float>(max_exact)) /
                        static_cast<float>(std::log(128.0 / static_cast<double>(max_exact))) *
                        static_cast<float>(buckets - max_exact);
    return static_cast<uint32_t>(result + std::min<int64_t>(max_exact + static_cast<int64_t>(large), buckets - 1));
  }

  // Self-attention (memory empty: keys are x's rows) or cross-attention,
  // logits unscaled, the bias table's bucket added to self-attention.
  std::vector<double> attention(const std::string& p, const std::vector<double>& x, const std::vector<double>& memory,
                                const std::vector<double>* bias, bool bidirectional) const {
    const uint32_t heads = shape_.heads, D = shape_.hidden / heads, HD = heads * D;
    const std::vector<double>& source = memory.empty() ? x : memory;
    const std::vector<double> q = project(x, p + "_q.weight", HD), k = project(source, p + "_k.weight", HD),
                              v = project(source, p + "_v.weight", HD);
    const size_t n = rows(x), m = rows(source);
    std::vector<double> o(n * HD, 0.0), w(m);
    for (size_t i = 0; i < n; ++i)
      for (uint32_t h = 0; h < heads; ++h) {
        double top = -INFINITY, total = 0.0;
        for (size_t j = 0; j < m; ++j) {
          const bool masked = bias && !bidirectional && j > i;  // the decoder's causal self-attention
          double dot = 0.0;
          for (uint32_t d = 0; d < D; ++d) dot += q[i * HD + h * D + d] * k[j * HD + h * D + d];
          if (bias) dot += (*bias)[bucket(static_cast<int64_t>(j) - static_cast<int64_t>(i), bidirectional) * heads + h];
          w[j] = masked ? -INFINITY : dot;
          top = std::max(top, w[j]);
        }
        for (size_t j = 0; j < m; ++j) total += (w[j] = std::exp(w[j] - top));
        for (size_t j = 0; j < m; ++j)
          for (uint32_t d = 0; d < D; ++d) o[i * HD + h * D + d] += w[j] / total * v[j * HD + h * D + d];
      }
    return project(o, p + "_o.weight", shape_.hidden);
  }

  // FLAN-T5's gated GELU (tanh approximation, "gelu_new"), or the original ReLU.
  std::vector<double> feed_forward(const std::string& p, const std::vector<double>& x) const {
    std::vector<double> up = project(x, p + "ffn_up.weight", shape_.ffn);
    if (tensors_.count(p + "ffn_gate.weight")) {
      const std::vector<double> gate = project(x, p + "ffn_gate.weight", shape_.ffn);
      for (size_t i = 0; i < up.size(); ++i) {
        const double g = gate[i];
        up[i] *= 0.5 * g * (1.0 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (g + 0.044715 * g * g * g)));
      }
    } else {
      for (double& u : up) u = std::max(u, 0.0);
    }
    return project(up, p + "ffn_down.weight", shape_.hidden);
  }

  FixtureShape shape_;
  uint32_t vocab_;
  std::map<std::string, std::vector<double>> tensors_;
};

}  // namespace attendre::test
