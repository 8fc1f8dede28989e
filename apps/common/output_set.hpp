// The result files of one run replace those in --out as a set. They are
// written into a fresh staging folder beside --out (same parent, so every
// rename below stays on one file system and is atomic), and only when all
// of them are complete do they move in. On any failure the previous results
// stay exactly as they were and nothing new is left behind: no staging
// folder, no empty --out, no folder created on the way to it; a run stopped
// by SIGINT or SIGTERM before its commit leaves nothing behind either.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace attendre::apps {

class OutputSet {
 public:
  // Checks `out` up front (absent, or a folder in which each of `names` is
  // absent or a file), creates its missing parent folders and the staging
  // folder (".<out>.<tool>-<pid>"). Throws io_error naming the path when
  // `out` cannot hold results.
  OutputSet(const std::filesystem::path& out, std::vector<std::string> names, std::string_view tool);
  // Without a successful commit(), removes the staging folder and the
  // folders the constructor created.
  ~OutputSet();
  OutputSet(const OutputSet&) = delete;
  OutputSet& operator=(const OutputSet&) = delete;

  // Where the new files are written, each under one of `names`.
  const std::filesystem::path& staging() const { return staging_; }

  // Moves the staged files into `out`. A fresh `out` is the staging folder
  // renamed; an existing one has its old files moved aside, the new ones
  // moved in, then the old ones removed, with every move undone if one
  // fails. Throws io_error after rolling back.
  void commit();

 private:
  void replace_files();
  void discard() noexcept;
  // A fatal signal removes what this set created (cli::remove_on_signal).
  void remove_on_signal(const std::filesystem::path& path);
  void stop_removing_on_signal() noexcept;

  std::filesystem::path out_, staging_;
  std::vector<std::string> names_;
  std::vector<std::filesystem::path> created_;  // parents of out_ this run created, outermost first
  bool committed_ = false;
  std::vector<size_t> signal_tickets_;
};

// Tests cannot fill a disk or pull it out halfway, so the points where a run
// can fail on the file system are reachable on purpose: with
// ATTENDRE_REPLAY_INJECT_FAILURE=<point> (named after the replay tool, whose
// tests use it), the run throws io_error there as the file system would.
// Points: "write" (the replay, in the middle of streaming the step files),
// "replace" (after the first new file replaced an old one in an existing
// folder), "rename" (just before the staging folder becomes a fresh folder).
void inject_failure_at(std::string_view point);

}  // namespace attendre::apps
