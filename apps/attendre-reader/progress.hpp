// The progress of long reads on stderr: one live line redrawn in place on
// a terminal (tokens read / total, tokens/s, memory fill per block, ETA),
// plain lines every few seconds when stderr is a file or a pipe, nothing
// with --quiet.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace reader {

class Progress {
 public:
  enum class Mode { off, live, plain };
  static Mode mode_for_stderr(bool quiet);

  explicit Progress(Mode mode) : mode_(mode) {}
  // A run starts: "[2/4 lra_sum]".
  void begin(const std::string& label, size_t run, size_t runs, int64_t total_tokens);
  // `held` and `capacity`: each block's K/V memory, as last sampled.
  void update(int64_t tokens_read, const std::vector<uint32_t>& held, const std::vector<uint32_t>& capacity);
  // The run's last line, with its whole time.
  void end(double seconds);

 private:
  std::string line(int64_t tokens_read, double seconds) const;
  void show(const std::string& text, bool final);

  using Clock = std::chrono::steady_clock;
  Mode mode_;
  std::string label_;
  int64_t total_ = 0, read_ = 0;
  std::vector<uint32_t> held_, capacity_;
  Clock::time_point start_, last_shown_;
  size_t width_ = 0;  // of the live line last drawn, to blank its rest
};

}  // namespace reader
