#include "output_files.hpp"
#include "signal_cleanup.hpp"

#include <attendre/error.hpp>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <memory>
#include <optional>
#include <system_error>

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

namespace attendre::cli {
namespace fs = std::filesystem;
namespace {

std::string errno_text(int error = errno) { return std::generic_category().message(error); }

[[noreturn]] void io_failure(const std::string& flag, const fs::path& target, const std::string& what) {
  throw Error(ErrorCode::io_error, (flag.empty() ? "" : flag + " ") + target.string() + ": " + what);
}

// "<name>.tmp-<pid>": the staging name of every run, so that a run can tell
// the leftovers of a killed one (a pid that is no live process) from the
// staging files of a run still going.
std::string staging_prefix(const std::string& name) { return name + ".tmp-"; }
std::string staging_name(const std::string& name, pid_t pid) { return staging_prefix(name) + std::to_string(pid); }

void remove_stale_staging(const fs::path& folder, const std::string& name) {
  const std::string prefix = staging_prefix(name);
  std::error_code ec;
  for (fs::directory_iterator it(folder.empty() ? "." : folder, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string entry = it->path().filename().string();
    if (entry.size() <= prefix.size() || entry.compare(0, prefix.size(), prefix) != 0) continue;
    pid_t pid = 0;
    const char* digits = entry.data() + prefix.size();
    const auto [end_of_pid, parsed] = std::from_chars(digits, entry.data() + entry.size(), pid);
    if (parsed != std::errc{} || end_of_pid != entry.data() + entry.size() || pid <= 0 || pid == ::getpid()) continue;
    std::error_code ignored;  // a leftover that cannot be removed is only litter
    if (::kill(pid, 0) != 0 && errno == ESRCH && fs::is_regular_file(fs::symlink_status(it->path(), ignored)))
      fs::remove(it->path(), ignored);
  }
}

// The descriptor a path names when it is one of this process's own
// (/dev/stdout, /dev/fd/2, /proc/self/fd/N), so that its output goes to
// that open descriptor, after what the tool printed there, instead of
// reopening and truncating what the descriptor refers to.
std::optional<int> descriptor_named(const fs::path& path) {
  const fs::path normal = fs::absolute(path).lexically_normal();
  const fs::path folder = normal.parent_path();
  const std::string own = "/proc/" + std::to_string(::getpid()) + "/fd";
  if (folder != "/dev/fd" && folder != "/proc/self/fd" && folder != own) return std::nullopt;
  const std::string name = normal.filename().string();
  int descriptor = -1;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), descriptor);
  if (ec != std::errc{} || end != name.data() + name.size() || descriptor < 0) return std::nullopt;
  return descriptor;
}

struct Destination {
  std::optional<int> descriptor;  // an own descriptor, written in place
  fs::path file;                  // else the file (or the link's end) the path names
};

// Follows symbolic links one at a time (the end of a dangling link is where
// the file will be), stopping at a descriptor of this process.
Destination destination(const std::string& flag, const fs::path& target) {
  fs::path path = target;
  for (int hops = 0;; ++hops) {
    if (const std::optional<int> descriptor = descriptor_named(path)) return {descriptor, path};
    std::error_code ec;
    if (!fs::is_symlink(fs::symlink_status(path, ec))) return {std::nullopt, path};
    if (hops == 40) io_failure(flag, target, "too many levels of symbolic links");
    const fs::path next = fs::read_symlink(path, ec);
    if (ec) io_failure(flag, target, "cannot read the symbolic link: " + ec.message());
    path = next.is_absolute() ? next : path.parent_path() / next;
  }
}

void create_empty(const std::string& flag, const fs::path& target, const fs::path& path) {
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) io_failure(flag, target, "cannot write there: " + errno_text());
  std::fclose(file);
}

void write_all(int descriptor, const char* bytes, size_t size, const fs::path& target) {
  while (size > 0) {
    const ssize_t wrote = ::write(descriptor, bytes, size);
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) io_failure("", target, "write failed: " + errno_text(wrote < 0 ? errno : EIO));
    bytes += wrote;
    size -= static_cast<size_t>(wrote);
  }
}

}  // namespace

OutputFiles::~OutputFiles() {
  for (const Staged& file : files_) discard(file);
}

void OutputFiles::discard(const Staged& file) noexcept {
  std::error_code ignored;  // the error that brought us here is the one worth reporting
  fs::remove(file.staging, ignored);
  stop_removing_on_signal(file.signal_ticket);
}

fs::path OutputFiles::stage(const std::string& flag, const fs::path& target) {
  Staged file{flag, target, {}, {}, -1, kNotWatched};
  const Destination where = destination(flag, target);
  std::error_code ec;
  const fs::file_status status = fs::status(where.file, ec);
  if (fs::is_directory(status)) io_failure(flag, target, "is a folder");
  const bool in_place = where.descriptor || (fs::exists(status) && !fs::is_regular_file(status));
  if (where.descriptor) {
    const int mode = ::fcntl(*where.descriptor, F_GETFL);
    if (mode == -1) io_failure(flag, target, "descriptor " + std::to_string(*where.descriptor) + " is not open");
    if ((mode & O_ACCMODE) == O_RDONLY)
      io_failure(flag, target, "descriptor " + std::to_string(*where.descriptor) + " is not open for writing");
    file.descriptor = *where.descriptor;
  } else if (in_place) {
    // A block device or a socket is no place for a result file.
    if (!fs::is_character_file(status) && !fs::is_fifo(status))
      io_failure(flag, target, "is neither a regular file, a character device nor a FIFO");
    if (::access(where.file.c_str(), W_OK) != 0) io_failure(flag, target, "cannot write there: " + errno_text());
  } else {
    file.replaced = where.file;
  }
  // Two flags on one file would each rename over the other's output.
  for (const Staged& other : files_)
    if (!file.replaced.empty() && !other.replaced.empty() &&
        fs::weakly_canonical(other.replaced, ec) == fs::weakly_canonical(file.replaced, ec))
      io_failure(flag, target, "is also the " + other.flag + " file");

  // In place, the output waits in the temporary folder, named after the flag
  // too: "/dev/stdout" and "/proc/self/fd/1" end alike.
  const fs::path folder = in_place ? fs::temp_directory_path(ec) : file.replaced.parent_path();
  const std::string flag_word = flag.substr(std::min(flag.find_first_not_of('-'), flag.size()));
  const std::string name = in_place ? "attendre-" + flag_word + "-" + where.file.filename().string()
                                    : file.replaced.filename().string();
  remove_stale_staging(folder, name);
  file.staging = folder / staging_name(name, ::getpid());
  file.signal_ticket = remove_on_signal(file.staging);
  try {
    create_empty(flag, target, file.staging);
  } catch (...) {
    stop_removing_on_signal(file.signal_ticket);
    throw;
  }
  files_.push_back(file);
  return file.staging;
}

const OutputFiles::Staged& OutputFiles::staged(const fs::path& target) const {
  for (const Staged& file : files_)
    if (file.target == target) return file;
  throw Error(ErrorCode::invalid_argument, target.string() + ": written without being staged");
}

void OutputFiles::write_text(const fs::path& target, const std::string& text) {
  const fs::path& path = staged(target).staging;
  std::FILE* file = std::fopen(path.c_str(), "wb");
  if (!file) io_failure("", target, "cannot write: " + errno_text());
  const bool written = std::fwrite(text.data(), 1, text.size(), file) == text.size();
  const bool flushed = std::fflush(file) == 0 && ::fsync(::fileno(file)) == 0;
  const bool closed = std::fclose(file) == 0;
  if (!written || !flushed || !closed) io_failure("", target, "write failed: " + errno_text());
}

void OutputFiles::write_in_place(const Staged& file) {
  const std::unique_ptr<std::FILE, int (*)(std::FILE*)> staged_bytes(std::fopen(file.staging.c_str(), "rb"), std::fclose);
  if (!staged_bytes) io_failure("", file.target, "cannot read the staged output: " + errno_text());
  // What the tool printed on the descriptor comes first.
  std::fflush(nullptr);
  const int descriptor = file.descriptor >= 0 ? file.descriptor : ::open(file.target.c_str(), O_WRONLY | O_CLOEXEC);
  if (descriptor < 0) io_failure("", file.target, "cannot write: " + errno_text());
  std::array<char, 1 << 16> block;
  try {
    for (size_t got; (got = std::fread(block.data(), 1, block.size(), staged_bytes.get())) > 0;)
      write_all(descriptor, block.data(), got, file.target);
    if (std::ferror(staged_bytes.get())) io_failure("", file.target, "cannot read the staged output: " + errno_text());
  } catch (...) {
    if (descriptor != file.descriptor) ::close(descriptor);
    throw;
  }
  if (descriptor != file.descriptor && ::close(descriptor) != 0) io_failure("", file.target, "write failed: " + errno_text());
}

void OutputFiles::commit() {
  // In place first: a device or a pipe can still refuse (/dev/full), and
  // then no regular target has been replaced yet.
  for (const Staged& file : files_)
    if (file.replaced.empty()) write_in_place(file);
  for (const Staged& file : files_) {
    if (file.replaced.empty()) continue;
    std::error_code ec;
    fs::rename(file.staging, file.replaced, ec);
    if (ec) io_failure("", file.target, "cannot move the output into place: " + ec.message());
  }
  for (const Staged& file : files_) discard(file);
  files_.clear();
}

}  // namespace attendre::cli
