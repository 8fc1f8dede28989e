#include "table.hpp"

#include <string>

namespace bench {
namespace {

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

}  // namespace

std::string shape_label(const Shape& shape) {
  std::string s;
  for (const auto& [name, n] : shape) {
    if (name == "hidden") continue;  // implied by the block kernels' rows/in/out
    if (!s.empty()) s += ' ';
    s += name + "=" + std::to_string(n);
  }
  return s;
}

void print_device(std::FILE* out, const DeviceInfo& d) {
  std::fprintf(out, "device:  %s (%s, %s, vendor 0x%04X), %s, Vulkan %s\n", d.name.c_str(), d.type.c_str(),
               d.vendor.c_str(), d.vendor_id, d.driver.c_str(), d.api_version.c_str());
  std::fprintf(out, "limits:  workgroup %u of max %u invocations, %u B shared, storage range %s, subgroup %u, "
                    "fp16 storage %s, loop limit %s, workgroups per dispatch %s\n",
               d.workgroup, d.max_invocations, d.max_shared_bytes, mib(d.max_storage_range).c_str(), d.subgroup_size,
               d.storage_16bit ? "yes" : "no",
               d.max_loop_iterations ? std::to_string(d.max_loop_iterations).c_str() : "none",
               d.max_groups_per_dispatch == 0xFFFFFFFFu ? "unlimited" : std::to_string(d.max_groups_per_dispatch).c_str());
  std::string off;
  for (const std::string& f : d.disabled_features) off += (off.empty() ? "" : ",") + f;
  std::fprintf(out, "kernel variants%s:\n", off.empty() ? "" : (" (switched off: " + off + ")").c_str());
  for (const attendre::KernelVariant& v : d.variants)
    std::fprintf(out, "  %-24s %s (%s)\n", (v.family + ":").c_str(), v.variant.c_str(), v.reason.c_str());
  for (const std::string& q : d.quirks) std::fprintf(out, "  quirk %s\n", q.c_str());
}

void print_limits(std::FILE* out, const Limits& l) {
  std::fprintf(out, "\nDevice limits (GPU timestamps, median of repeats)\n");
  for (const LimitSample& s : l.copy)
    std::fprintf(out, "  copy %-6s %8s  %9.3f ms  %8.2f GB/s\n", s.variant.c_str(), mib(s.size).c_str(), s.ms, s.rate);
  for (const LimitSample& s : l.fma)
    std::fprintf(out, "  fma  %-16s %8llu inv.  %9.3f ms  %8.1f GFLOP/s\n", s.variant.c_str(),
                 static_cast<unsigned long long>(s.size), s.ms, s.rate);
  std::fprintf(out, "  => copy bandwidth %.2f GB/s, FMA peak %.1f GFLOP/s (best of each)\n", l.copy_gbps, l.fma_gflops);
}

void print_kernels(std::FILE* out, const Results& r) {
  if (r.kernels.empty()) return;
  std::fprintf(out, "\nKernels (median GPU ms per step; eff = max(bytes / copy bandwidth, flops / FMA peak) / time)\n");
  std::fprintf(out, "  %-15s %-6s %-4s %-46s %10s %8s %8s %7s  %s\n", "kernel", "role", "prec", "shape", "ms", "GB/s",
               "GFLOP/s", "eff", "bound");
  for (const KernelResult& k : r.kernels)
    std::fprintf(out, "  %-15s %-6s %-4s %-46s %10.3f %8.3f %8.3f %6.2f%%  %s\n", k.name.c_str(), k.role.c_str(),
                 k.precision.c_str(), shape_label(k.shape).c_str(), k.median_ms, k.gbps, k.gflops, 100.0 * k.efficiency,
                 k.bound.c_str());
  bool header = false;
  for (const KernelResult& k : r.kernels) {
    if (k.weight_bytes <= 0.0) continue;
    if (!header)
      std::fprintf(out, "\nWeight decoding (encoded weight bytes read per second; copy = share of copy bandwidth %.2f GB/s)\n"
                        "  %-8s %-5s %-5s %-30s %10s %8s %7s\n",
                   r.limits.copy_gbps, "kernel", "role", "prec", "shape", "ms", "wGB/s", "copy");
    header = true;
    std::fprintf(out, "  %-8s %-5s %-5s %-30s %10.3f %8.3f %6.1f%%\n", k.name.c_str(), k.role.c_str(), k.precision.c_str(),
                 shape_label(k.shape).c_str(), k.median_ms, k.weight_gbps, 100.0 * k.copy_fraction);
  }
}

void print_presets(std::FILE* out, const Results& r) {
  if (!r.footprints.empty()) {
    std::fprintf(out, "\nMemory plans at full depth (plan_stack_memory, nothing allocated)\n");
    for (const PresetFootprint& m : r.footprints)
      std::fprintf(out, "  %-8s %2u blocks, vocab %6u, %s weights, %s memories, %s activations: %s\n", m.name.c_str(),
                   m.layers, m.vocab, m.precision.c_str(), m.kv_storage.c_str(), m.activations.c_str(),
                   mib(m.gpu_bytes).c_str());
  }
  if (r.presets.empty()) return;
  std::fprintf(out, "\nPresets (wall clock per step, outputs not read back; split by GPU timestamps)\n");
  for (const Preset& p : r.presets) {
    std::fprintf(out, "  %s: %s, %u/%u blocks, hidden %u, heads %u/%u x %u, ffn %u, %s weights, %s memories, %s activations, %s, S=%u M=%u N=%u K=%u\n",
                 p.name.c_str(), p.model.c_str(), p.layers_run, p.layers_model, p.hidden, p.heads_q, p.heads_kv,
                 p.head_dim, p.ffn, p.precision.c_str(), p.kv_storage.c_str(), p.activations.c_str(), p.policy.c_str(),
                 p.S, p.M, p.N, p.K);
    std::fprintf(out, "    %.2f ms/step, %.1f tokens/s, overhead %.2f ms (%.1f%%), %s on the GPU, %u dispatches, "
                      "%u barriers\n",
                 p.ms_per_step, p.tokens_per_s, p.overhead_ms, 100.0 * p.overhead_ms / p.ms_per_step,
                 mib(p.gpu_bytes).c_str(), p.dispatches, p.barriers);
    std::fprintf(out, "    longest dispatch %.2f ms (%s)\n", p.longest_dispatch_ms, p.longest_dispatch.c_str());
    if (p.layers_run != p.layers_model)
      std::fprintf(out, "    full depth (%u blocks), scaled: %.1f ms/step, %.1f tokens/s\n", p.layers_model,
                   p.ms_per_step_full_depth, p.S / (p.ms_per_step_full_depth * 1e-3));
    std::fprintf(out, "    split (ms):");
    for (const KernelSplit& k : p.kernel_ms) std::fprintf(out, " %s %.2f", k.name.c_str(), k.ms);
    std::fprintf(out, "\n");
    for (const std::string& n : p.notes) std::fprintf(out, "    note: %s\n", n.c_str());
  }
}

void print_scaling(std::FILE* out, const Scaling& s) {
  std::fprintf(out, "\nScaling (ms per step vs document length; heads %u/%u x %u, S=%u)\n", s.heads_q, s.heads_kv,
               s.head_dim, s.S);
  std::fprintf(out, "  bounded: M=%u N=%u K=%u lra_sum; dense: every position held and attended (M = K = length)\n",
               s.M, s.N, s.K);
  std::fprintf(out, "  %10s %14s %14s\n", "positions", "bounded ms", "dense ms");
  for (const ScalingPoint& b : s.bounded) {
    char dense[32] = "-";
    for (const ScalingPoint& d : s.dense)
      if (d.positions == b.positions) std::snprintf(dense, sizeof dense, "%.2f", d.ms_per_step);
    const bool jumped = b.streamed < b.positions;
    std::fprintf(out, "  %10llu %14.2f %14s%s\n", static_cast<unsigned long long>(b.positions), b.ms_per_step,
                 dense, jumped ? "   (bounded: positions jumped ahead after streaming)" : "");
  }
  if (s.crossover)
    std::fprintf(out, "  crossover: the first measured length where dense attention costs more per step: %llu\n",
                 static_cast<unsigned long long>(*s.crossover));
  else
    std::fprintf(out, "  crossover: none among the measured lengths\n");
  if (!s.dense_stopped.empty()) std::fprintf(out, "  dense series %s\n", s.dense_stopped.c_str());
}

void print_skipped(std::FILE* out, const Results& r) {
  if (r.skipped.empty()) return;
  std::fprintf(out, "\nSkipped\n");
  for (const Skipped& s : r.skipped) std::fprintf(out, "  %s: %s\n", s.what.c_str(), s.reason.c_str());
}

}  // namespace bench
