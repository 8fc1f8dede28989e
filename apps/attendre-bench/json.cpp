#include "core/fail.hpp"
#include "json.hpp"

#include <attendre/error.hpp>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string_view>
#include <vector>

namespace bench {
namespace {

// Pretty-printed JSON, one value at a time; commas and indentation follow
// from a stack of open containers.
class Writer {
 public:
  void begin_object() { open('{'); }
  void end_object() { close('}'); }
  void begin_array() { open('['); }
  void end_array() { close(']'); }
  void key(std::string_view k) {
    separate();
    string(k);
    out_ += ": ";
    after_key_ = true;
  }
  void value(std::string_view s) {
    separate();
    string(s);
  }
  void value(const char* s) { value(std::string_view(s)); }
  void value(const std::string& s) { value(std::string_view(s)); }
  void value(bool b) {
    separate();
    out_ += b ? "true" : "false";
  }
  void value(uint64_t n) {
    separate();
    out_ += std::to_string(n);
  }
  void value(uint32_t n) { value(uint64_t{n}); }
  // Non-finite numbers have no JSON form: null, which the schema forbids, so a checker catches it.
  void value(double x) {
    separate();
    if (!std::isfinite(x)) {
      out_ += "null";
      return;
    }
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", x);
    out_ += buf;
  }
  template <class T>
  void field(std::string_view k, const T& v) {
    key(k);
    value(v);
  }
  const std::string& str() const { return out_; }

 private:
  void open(char c) {
    separate();
    out_ += c;
    first_.push_back(true);
  }
  void close(char c) {
    const bool empty = first_.back();
    first_.pop_back();
    if (!empty) newline();
    out_ += c;
    if (first_.empty()) out_ += '\n';
  }
  void separate() {
    if (after_key_) {
      after_key_ = false;
      return;
    }
    if (first_.empty()) return;
    if (!first_.back()) out_ += ',';
    first_.back() = false;
    newline();
  }
  void newline() {
    out_ += '\n';
    out_.append(2 * first_.size(), ' ');
  }
  void string(std::string_view s) {
    out_ += '"';
    for (char c : s) {
      switch (c) {
        case '"': out_ += "\\\""; break;
        case '\\': out_ += "\\\\"; break;
        case '\n': out_ += "\\n"; break;
        case '\t': out_ += "\\t"; break;
        default:
          if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
            out_ += buf;
          } else {
            out_ += c;
          }
      }
    }
    out_ += '"';
  }

  std::string out_;
  std::vector<bool> first_;
  bool after_key_ = false;
};

void device(Writer& w, const DeviceInfo& d) {
  w.key("device");
  w.begin_object();
  w.field("name", d.name);
  w.field("vendor", d.vendor);
  w.field("vendor_id", d.vendor_id);
  w.field("device_id", d.device_id);
  w.field("type", d.type);
  w.field("driver", d.driver);
  w.field("api_version", d.api_version);
  w.key("limits");
  w.begin_object();
  w.field("max_invocations", d.max_invocations);
  w.field("workgroup", d.workgroup);
  w.field("max_shared_bytes", d.max_shared_bytes);
  w.field("max_storage_range", d.max_storage_range);
  w.field("max_allocation", d.max_allocation);
  w.field("device_local_bytes", d.device_local_bytes);
  w.field("subgroup_size", d.subgroup_size);
  w.field("max_loop_iterations", d.max_loop_iterations);
  w.field("storage_16bit", d.storage_16bit);
  w.field("timestamp_period_ns", d.timestamp_period_ns);
  w.end_object();
  w.end_object();
}

void limits(Writer& w, const Limits& l) {
  w.field("copy_gbps", l.copy_gbps);
  w.field("fma_gflops", l.fma_gflops);
  w.key("limits");
  w.begin_object();
  for (const auto& [name, samples, size_key, rate_key] :
       {std::tuple{"copy", &l.copy, "bytes", "gbps"}, std::tuple{"fma", &l.fma, "invocations", "gflops"}}) {
    w.key(name);
    w.begin_array();
    for (const LimitSample& s : *samples) {
      w.begin_object();
      w.field("variant", s.variant);
      w.field(size_key, s.size);
      w.field("ms", s.ms);
      w.field(rate_key, s.rate);
      w.end_object();
    }
    w.end_array();
  }
  w.end_object();
}

void kernel(Writer& w, const KernelResult& k) {
  w.begin_object();
  w.field("name", k.name);
  if (!k.role.empty()) w.field("role", k.role);
  w.field("precision", k.precision);
  w.key("shape");
  w.begin_object();
  for (const auto& [dim, n] : k.shape) w.field(dim, n);
  w.end_object();
  w.field("median_ms", k.median_ms);
  w.field("samples", k.samples);
  w.field("bytes", k.bytes);
  w.field("flops", k.flops);
  w.field("gbps", k.gbps);
  w.field("gflops", k.gflops);
  w.field("efficiency", k.efficiency);
  w.field("bound", k.bound);
  if (k.weight_bytes > 0.0) {
    w.field("weight_bytes", k.weight_bytes);
    w.field("weight_gbps", k.weight_gbps);
    w.field("copy_fraction", k.copy_fraction);
  }
  w.end_object();
}

void preset(Writer& w, const Preset& p) {
  w.begin_object();
  w.field("name", p.name);
  w.field("model", p.model);
  w.field("precision", p.precision);
  w.field("policy", p.policy);
  w.field("lm_infinite", p.lm_infinite);
  w.field("layers_model", p.layers_model);
  w.field("layers_run", p.layers_run);
  w.field("vocab_model", p.vocab_model);
  w.field("vocab_run", p.vocab_run);
  w.field("hidden", p.hidden);
  w.field("ffn", p.ffn);
  w.field("heads_q", p.heads_q);
  w.field("heads_kv", p.heads_kv);
  w.field("head_dim", p.head_dim);
  w.field("S", p.S);
  w.field("M", p.M);
  w.field("N", p.N);
  w.field("K", p.K);
  w.field("ms_per_step", p.ms_per_step);
  w.field("tokens_per_s", p.tokens_per_s);
  w.key("kernel_ms");
  w.begin_object();
  for (const KernelSplit& k : p.kernel_ms) w.field(k.name, k.ms);
  w.end_object();
  w.field("overhead_ms", p.overhead_ms);
  w.field("gpu_bytes", p.gpu_bytes);
  w.field("planned_full_bytes", p.planned_full_bytes);
  w.field("ms_per_step_full_depth", p.ms_per_step_full_depth);
  w.field("steps_timed", p.steps_timed);
  w.field("dispatches", p.dispatches);
  w.field("barriers", p.barriers);
  w.key("notes");
  w.begin_array();
  for (const std::string& n : p.notes) w.value(n);
  w.end_array();
  w.end_object();
}

void scaling(Writer& w, const Scaling& s) {
  w.key("scaling");
  w.begin_object();
  w.field("heads_q", s.heads_q);
  w.field("heads_kv", s.heads_kv);
  w.field("head_dim", s.head_dim);
  w.field("S", s.S);
  w.field("M", s.M);
  w.field("N", s.N);
  w.field("K", s.K);
  for (const auto& [name, series] : {std::pair{"bounded", &s.bounded}, std::pair{"dense", &s.dense}}) {
    w.key(name);
    w.begin_array();
    for (const ScalingPoint& p : *series) {
      w.begin_object();
      w.field("positions", p.positions);
      w.field("ms_per_step", p.ms_per_step);
      w.field("streamed", p.streamed);
      w.end_object();
    }
    w.end_array();
  }
  if (!s.dense_stopped.empty()) w.field("dense_stopped", s.dense_stopped);
  if (s.crossover) w.field("crossover_positions", *s.crossover);
  w.end_object();
}

}  // namespace

std::string to_json(const Results& r) {
  Writer w;
  w.begin_object();
  w.field("schema", "attendre-bench/1");
  w.field("quick", r.quick);
  w.field("filter", r.filter);
  w.field("runtime_s", r.runtime_s);
  device(w, r.device);
  limits(w, r.limits);
  w.key("kernels");
  w.begin_array();
  for (const KernelResult& k : r.kernels) kernel(w, k);
  w.end_array();
  w.key("skipped");
  w.begin_array();
  for (const Skipped& s : r.skipped) {
    w.begin_object();
    w.field("what", s.what);
    w.field("reason", s.reason);
    w.end_object();
  }
  w.end_array();
  w.key("presets");
  w.begin_array();
  for (const Preset& p : r.presets) preset(w, p);
  w.end_array();
  w.key("memory_plans");
  w.begin_array();
  for (const MemoryPlan& m : r.plans) {
    w.begin_object();
    w.field("name", m.name);
    w.field("layers", m.layers);
    w.field("vocab", m.vocab);
    w.field("precision", m.precision);
    w.field("gpu_bytes", m.gpu_bytes);
    w.end_object();
  }
  w.end_array();
  if (r.scaling) scaling(w, *r.scaling);
  w.end_object();
  return w.str();
}

void write_file_atomically(const std::string& path, const std::string& content) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << content;
    out.flush();
    if (!out) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
      attendre::fail(attendre::ErrorCode::io_error, "cannot write " + tmp);
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    attendre::fail(attendre::ErrorCode::io_error, "cannot rename " + tmp + " to " + path);
  }
}

}  // namespace bench
