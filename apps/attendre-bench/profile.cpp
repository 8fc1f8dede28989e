#include "profile.hpp"

#include <algorithm>
#include <string>
#include <cstdio>
#include <cstring>

namespace bench {
namespace {

bool is_matmul(const std::string& shader) { return shader.rfind("matmul", 0) == 0 || shader.rfind("matvec", 0) == 0; }
bool is_norm(const std::string& shader) { return shader.rfind("norm_", 0) == 0; }

// A shader build's family: subgroup builds (score_stats_subgroups,
// insert_plan_ballot, select_merge_shuffle, ...) and texel-buffer builds
// (score_direct_shuffle_texel, flash_attend_direct_lanes_texel, ...) count as their fallback's kernel.
std::string family(std::string shader) {
  for (bool stripped = true; stripped;) {
    stripped = false;
    for (const char* suffix : {"_texel", "_subgroups", "_ballot", "_shuffle", "_lanes"})
      if (shader.ends_with(suffix)) {
        shader.resize(shader.size() - std::char_traits<char>::length(suffix));
        stripped = true;
      }
  }
  return shader;
}

// A shader build's kernel whichever way it reads fp16 data and Q8_0 quants
// and whatever its math: the products over fp16 activations (*_a16 by
// 16-bit loads, *_a16_words as unpacked words), the fp16 word builds
// (*_f16_words, where 16-bit storage is absent or the quirk prefers words),
// the int8 Q8_0 builds (*_q8_0_int8, where 8-bit storage is present) and the
// fp16-math builds (*_f16_a16_math) count as the same kernel:
// matmul_f16_words_a16_words and matmul_f16_a16_math as matmul_f16,
// matmul_q8_0_int8_a16 as matmul_q8_0.
std::string fp16_family(std::string shader) {
  for (const char* suffix : {"_texel", "_math", "_a16_words", "_a16", "_words", "_int8"})
    if (shader.ends_with(suffix)) shader.resize(shader.size() - std::char_traits<char>::length(suffix));
  return shader;
}

// The layer kernels' names; empty for block kernels.
std::string layer_kernel(const std::string& build, const std::string& policy_name, std::string& last_select) {
  const std::string shader = family(build);
  // Tiled (GPUs) and direct (CPU devices) variants count as the same kernel.
  if (shader == "score" || shader == "score_direct" || shader == "sum_heads") return "score";
  if (shader == "select_tile_logits" || shader == "select_direct_logits") return last_select = "topk";
  // insert_direct: the victims' selection with the compaction (one dispatch), counted as the selection, its larger part.
  if (shader == "select_tile_evict" || shader == "select_direct_evict" || shader == "insert_direct")
    return last_select = "evict_select";
  if (shader == "select_merge" || shader == "select_merge_direct") return last_select.empty() ? "topk" : last_select;
  if (shader == "attend" || shader == "attend_direct") return "attend";
  if (shader == "flash_attend" || shader == "flash_attend_direct" || shader == "flash_combine") return "flash_attend";
  if (shader == "usage" || shader == "policy_update") return policy_name;
  if (shader == "score_stats" || shader == "score_stats_combine" || shader == "insert_plan" ||
      shader == "insert_scatter" || shader == "evict_copy")
    return "compact";
  return {};
}

// The role of matmul i inside its run of consecutive matmuls [first, last]:
// after the attention norm come q, k, v; after the FFN norm (the run ends at
// the activation) gate and up; after the activation down; after the
// retrieval kernels o; after the final norm with nothing behind it the LM head.
// activation or its in-place variant (the block runs the latter).
bool is_activation(const std::string& shader) { return shader.rfind("activation", 0) == 0; }
// A gated product (gate, up and the activation in one), RMS-normalizing or not.
bool is_gated(const std::string& kernel) { return kernel.ends_with("_gated") || kernel.ends_with("_gated_rms"); }

// Products that normalize their rows themselves (*_rms: the direct kernels
// fold an RMS norm in) start a run as a norm would before them.
// A split product (*_split, its outputs to the queries and to the keys and values).
bool is_split(const std::string& kernel) { return kernel.find("_split") != std::string::npos; }

std::string matmul_role(const std::vector<attendre::KernelTime>& p, size_t first, size_t last, size_t i) {
  if (is_gated(p[i].kernel)) return "gate_up";  // gate, up and the activation in one
  if (is_split(p[i].kernel)) return "qkv";      // q, k and v in one
  if (i > first && is_gated(p[i - 1].kernel)) return "down";
  const std::string before = first > 0 ? p[first - 1].kernel : "";
  const std::string after = last + 1 < p.size() ? p[last + 1].kernel : "";
  const size_t run = last - first + 1, at = i - first;
  if (is_activation(before)) return "down";
  if (is_norm(before) || p[first].kernel.ends_with("_rms")) {
    if (is_activation(after)) return run >= 2 ? (at == 0 ? "gate" : "up") : "up";
    if (after.empty()) return "lm_head";
    static const char* qkv[] = {"q", "k", "v"};
    return at < 3 ? qkv[at] : "part";
  }
  return "o";
}

}  // namespace

std::vector<Dispatch> classify(const std::vector<attendre::KernelTime>& p, const std::string& policy_name) {
  std::vector<Dispatch> out;
  std::string last_select;
  for (size_t i = 0; i < p.size(); ++i) {
    const std::string& shader = p[i].kernel;
    Dispatch d;
    d.ms = p[i].ns * 1e-6;
    d.pieces = p[i].pieces;
    d.longest_piece_ms = p[i].longest_piece_ns * 1e-6;
    // Products over fp16 activations and the writers of them (norm_*_f16,
    // activation_f16) count as the same kernels.
    // Gated products (matmul_direct_*_gated) are matmuls of role gate_up,
    // split ones (matmul_direct_*_split) of role qkv.
    std::string unsuffixed = shader;
    for (const char* suffix : {"_rms", "_gated", "_split"})
      if (unsuffixed.ends_with(suffix)) unsuffixed.resize(unsuffixed.size() - std::strlen(suffix));
    const std::string base = fp16_family(unsuffixed);
    d.precision = base.ends_with("_f16") ? "f16" : "f32";
    d.name = layer_kernel(shader, policy_name, last_select);
    if (d.name.empty()) {
      d.name = base;
      if (d.name.size() > 4 && (d.name.ends_with("_f16") || d.name.ends_with("_f32"))) d.name.resize(d.name.size() - 4);
      if (d.name == "matmul_direct") d.name = "matmul";  // the CPU-device variant of the same product
      if (d.name.ends_with("_in_place")) d.name.resize(d.name.size() - 9);  // the same kernel, one binding
    }
    if (is_matmul(shader)) {
      size_t first = i, last = i;
      while (first > 0 && is_matmul(p[first - 1].kernel)) --first;
      while (last + 1 < p.size() && is_matmul(p[last + 1].kernel)) ++last;
      d.role = matmul_role(p, first, last, i);
    } else if (is_norm(shader)) {
      // The FFN norm's products end at the activation, or hold a gated one.
      size_t next = i + 1;
      bool gated = false;
      for (; next < p.size() && is_matmul(p[next].kernel); ++next) gated = gated || p[next].kernel.ends_with("_gated");
      d.role = next == i + 1 || next == p.size()                       ? "final"
               : gated || (next < p.size() && is_activation(p[next].kernel)) ? "ffn"
                                                                            : "attn";
    } else if (shader == "rope") {
      // A block rotates its queries (three times under LM-Infinite), then
      // its keys: the last rope before the next norm is the keys'.
      size_t next = i + 1;
      while (next < p.size() && p[next].kernel != "rope" && !is_norm(p[next].kernel)) ++next;
      d.role = std::string(1, next < p.size() && p[next].kernel == "rope" ? 'q' : 'k');
    } else if (is_activation(shader)) {
      d.role = "ffn";
    } else if (shader.rfind("embedding", 0) == 0) {
      d.role = "tokens";
    } else if (shader == "add") {
      d.role = "residual";
    }
    out.push_back(std::move(d));
  }
  return out;
}

void print_dispatches(const std::string& title, const std::vector<attendre::KernelTime>& profile,
                      const std::vector<Dispatch>& dispatches) {
  std::printf("\n  dispatches of one step, %s:\n", title.c_str());
  for (size_t i = 0; i < profile.size() && i < dispatches.size(); ++i)
    if (dispatches[i].pieces > 1)
      std::printf("    %-20s %-14s %-6s %10.3f ms in %u pieces, longest %.3f ms\n", profile[i].kernel.c_str(),
                  dispatches[i].name.c_str(), dispatches[i].role.c_str(), dispatches[i].ms, dispatches[i].pieces,
                  dispatches[i].longest_piece_ms);
    else
      std::printf("    %-20s %-14s %-6s %10.3f ms\n", profile[i].kernel.c_str(), dispatches[i].name.c_str(),
                  dispatches[i].role.c_str(), dispatches[i].ms);
}

std::vector<std::pair<std::string, double>> sum_by_name(const std::vector<Dispatch>& dispatches) {
  std::vector<std::pair<std::string, double>> sums;
  for (const Dispatch& d : dispatches) {
    auto it = std::find_if(sums.begin(), sums.end(), [&](const auto& s) { return s.first == d.name; });
    if (it == sums.end()) sums.emplace_back(d.name, d.ms);
    else it->second += d.ms;
  }
  return sums;
}

}  // namespace bench
