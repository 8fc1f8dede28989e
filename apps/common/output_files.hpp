// Output files (--json, --logits) that appear only when the whole run
// succeeded: each is written to a staging name beside its target (same
// folder, so the final rename is atomic) and renamed into place by commit();
// a run that fails leaves every target as it was and no staging file behind.
#pragma once

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace attendre::cli {

class OutputFiles {
 public:
  OutputFiles() = default;
  ~OutputFiles();  // removes what was staged and not committed
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;

  // Creates the staging file for `target` at once, so that an unwritable
  // place fails before any work (io_error naming the flag and the path),
  // and returns its path for the caller to fill.
  std::filesystem::path stage(const std::string& flag, const std::filesystem::path& target);
  // Writes `text` to the staging file of `target` (io_error on failure).
  void write_text(const std::filesystem::path& target, const std::string& text);
  // Renames every staged file over its target.
  void commit();

 private:
  const std::filesystem::path& staged(const std::filesystem::path& target) const;
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> files_;  // (target, staging)
};

}  // namespace attendre::cli
