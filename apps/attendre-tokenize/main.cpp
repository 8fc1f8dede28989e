// attendre-tokenize: the token ids of a text under a GGUF file's tokenizer,
// as a JSON array on one line, or the text of ids (--decode). Exit status:
// 0 success, 1 bad file or text, 2 command-line error.
#include "arguments.hpp"

#include <attendre/error.hpp>
#include <attendre/tokenizer.hpp>

#include <iostream>
#include <sstream>

namespace {

using namespace attendre;

struct Options {
  std::string model, text, file, decode;
  bool no_bos = false, parse_special = false, help = false;
};

const char* kHelp = R"(usage: attendre-tokenize --model FILE.gguf (--text STR | --file PATH) [--no-bos] [--parse-special]
       attendre-tokenize --model FILE.gguf --decode "1 2 3"

Tokenizes text with the tokenizer a GGUF file names (a model or a vocabulary-only file).

  --model FILE.gguf   the GGUF file whose tokenizer.ggml.* keys define the tokenizer
  --text STR          the text to tokenize (UTF-8)
  --file PATH         the text to tokenize, read from a file (bytes as they are)
  --no-bos            do not add BOS, even when the vocabulary asks for it
  --parse-special     control tokens written in the text ("<s>") become their ids
  --decode "IDS"      prints the text of token ids separated by spaces instead
  --help, -h          this text

output: the ids as a JSON array on one line, e.g. [1, 15043, 3186]; with --decode, the text.
exit status: 0 success; 1 unreadable or malformed file, invalid text or id; 2 command-line error.
)";

std::vector<uint32_t> parse_ids(const std::string& text) {
  std::vector<uint32_t> ids;
  std::istringstream words(text);
  for (std::string word; words >> word;) ids.push_back(cli::parse_count("--decode", word, false));
  return ids;
}

int run(std::span<const std::string> args) {
  Options o;
  const cli::OptionTable table = {
      {"--model", cli::path_option(o.model)},
      {"--text", cli::text_option(o.text)},
      {"--file", cli::path_option(o.file)},
      {"--decode", cli::text_option(o.decode)},
      {"--no-bos", cli::switch_option(o.no_bos, true)},
      {"--parse-special", cli::switch_option(o.parse_special, true)},
      {"--help", cli::switch_option(o.help, true)},
  };
  const std::set<std::string> seen = cli::parse_options(table, args);
  if (o.help) {
    std::cout << kHelp;
    return 0;
  }
  if (!seen.count("--model")) cli::usage("missing required option --model");
  const int inputs = static_cast<int>(seen.count("--text") + seen.count("--file") + seen.count("--decode"));
  if (inputs != 1) cli::usage("give exactly one of --text, --file and --decode");
  if (seen.count("--decode") && (o.no_bos || o.parse_special))
    cli::usage("--no-bos and --parse-special apply to tokenizing, not to --decode");

  const Tokenizer tokenizer = Tokenizer::open(o.model).value_or_throw();
  if (seen.count("--decode")) {
    std::cout << tokenizer.decode(parse_ids(o.decode)).value_or_throw() << std::endl;
    return 0;
  }
  Tokenizer::EncodeOptions options;
  if (o.no_bos) options.add_bos = false;
  options.parse_special = o.parse_special;
  const std::vector<uint32_t> ids = tokenizer.encode(seen.count("--file") ? cli::read_text_file("--file", o.file) : o.text, options).value_or_throw();
  std::string line = "[";
  for (size_t i = 0; i < ids.size(); ++i) line += (i ? ", " : "") + std::to_string(ids[i]);
  std::cout << line << "]" << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_main("attendre-tokenize", argc, argv, run); }
