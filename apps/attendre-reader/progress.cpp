#include "progress.hpp"

#include <cmath>
#include <cstdio>

#include <unistd.h>

namespace reader {
namespace {

std::string seconds_text(double s) {
  char buf[32];
  if (s < 60) {
    std::snprintf(buf, sizeof buf, "%.1fs", s);
  } else {
    const long long whole = std::llround(s);
    std::snprintf(buf, sizeof buf, "%lldm%02llds", whole / 60, whole % 60);
  }
  return buf;
}

}  // namespace

Progress::Mode Progress::mode_for_stderr(bool quiet) {
  if (quiet) return Mode::off;
  return ::isatty(STDERR_FILENO) ? Mode::live : Mode::plain;
}

void Progress::begin(const std::string& label, size_t run, size_t runs, int64_t total_tokens) {
  // Formatted, not concatenated: GCC 12 warns falsely (-Wrestrict) on short string literals joined to strings.
  char prefix[48];
  std::snprintf(prefix, sizeof prefix, "[%zu/%zu ", run + 1, runs);
  label_ = std::string(prefix).append(label).append("]");
  total_ = total_tokens;
  read_ = 0;
  held_.clear();
  capacity_.clear();
  start_ = last_shown_ = Clock::now();
}

std::string Progress::line(int64_t tokens_read, double seconds) const {
  char buf[160];
  const double rate = seconds > 0 ? static_cast<double>(tokens_read) / seconds : 0.0;
  std::snprintf(buf, sizeof buf, "%s %lld/%lld tokens, %.0f tokens/s", label_.c_str(),
                static_cast<long long>(tokens_read), static_cast<long long>(total_), rate);
  std::string text = buf;
  if (!held_.empty()) {
    text += ", memory";
    for (size_t l = 0; l < held_.size(); ++l)
      text.append(" ").append(std::to_string(held_[l])).append("/").append(std::to_string(capacity_[l]));
  }
  if (tokens_read < total_ && rate > 0) text.append(", ETA ").append(seconds_text(static_cast<double>(total_ - tokens_read) / rate));
  return text;
}

void Progress::show(const std::string& text, bool final) {
  if (mode_ == Mode::live) {
    // Redraw in place; spaces blank what a longer previous line left.
    const size_t pad = width_ > text.size() ? width_ - text.size() : 0;
    std::fprintf(stderr, "\r%s%s%s", text.c_str(), std::string(pad, ' ').c_str(), final ? "\n" : "");
    width_ = final ? 0 : text.size();
  } else {
    std::fprintf(stderr, "%s\n", text.c_str());
  }
  std::fflush(stderr);
}

void Progress::update(int64_t tokens_read, const std::vector<uint32_t>& held, const std::vector<uint32_t>& capacity) {
  if (mode_ == Mode::off) return;
  read_ = tokens_read;
  held_ = held;
  capacity_ = capacity;
  const Clock::time_point now = Clock::now();
  // A terminal redraws five times a second; a log gets a line every 5 s.
  const auto interval = mode_ == Mode::live ? std::chrono::milliseconds(200) : std::chrono::milliseconds(5000);
  if (now - last_shown_ < interval) return;
  last_shown_ = now;
  show(line(tokens_read, std::chrono::duration<double>(now - start_).count()), false);
}

void Progress::end(double seconds) {
  if (mode_ == Mode::off) return;
  show(line(total_, seconds).append(" in ").append(seconds_text(seconds)), true);
}

}  // namespace reader
