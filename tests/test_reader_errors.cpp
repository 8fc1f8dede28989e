// attendre-reader's failures: each one line on stderr naming the problem,
// a non-zero exit, and no --json or --report file left behind (an existing
// one untouched).
#include "reader_support.hpp"

#ifdef ATTENDRE_READER_BINARY

#include "gguf/gguf_writer.hpp"

#include <fstream>

using namespace attendre::test;
using namespace attendre::test::reader;

namespace {

struct Case {
  std::string name, args, prefix;  // prefix: before the command (environment)
  int code;
  std::string message;  // what the one line must say
  bool own_outputs = false;  // the case names --json and --report itself
};

}  // namespace

TEST_CASE("attendre-reader: errors are one line and a non-zero exit, and leave no output behind") {
  const TempDir dir;
  std::ofstream(dir / "model.gguf", std::ios::binary) << "GGUF";
  {
    // A well-formed file of an architecture the stack does not run.
    attendre::gguf::Writer writer = attendre::gguf::Writer::create().value_or_throw();
    writer.add("general.architecture", attendre::gguf::MetadataValue::string("gpt2")).or_throw();
    writer.write(dir / "arch.gguf").or_throw();
  }
  std::string bad(70000, 'a');
  bad += "\xff tail";  // an invalid byte past the first 64 KiB block
  std::ofstream(dir / "bad.txt", std::ios::binary) << bad;
  std::ofstream(dir / "surrogate.txt", std::ios::binary) << "ok \xed\xa0\x80";  // an encoded surrogate
  std::ofstream(dir / "cut.txt", std::ios::binary) << "cut \xe2\x82";  // a character cut short by the end
  std::ofstream(dir / "previous.json") << "{\"previous\": true}\n";

  // More K/V memory than this device has, within what one buffer can index.
  const uint64_t device_bytes = gpu().caps().device_local_bytes;
  const std::string huge = device_bytes <= (uint64_t{40} << 30) ? "16000000" : "";

  std::vector<Case> cases = {
      {"missing file", "--text " + quote(dir / "nope.txt"), "", 1, "cannot open " + (dir / "nope.txt")},
      {"a folder", "--text " + quote(dir.path.string()), "", 1, "it is a folder"},
      {"invalid UTF-8", "--text " + quote(dir / "bad.txt"), "", 1, "bad.txt: invalid UTF-8 at byte 70000"},
      {"a surrogate", "--text " + quote(dir / "surrogate.txt"), "", 1, "invalid UTF-8 at byte 3"},
      {"a cut character", "--text " + quote(dir / "cut.txt"), "", 1, "invalid UTF-8 at byte 4"},
      {"a truncated model", "--model " + quote(dir / "model.gguf"), "", 1, "model.gguf: version: needs 4 bytes"},
      {"an unsupported model", "--model " + quote(dir / "arch.gguf"), "", 1, "architecture 'gpt2' is not supported"},
      {"answer tokens without a model", "--answer-tokens 5", "", 2, "--answer-tokens needs --model"},
      {"LM-Infinite without a model", "--lm-infinite", "", 2, "--lm-infinite needs --model"},
      {"a zero LM-Infinite window", "--model " + quote(dir / "model.gguf") + " --lm-infinite 0", "", 2, "--lm-infinite"},
      {"answer tokens out of range", "--model " + quote(dir / "model.gguf") + " --answer-tokens 0", "", 2,
       "--answer-tokens: expected a whole number from 1 to 4096, got '0'"},
      {"a model's stream export", "--model " + quote(dir / "model.gguf") + " --export-stream " + quote(dir / "s"), "", 2,
       "--export-stream needs the lexical model"},
      {"a missing model", "--model " + quote(dir / "none.gguf"), "", 1, "cannot open"},
      {"no Vulkan device", "--haystack-tokens 100", "VK_ICD_FILENAMES=/nonexistent.json VK_DRIVER_FILES=/nonexistent.json ",
       1, "no usable Vulkan device"},
      {"an infeasible memory", "--kv-capacity 8 --chunk 32", "", 1, "(M is --kv-capacity, S is --chunk"},
      {"a per-block list of the wrong length", "--kv-capacity 64,64", "", 1, "--kv-capacity takes one value or one per block (3), got 2"},
      {"a template without the context", "--template 'Question: {question}'", "", 1, "{context} exactly once"},
      {"a question that is not UTF-8", "--question \"$(printf '\\303(')\"", "", 2, "--question: invalid UTF-8 at byte 0"},
      {"an unknown policy", "--policy lifo", "", 2, "unknown policy 'lifo'"},
      {"a lambda out of range", "--lambda 2e6", "", 2, "--lambda: expected a number from 0 to 1e+06, got '2e6'"},
      {"an unknown option", "--colour", "", 2, "unknown option '--colour'"},
      {"policy and compare", "--policy fifo --compare fifo,lfa", "", 2, "choose one"},
      {"text and haystack", "--text x --needles 2", "", 2, "choose one"},
      {"a report in a missing folder",
       "--json " + quote(dir / "previous.json") + " --report " + quote(dir / "no/such/r.html"), "", 1, "cannot write there", true},
  };
  if (!huge.empty())
    cases.push_back({"a memory the device cannot hold", "--kv-capacity " + huge, "", 1, "of device memory but"});
  else
    MESSAGE("this device has more than 40 GiB: the device-memory refusal is not exercised");

  for (const Case& c : cases) {
    INFO(c.name);
    const std::string outputs = " --json " + quote(dir / "previous.json") + " --report " + quote(dir / "r.html");
    const ToolStreams r = run_reader(c.args + " --quiet" + (c.own_outputs ? "" : outputs), c.prefix);
    INFO(r.out << r.err);
    CHECK(r.code == c.code);
    CHECK(r.err.starts_with("attendre-reader: "));
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find(c.message) != std::string::npos);
    CHECK(slurp(dir / "previous.json") == "{\"previous\": true}\n");
    CHECK(!std::filesystem::exists(dir / "r.html"));
    for (const auto& entry : std::filesystem::directory_iterator(dir.path))
      CHECK_MESSAGE(entry.path().filename().string().find(".attendre-reader-") == std::string::npos,
                    "staged file left behind: " << entry.path());
  }
}

TEST_CASE("attendre-reader: an --export-stream folder that cannot be made fails before the read, with one line") {
  const TempDir dir;
  std::ofstream(dir / "a-file") << "not a folder";
  const ToolStreams r = run_reader(kHaystack + " --policy lra_sum --export-stream " + quote(dir / "a-file/stream"));
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(r.out.empty());  // no table: nothing was read
  CHECK(r.err.starts_with("attendre-reader: "));
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find("cannot create the output folder") != std::string::npos);
}

#endif
