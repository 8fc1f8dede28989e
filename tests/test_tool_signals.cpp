// The tools' output files at a run's edges, the tools run as a user would:
// stopped by SIGINT or SIGTERM while an output is staged, a run leaves no
// staging file behind and the previous output as it was, and dies of the
// signal (a shell sees 130 or 143); a target that is a link to /dev/stdout
// gets the output on the tool's stdout and stays a link.
#if defined(ATTENDRE_READER_BINARY) && defined(ATTENDRE_GENERATE_BINARY) && defined(ATTENDRE_PERPLEXITY_BINARY)

#include "no_device/gguf_test_support.hpp"
#include "support.hpp"

#include <doctest/doctest.h>

#include <chrono>
#include <csignal>
#include <fstream>
#include <thread>

#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char** environ;

namespace fs = std::filesystem;
using attendre::test::TempDir;

namespace {

// Starts `binary` with `args` (no shell between, so the pid is the tool's),
// its output discarded.
pid_t spawn_tool(const std::string& binary, std::vector<std::string> args) {
  args.insert(args.begin(), binary);
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  REQUIRE(spawned == 0);
  return pid;
}

// Runs the tool with `args`, whose text input is a FIFO that no one writes:
// the tool stages its outputs, then waits on the FIFO for ever. Once the
// staging file of `target` exists ("<target>.tmp-<pid>"), `signal` arrives;
// returns the tool's wait status.
int stop_once_staged(const std::string& binary, const std::vector<std::string>& args, const fs::path& target,
                     int signal) {
  const pid_t pid = spawn_tool(binary, args);
  fs::path staged = target;
  staged += ".tmp-" + std::to_string(pid);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (!fs::exists(staged) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  const bool was_staged = fs::exists(staged);
  ::kill(pid, was_staged ? signal : SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE_MESSAGE(was_staged, "the tool never staged " << target);
  return status;
}

}  // namespace

TEST_CASE("attendre-generate/-perplexity/-reader: SIGINT and SIGTERM remove the staging files and leave the outputs as they were") {
  const TempDir dir;
  const fs::path fifo = dir / "input.txt";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  std::ofstream(dir / "previous.json") << "previous\n";

  struct Tool {
    std::string name, binary;
    std::vector<std::string> args;
  };
  std::vector<Tool> tools = {{"attendre-reader", ATTENDRE_READER_BINARY,
                              {"--text", fifo.string(), "--quiet", "--json", dir / "previous.json", "--report",
                               dir / "report.html"}}};
  if (const auto models = attendre::test::shared_models()) {
    const std::string stories = *models / "stories260K.gguf";
    tools.push_back({"attendre-generate", ATTENDRE_GENERATE_BINARY,
                     {"--model", stories, "--prompt-file", fifo.string(), "--json", dir / "previous.json", "--logits",
                      dir / "logits.npy"}});
    tools.push_back({"attendre-perplexity", ATTENDRE_PERPLEXITY_BINARY,
                     {"--model", stories, "--file", fifo.string(), "--json", dir / "previous.json"}});
  } else {
    MESSAGE("no shared models: only attendre-reader is stopped");
  }
  for (const Tool& tool : tools)
    for (const int signal : {SIGINT, SIGTERM}) {
      INFO(tool.name << " stopped by " << (signal == SIGINT ? "SIGINT" : "SIGTERM"));
      const int status = stop_once_staged(tool.binary, tool.args, dir / "previous.json", signal);
      CHECK(WIFSIGNALED(status));
      CHECK(WTERMSIG(status) == signal);
      CHECK(attendre::test::slurp(dir / "previous.json") == "previous\n");
      for (const auto& entry : fs::directory_iterator(dir.path))
        CHECK_MESSAGE(entry.path().filename().string().find(".tmp-") == std::string::npos,
                      "left behind: " << entry.path());
    }
}

TEST_CASE("attendre-reader: --json through a link to /dev/stdout prints on stdout, after the table, and keeps the link") {
  const TempDir dir;
  fs::create_symlink("/dev/stdout", dir / "stdout.json");
  const attendre::test::ToolStreams r = attendre::test::run_tool_streams(
      ATTENDRE_READER_BINARY, "--haystack-tokens 200 --quiet --json '" + (dir / "stdout.json") + "'");
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(fs::is_symlink(dir / "stdout.json"));
  const size_t json = r.out.find("\n{");
  REQUIRE(json != std::string::npos);
  CHECK(r.out.find("\"runs\"", json) != std::string::npos);
  CHECK(r.out.find("needles", 0) < json);  // the table came first
}

#endif
