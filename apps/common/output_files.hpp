// Output files (--json, --logits, --report) that appear only when the whole
// run succeeded. A regular target (absent, a file, or a symbolic link to
// one) is written to a staging name beside the file it names (same folder,
// so the final rename is atomic; a link stays a link) and renamed into place
// by commit(). A target that is not a regular file (/dev/stdout,
// /proc/self/fd/N, a character device, a FIFO) cannot be replaced: its
// output is staged in the temporary folder and written into it in place at
// commit(). A run that fails, or is stopped by SIGINT, SIGTERM, SIGHUP or
// SIGPIPE, leaves every target as it was and no staging file behind; the
// staging files of a run killed outright (SIGKILL) are removed by the next
// run that stages the same target.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace attendre::cli {

class OutputFiles {
 public:
  OutputFiles() = default;
  ~OutputFiles();  // removes what was staged and not committed
  OutputFiles(const OutputFiles&) = delete;
  OutputFiles& operator=(const OutputFiles&) = delete;

  // Checks `target` and creates its staging file at once, so that an
  // unwritable place fails before any work (io_error naming the flag and
  // the path), and returns the staging path for the caller to fill.
  std::filesystem::path stage(const std::string& flag, const std::filesystem::path& target);
  // Writes `text` to the staging file of `target` (io_error on failure).
  void write_text(const std::filesystem::path& target, const std::string& text);
  // Writes the in-place targets, then renames every other staged file over
  // the file it replaces.
  void commit();

 private:
  struct Staged {
    std::string flag;
    std::filesystem::path target;    // as given: messages and write_text()
    std::filesystem::path replaced;  // the regular file renamed over; empty: written in place
    std::filesystem::path staging;
    int descriptor = -1;  // an in-place target naming one of this process's descriptors (/dev/stdout)
    size_t signal_ticket = 0;  // remove_on_signal()
  };
  const Staged& staged(const std::filesystem::path& target) const;
  static void write_in_place(const Staged& file);
  static void discard(const Staged& file) noexcept;
  std::vector<Staged> files_;
};

}  // namespace attendre::cli
