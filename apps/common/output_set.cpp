#include "output_set.hpp"
#include "signal_cleanup.hpp"
#include "core/fail.hpp"

#include <attendre/error.hpp>

#include <cerrno>
#include <cstdlib>
#include <system_error>

#include <fcntl.h>
#include <unistd.h>

namespace attendre::apps {
namespace fs = std::filesystem;
namespace {

[[noreturn]] void io_failure(const fs::path& path, const std::string& what) {
  fail(ErrorCode::io_error, path.string() + ": " + what);
}

// A rename is only durable once the folder holding the entry is synced.
// File systems that cannot sync a folder (EINVAL) give no stronger promise
// to ask for, so that is not an error.
void sync_folder(const fs::path& folder) {
  const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) io_failure(folder, "cannot open the folder to sync it: " + std::generic_category().message(errno));
  const int synced = ::fsync(fd);
  const int error = errno;
  ::close(fd);
  if (synced != 0 && error != EINVAL) io_failure(folder, "fsync failed: " + std::generic_category().message(error));
}

void rename_or_fail(const fs::path& from, const fs::path& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) io_failure(to, "cannot move " + from.string() + " into place: " + ec.message());
}

// "out/", "out/." and "out" name the same folder; only the last has the
// filename the staging folder is named after. Symbolic links are resolved,
// so that the staging folder lands beside the real folder, on its file system.
fs::path normalized(const fs::path& out) {
  std::error_code ec;
  fs::path path = fs::weakly_canonical(fs::absolute(out), ec);
  if (ec) path = fs::absolute(out);
  path = path.lexically_normal();
  if (path.filename().empty() && path.has_parent_path() && path != path.root_path()) path = path.parent_path();
  return path;
}

std::string aside_name(const std::string& name) { return name + ".previous"; }

}  // namespace

void inject_failure_at(std::string_view point) {
  const char* wanted = std::getenv("ATTENDRE_REPLAY_INJECT_FAILURE");
  if (wanted && point == wanted)
    fail(ErrorCode::io_error, "injected failure at '" + std::string(point) + "' (ATTENDRE_REPLAY_INJECT_FAILURE)");
}

OutputSet::OutputSet(const fs::path& out, std::vector<std::string> names, std::string_view tool)
    : out_(normalized(out)), names_(std::move(names)) {
  const std::string refuse = "cannot create the output folder: ";
  std::error_code ec;
  const fs::file_status status = fs::status(out_, ec);
  if (fs::exists(status) && !fs::is_directory(status)) io_failure(out_, refuse + "it exists and is not a folder");
  if (fs::is_directory(status)) {
    // Moving a folder aside and deleting it after the run would destroy
    // something that is not a result; such a path is refused before any work.
    for (const std::string& name : names_) {
      const fs::file_status entry = fs::symlink_status(out_ / name, ec);
      if (fs::exists(entry) && fs::is_directory(entry))
        io_failure(out_ / name, "exists and is a folder, not a result file; move it away or pick another --out");
    }
  }

  const fs::path parent = out_.parent_path();
  std::vector<fs::path> missing;
  for (fs::path p = parent; !p.empty() && !fs::exists(fs::symlink_status(p, ec)); p = p.parent_path()) {
    missing.push_back(p);
    if (p == p.parent_path()) break;
  }
  for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
    remove_on_signal(*it);  // before it exists: no moment uncovered
    if (!fs::create_directory(*it, ec) && ec) {
      discard();
      io_failure(out_, refuse + it->string() + ": " + ec.message());
    }
    created_.push_back(*it);
  }
  if (!fs::is_directory(parent, ec)) {
    discard();
    io_failure(out_, refuse + parent.string() + " is not a folder");
  }

  // pid and a counter: concurrent runs and leftovers of a killed one never collide.
  // (Appended piece by piece: GCC 12 warns falsely, -Wrestrict, on "." + a temporary string.)
  std::string stem = ".";
  stem.append(out_.filename().string()).append(".").append(tool).append("-").append(std::to_string(::getpid()));
  for (int attempt = 0;; ++attempt) {
    fs::path candidate = parent / stem;
    if (attempt) candidate += std::string("-").append(std::to_string(attempt));
    // Watched before it exists; forgotten if it was another run's.
    const size_t ticket = cli::remove_on_signal(candidate);
    if (fs::create_directory(candidate, ec)) {
      staging_ = std::move(candidate);
      signal_tickets_.push_back(ticket);
      break;
    }
    cli::stop_removing_on_signal(ticket);
    if (ec || attempt == 100) {
      discard();
      io_failure(candidate, "cannot create the staging folder for the results: " +
                                (ec ? ec.message() : std::string("too many leftovers of earlier runs")));
    }
  }
  for (const std::string& name : names_) remove_on_signal(staging_ / name);
}

void OutputSet::remove_on_signal(const fs::path& path) { signal_tickets_.push_back(cli::remove_on_signal(path)); }

void OutputSet::stop_removing_on_signal() noexcept {
  for (const size_t ticket : signal_tickets_) cli::stop_removing_on_signal(ticket);
  signal_tickets_.clear();
}

OutputSet::~OutputSet() {
  if (!committed_) discard();
  stop_removing_on_signal();  // a failed rollback keeps the staging folder: it holds the previous results
}

void OutputSet::discard() noexcept {
  std::error_code ignored;  // the failure that got us here is the one worth reporting
  if (!staging_.empty()) fs::remove_all(staging_, ignored);
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) fs::remove(*it, ignored);
  stop_removing_on_signal();
}

void OutputSet::commit() {
  for (const std::string& name : names_)
    if (!fs::is_regular_file(staging_ / name)) io_failure(staging_ / name, "missing from the staged results");
  sync_folder(staging_);
  std::error_code ec;
  if (!fs::exists(out_, ec)) {
    inject_failure_at("rename");
    rename_or_fail(staging_, out_);
    committed_ = true;
    stop_removing_on_signal();
    sync_folder(out_.parent_path());
    return;
  }
  replace_files();
  committed_ = true;
  stop_removing_on_signal();
  std::error_code ignored;  // the results are in place; the old ones are litter at worst
  fs::remove_all(staging_, ignored);
}

void OutputSet::replace_files() {
  std::vector<std::string> aside, moved_in;
  try {
    std::error_code ec;
    for (const std::string& name : names_)
      if (fs::exists(fs::symlink_status(out_ / name, ec))) {
        rename_or_fail(out_ / name, staging_ / aside_name(name));
        aside.push_back(name);
      }
    for (const std::string& name : names_) {
      rename_or_fail(staging_ / name, out_ / name);
      moved_in.push_back(name);
      inject_failure_at("replace");
    }
    sync_folder(out_);
  } catch (const Error& e) {
    // Undo in reverse; a step that fails here cannot be helped, but it is
    // reported with the original error so the user knows to look.
    std::string undo_failures;
    std::error_code ec;
    for (auto it = moved_in.rbegin(); it != moved_in.rend(); ++it) {
      fs::rename(out_ / *it, staging_ / *it, ec);
      if (ec) undo_failures += " " + (out_ / *it).string();
    }
    for (auto it = aside.rbegin(); it != aside.rend(); ++it) {
      fs::rename(staging_ / aside_name(*it), out_ / *it, ec);
      if (ec) undo_failures += " " + (out_ / *it).string();
    }
    if (undo_failures.empty()) throw;
    committed_ = true;  // not discarded: the staging folder holds the only copy of those previous results
    fail(e.code(), std::string(e.what()) + "; restoring the previous results failed for" + undo_failures +
                       " (they are in " + staging_.string() + ")");
  }
}

}  // namespace attendre::apps
