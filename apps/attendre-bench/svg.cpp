#include "svg.hpp"

#include "json.hpp"
#include "table.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace bench {
namespace {

std::string fmt(const char* format, double a, double b = 0.0, double c = 0.0, double d = 0.0) {
  char buf[160];
  std::snprintf(buf, sizeof buf, format, a, b, c, d);
  return buf;
}

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

std::string text(double x, double y, const std::string& s, const char* anchor = "start", int size = 11) {
  return fmt("<text x=\"%.1f\" y=\"%.1f\" font-size=\"%.0f\"", x, y, size) + " text-anchor=\"" + anchor + "\">" +
         escape(s) + "</text>\n";
}

std::string line(double x1, double y1, double x2, double y2, const char* style) {
  return fmt("<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"", x1, y1, x2, y2) + " style=\"" + style + "\"/>\n";
}

std::string document(double width, double height, const std::string& body) {
  return fmt("<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" ", width, height) +
         fmt("viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n", width, height) +
         fmt("<rect width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n", width, height) + body + "</svg>\n";
}

// Horizontal bars on a log axis from 0.01 % to 100 %, with the issue's
// targets (25 %, 50 %) as dashed lines.
}  // namespace

std::string efficiency_plot(const Results& r) {
  const double left = 420, right = 40, top = 50, row = 16, plot_w = 520;
  const double height = top + row * static_cast<double>(r.kernels.size()) + 50;
  const double lo = -2.0, hi = 2.0;  // log10 of percent
  auto x_of = [&](double percent) {
    const double l = std::clamp(std::log10(std::max(percent, 1e-6)), lo, hi);
    return left + (l - lo) / (hi - lo) * plot_w;
  };
  std::string body = text(left, 20, "Roofline efficiency per kernel and shape: max(bytes/copy, flops/FMA peak) / time", "start", 13);
  body += text(left, 36, r.device.name + ", copy " + fmt("%.2f GB/s, FMA %.1f GFLOP/s", r.limits.copy_gbps, r.limits.fma_gflops));
  const double bottom = top + row * static_cast<double>(r.kernels.size());
  for (double p : {0.01, 0.1, 1.0, 10.0, 100.0}) {
    body += line(x_of(p), top - 4, x_of(p), bottom, "stroke:#ddd");
    body += text(x_of(p), bottom + 16, fmt(p < 1 ? "%.2g%%" : "%.0f%%", p), "middle");
  }
  for (double target : {25.0, 50.0}) body += line(x_of(target), top - 4, x_of(target), bottom, "stroke:#c33;stroke-dasharray:4 3");
  for (size_t i = 0; i < r.kernels.size(); ++i) {
    const KernelResult& k = r.kernels[i];
    const double y = top + row * static_cast<double>(i);
    const std::string label = k.name + (k.role.empty() ? "" : "(" + k.role + ")") + " " + k.precision + "  " + shape_label(k.shape);
    body += text(left - 6, y + 11, label, "end", 10);
    const double w = std::max(1.0, x_of(100.0 * k.efficiency) - left);
    const char* color = k.bound == "memory" ? "#4a7fb5" : "#e08a2c";
    body += fmt("<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"", left, y + 2, w, row - 4) +
            " fill=\"" + color + "\"/>\n";
    body += text(left + w + 4, y + 11, fmt("%.2f%%", 100.0 * k.efficiency), "start", 10);
  }
  body += text(left, height - 10, "blue: memory-bound by the model, orange: compute-bound; dashed: targets 25 % and 50 %", "start", 10);
  return document(left + plot_w + right + 60, height, body);
}

// Log-log lines of ms per step against positions for both series.
std::string scaling_plot(const Scaling& s) {
  const double left = 70, top = 50, w = 560, h = 340;
  std::vector<const ScalingPoint*> all;
  for (const auto* series : {&s.bounded, &s.dense})
    for (const ScalingPoint& p : *series) all.push_back(&p);
  double x_lo = 1e30, x_hi = 0, y_lo = 1e30, y_hi = 0;
  for (const ScalingPoint* p : all) {
    x_lo = std::min(x_lo, std::log10(static_cast<double>(p->positions)));
    x_hi = std::max(x_hi, std::log10(static_cast<double>(p->positions)));
    y_lo = std::min(y_lo, std::log10(std::max(p->ms_per_step, 1e-6)));
    y_hi = std::max(y_hi, std::log10(std::max(p->ms_per_step, 1e-6)));
  }
  x_lo = std::floor(x_lo), x_hi = std::max(std::ceil(x_hi), x_lo + 1);
  y_lo = std::floor(y_lo), y_hi = std::max(std::ceil(y_hi), y_lo + 1);
  auto X = [&](double v) { return left + (std::log10(v) - x_lo) / (x_hi - x_lo) * w; };
  auto Y = [&](double v) { return top + h - (std::log10(std::max(v, 1e-6)) - y_lo) / (y_hi - y_lo) * h; };
  std::string body = text(left, 20, "Per-step cost vs document length (log-log)", "start", 13);
  body += text(left, 36, fmt("heads %.0f/%.0f x %.0f, S=%.0f", s.heads_q, s.heads_kv, s.head_dim, s.S) +
                             fmt("; bounded M=%.0f K=%.0f N=%.0f; dense M = K = length", s.M, s.K, s.N));
  for (double e = x_lo; e <= x_hi; ++e) {
    body += line(X(std::pow(10, e)), top, X(std::pow(10, e)), top + h, "stroke:#ddd");
    body += text(X(std::pow(10, e)), top + h + 16, fmt("1e%.0f", e), "middle");
  }
  for (double e = y_lo; e <= y_hi; ++e) {
    body += line(left, Y(std::pow(10, e)), left + w, Y(std::pow(10, e)), "stroke:#ddd");
    body += text(left - 6, Y(std::pow(10, e)) + 4, fmt("%g ms", std::pow(10, e)), "end");
  }
  body += text(left + w / 2, top + h + 34, "document length (positions)", "middle");
  for (const auto& [series, color, name] : {std::tuple{&s.bounded, "#4a7fb5", "bounded"}, std::tuple{&s.dense, "#c33", "dense"}}) {
    std::string points;
    for (const ScalingPoint& p : *series) {
      points += fmt("%.1f,%.1f ", X(static_cast<double>(p.positions)), Y(p.ms_per_step));
      body += fmt("<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\"", X(static_cast<double>(p.positions)), Y(p.ms_per_step)) +
              " fill=\"" + color + "\"/>\n";
    }
    if (!points.empty()) body += "<polyline fill=\"none\" stroke-width=\"2\" stroke=\"" + std::string(color) + "\" points=\"" + points + "\"/>\n";
    const double ly = top + 14 + (std::string(name) == "dense" ? 16 : 0);
    body += line(left + 10, ly - 4, left + 30, ly - 4, (std::string("stroke-width:2;stroke:") + color).c_str());
    body += text(left + 36, ly, name);
  }
  if (s.crossover) {
    const double x = X(static_cast<double>(*s.crossover));
    body += line(x, top, x, top + h, "stroke:#555;stroke-dasharray:4 3");
    body += text(x + 4, top + h - 6, "crossover " + std::to_string(*s.crossover));
  }
  return document(left + w + 40, top + h + 50, body);
}

}  // namespace bench
