// What the tools share at the file system's edge, tested in place: output
// files that replace a regular file atomically and write anything else in
// place (links kept, devices and pipes never replaced), the leftovers of
// killed runs, and text input read with bounded memory.
#ifdef ATTENDRE_APP_COMMON

#include "support.hpp"

#include "common/arguments.hpp"
#include "common/output_files.hpp"
#include "common/output_set.hpp"

#include <attendre/error.hpp>
#include <doctest/doctest.h>

#include <csignal>
#include <fstream>
#include <thread>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace attendre;
namespace fs = std::filesystem;

namespace {

// The message of the io_error `work` throws ("" when it throws none).
template <class Work>
std::string io_error_of(Work&& work) {
  try {
    work();
  } catch (const Error& e) {
    CHECK(e.code() == ErrorCode::io_error);
    return e.what();
  }
  return "";
}

// Every entry of `folder` whose name starts with `prefix`.
std::vector<std::string> entries_starting(const fs::path& folder, const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(folder))
    if (entry.path().filename().string().rfind(prefix, 0) == 0) names.push_back(entry.path().filename().string());
  return names;
}

// A pid that no live process has: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  REQUIRE(child > 0);
  int status = 0;
  ::waitpid(child, &status, 0);
  return child;
}

// Nothing of this process left in the temporary folder, where in-place outputs wait.
void check_no_temporary_staging() {
  const std::string pid = std::to_string(::getpid());
  for (const auto& entry : fs::directory_iterator(fs::temp_directory_path())) {
    const std::string name = entry.path().filename().string();
    CHECK_MESSAGE(!(name.rfind("attendre-", 0) == 0 && name.ends_with(".tmp-" + pid)), "left behind: " << name);
  }
}

}  // namespace

TEST_CASE("tool output files: a symbolic link to a regular file stays a link, the file it names is replaced") {
  const test::TempDir dir;
  std::ofstream(dir / "real.json") << "previous\n";
  fs::create_symlink("real.json", dir / "link.json");
  fs::create_symlink("absent.json", dir / "dangling.json");
  {
    cli::OutputFiles outputs;
    outputs.stage("--json", dir / "link.json");
    outputs.stage("--report", dir / "dangling.json");
    outputs.write_text(dir / "link.json", "new\n");
    outputs.write_text(dir / "dangling.json", "created\n");
    CHECK(test::slurp(dir / "real.json") == "previous\n");  // nothing replaced before the commit
    outputs.commit();
  }
  CHECK(fs::is_symlink(dir / "link.json"));
  CHECK(test::slurp(dir / "real.json") == "new\n");
  // A dangling link's file is created where the link points.
  CHECK(fs::is_symlink(dir / "dangling.json"));
  CHECK(test::slurp(dir / "absent.json") == "created\n");
  CHECK(entries_starting(dir.path, "real.json.tmp-").empty());
  CHECK(entries_starting(dir.path, "link.json.tmp-").empty());
}

TEST_CASE("tool output files: FIFOs, devices and descriptors are written in place, never replaced") {
  const test::TempDir dir;
  SUBCASE("a FIFO") {
    REQUIRE(::mkfifo((dir / "pipe").c_str(), 0600) == 0);
    // Held open for reading here, so the tool's open for writing does not wait.
    const int reader = ::open((dir / "pipe").c_str(), O_RDWR | O_NONBLOCK);
    REQUIRE(reader >= 0);
    {
      cli::OutputFiles outputs;
      outputs.stage("--json", dir / "pipe");
      outputs.write_text(dir / "pipe", "{\"fifo\": true}\n");
      outputs.commit();
    }
    CHECK(fs::is_fifo(fs::symlink_status(dir / "pipe")));
    char bytes[64] = {};
    const ssize_t got = ::read(reader, bytes, sizeof bytes);
    ::close(reader);
    CHECK(std::string(bytes, static_cast<size_t>(std::max<ssize_t>(got, 0))) == "{\"fifo\": true}\n");
  }
  SUBCASE("a link to a character device") {
    fs::create_symlink("/dev/null", dir / "null.json");
    cli::OutputFiles outputs;
    outputs.stage("--json", dir / "null.json");
    outputs.write_text(dir / "null.json", "discarded\n");
    outputs.commit();
    CHECK(fs::is_symlink(dir / "null.json"));
    CHECK(fs::is_character_file(fs::status(dir / "null.json")));
  }
  SUBCASE("a device that refuses the bytes fails the commit with one line") {
    fs::create_symlink("/dev/full", dir / "full.json");
    cli::OutputFiles outputs;
    outputs.stage("--json", dir / "full.json");
    outputs.write_text(dir / "full.json", "no room\n");
    const std::string message = io_error_of([&] { outputs.commit(); });
    CHECK(message.find("full.json: write failed: No space left on device") != std::string::npos);
    CHECK(fs::is_symlink(dir / "full.json"));
  }
  SUBCASE("one of this process's descriptors, after what was written there") {
    const int descriptor = ::open((dir / "captured.txt").c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    REQUIRE(descriptor >= 0);
    REQUIRE(::write(descriptor, "printed\n", 8) == 8);
    const fs::path alias = "/proc/self/fd/" + std::to_string(descriptor);
    fs::create_symlink(alias, dir / "stdout.json");  // as /dev/stdout links to /proc/self/fd/1
    {
      cli::OutputFiles outputs;
      outputs.stage("--json", dir / "stdout.json");
      outputs.write_text(dir / "stdout.json", "{}\n");
      outputs.commit();
    }
    ::close(descriptor);
    CHECK(test::slurp(dir / "captured.txt") == "printed\n{}\n");
    CHECK(fs::is_symlink(dir / "stdout.json"));
    // A descriptor no process has open (a closed one could be reopened by another thread).
    fs::create_symlink("/proc/self/fd/2147483647", dir / "closed.json");
    CHECK(io_error_of([&] { cli::OutputFiles().stage("--json", dir / "closed.json"); }).find("is not open") !=
          std::string::npos);
  }
  check_no_temporary_staging();
}

TEST_CASE("tool output files: a folder, or one file given twice, is refused before any work") {
  const test::TempDir dir;
  cli::OutputFiles outputs;
  CHECK(io_error_of([&] { outputs.stage("--json", dir.path); }).find("is a folder") != std::string::npos);
  fs::create_symlink(dir.path, dir / "folder-link");
  CHECK(io_error_of([&] { outputs.stage("--json", dir / "folder-link"); }).find("is a folder") != std::string::npos);
  outputs.stage("--logits", dir / "out.bin");
  fs::create_symlink("out.bin", dir / "alias.bin");
  CHECK(io_error_of([&] { outputs.stage("--json", dir / "alias.bin"); }).find("is also the --logits file") !=
        std::string::npos);
}

TEST_CASE("tool output files: staging left by a killed run is removed, that of a live run kept") {
  const test::TempDir dir;
  const std::string stale = "out.json.tmp-" + std::to_string(dead_pid());
  const std::string live = "out.json.tmp-" + std::to_string(::getppid());
  const std::string other = "other.json.tmp-" + std::to_string(dead_pid());
  for (const std::string& name : {stale, live, other}) std::ofstream(dir / name) << "leftover";
  {
    cli::OutputFiles outputs;
    outputs.stage("--json", dir / "out.json");
  }
  CHECK_FALSE(fs::exists(dir / stale));
  CHECK(fs::exists(dir / live));
  CHECK(fs::exists(dir / other));  // another target's: not this run's to judge
  CHECK_FALSE(fs::exists(dir / ("out.json.tmp-" + std::to_string(::getpid()))));
}

TEST_CASE("tool output sets: SIGTERM before the commit removes the staging folder and the folders made for it") {
  const test::TempDir dir;
  fs::create_directory(dir / "existing");
  std::ofstream(dir / "existing/a.npy") << "previous";
  for (const fs::path& out : {fs::path(dir / "new/parents/out"), fs::path(dir / "existing")}) {
    INFO(out);
    int ready[2];
    REQUIRE(::pipe(ready) == 0);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {  // stages a set, says so, and waits for the signal, as a tool would
      std::signal(SIGTERM, SIG_DFL);  // not doctest's crash report
      apps::OutputSet set(out, {"a.npy", "b.npy"}, "attendre-test");
      std::ofstream(set.staging() / "a.npy") << "new";
      std::ofstream(set.staging() / "b.npy") << "new";
      if (::write(ready[1], "s", 1) != 1) ::_exit(1);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char staged = 0;
    const bool said = ::read(ready[0], &staged, 1) == 1;
    ::close(ready[0]);
    ::kill(child, SIGTERM);
    int status = 0;
    ::waitpid(child, &status, 0);
    REQUIRE(said);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGTERM);
  }
  CHECK_FALSE(fs::exists(dir / "new"));
  CHECK(test::slurp(dir / "existing/a.npy") == "previous");
  CHECK_FALSE(fs::exists(dir / "existing/b.npy"));
  CHECK(entries_starting(dir.path, ".").empty());
}

TEST_CASE("tool text input: a source past the limit is refused while reading, a folder at once, a FIFO read whole") {
  const test::TempDir dir;
  std::ofstream(dir / "exact.txt") << std::string(1000, 'a');
  CHECK(cli::read_text_file("--file", dir / "exact.txt", 1000) == std::string(1000, 'a'));
  std::string message = io_error_of([&] { cli::read_text_file("--file", dir / "exact.txt", 999); });
  CHECK(message.find("--file " + (dir / "exact.txt") + ": longer than 999 bytes") != std::string::npos);
  // An endless source stops at the limit, not at the end of memory.
  message = io_error_of([&] { cli::read_text_file("--prompt-file", "/dev/zero", 1 << 20); });
  CHECK(message == "--prompt-file /dev/zero: longer than 1.0 MiB (1048576 bytes), the most a text file may hold");

  message = io_error_of([&] { cli::read_text_file("--file", dir.path); });
  CHECK(message == "--file " + dir.path.string() + ": is a folder, not a text file");
  CHECK(io_error_of([&] { cli::read_text_file("--file", dir / "absent.txt"); }).find("cannot open: No such file") !=
        std::string::npos);

  REQUIRE(::mkfifo((dir / "pipe").c_str(), 0600) == 0);
  std::thread writer([&] { std::ofstream(dir / "pipe") << "through a pipe"; });
  CHECK(cli::read_text_file("--file", dir / "pipe") == "through a pipe");
  writer.join();
}

#endif  // ATTENDRE_APP_COMMON
