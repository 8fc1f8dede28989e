// The reader's output files (--json, --report) appear whole or not at all:
// each is staged under a hidden name beside its target, created when the
// run starts (so an unwritable path fails before any work), and renamed
// over its target only when every file of the run is written. A failed run
// leaves each target exactly as it was.
#pragma once

#include <filesystem>
#include <string_view>
#include <vector>

namespace reader {

class StagedFiles {
 public:
  // Throws io_error naming the path when a target's folder is missing or a
  // target is a folder or cannot be written.
  explicit StagedFiles(std::vector<std::filesystem::path> targets);
  ~StagedFiles();  // removes whatever was staged and not committed
  StagedFiles(const StagedFiles&) = delete;
  StagedFiles& operator=(const StagedFiles&) = delete;

  // Writes the whole content of target `index` (written again: replaced).
  void write(size_t index, std::string_view bytes);
  // Moves every staged file over its target.
  void commit();

 private:
  void discard() noexcept;

  std::vector<std::filesystem::path> targets_, staged_;
  bool committed_ = false;
};

}  // namespace reader
