// attendre-make-model: writes a llama-architecture GGUF of a named shape
// (--shape smollm-135m) or of given dims, with seeded random weights in one
// encoding, and a tokenizer taken from a vocabulary GGUF (--vocab). Speed
// depends on the shape, not on the weights, so such a file times a real
// model's shape on attendre and on llama.cpp alike (README, "Against
// llama.cpp on this machine"). Exit status: 0 success, 1 unreadable
// vocabulary or unwritable output, 2 command-line error. The output appears
// only when complete (output_files.hpp).
#include "arguments.hpp"
#include "human_bytes.hpp"
#include "output_files.hpp"

#include "gguf/quant.hpp"
#include "model/random_llama.hpp"

#include <fstream>
#include <iostream>

namespace {

using namespace attendre;
using gguf::TensorType;

struct Options {
  std::string output, shape, type = "f16", vocab, name = "attendre random llama";
  uint32_t hidden = 0, blocks = 0, heads = 0, heads_kv = 0, ffn = 0, context = 0;
  uint64_t seed = 1;
  bool untied_head = false, help = false;
};

const char* kHelp = R"(usage: attendre-make-model --output FILE.gguf (--shape NAME | --hidden N --blocks N --heads N --ffn N)
                           [--heads-kv N] [--context N] [--untied-head] [--type TYPE] [--vocab FILE.gguf]
                           [--seed N] [--name TEXT]

Writes a llama-architecture GGUF model with seeded random weights, laid out as
llama.cpp's converters write one, so that attendre-generate, attendre-perplexity
and llama.cpp all load it. Speed depends on a model's shape, not on its weights:
the file times a real model's shape without the real model.

  --output FILE.gguf  the file to write (replaced only once the whole file is written)
  --shape NAME        a known shape: smollm-135m (hidden 576, 30 blocks, heads 9 / 3 KV,
                      FFN 1536, context 2048, LM head tied to the embeddings);
                      the dims below override its values
  --hidden N          embedding width (a multiple of --heads, heads of an even width)
  --blocks N          transformer blocks
  --heads N           query heads
  --heads-kv N        key/value heads, dividing --heads (default: --heads)
  --ffn N             SwiGLU inner width
  --context N         llama.context_length (default 2048, at most 2147483648)
  --untied-head       write output.weight (else the LM head is token_embd.weight)
  --type TYPE         encoding of the 2-D tensors: f32, f16 (default), bf16, q8_0, q4_0,
                      q4_1, q5_0, q5_1, q4_k, q5_k, q6_k (block types need rows that split
                      into their 32- or 256-value blocks); norms are always F32
  --vocab FILE.gguf   copy every tokenizer.* key from this GGUF (a vocabulary-only file
                      such as llama.cpp's ggml-vocab-gpt-2.gguf, or a model); default: a
                      byte-level BPE vocabulary of 257 tokens (256 bytes, <|endoftext|>)
  --seed N            seed of the weights (default 1): same seed, same file
  --name TEXT         general.name (default "attendre random llama")
  --help, -h          this text

output: one line on stdout naming the file, its shape, parameters and bytes.
exit status: 0 success; 1 unreadable vocabulary file or unwritable output; 2 command-line error.
)";

TensorType parse_type(const std::string& text) {
  for (TensorType type : {TensorType::f32, TensorType::f16, TensorType::bf16, TensorType::q8_0, TensorType::q4_0,
                          TensorType::q4_1, TensorType::q5_0, TensorType::q5_1, TensorType::q4_k, TensorType::q5_k,
                          TensorType::q6_k}) {
    std::string name = gguf::to_string(type);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (name == text && gguf::has_reference_codec(type)) return type;
  }
  cli::usage("--type: unknown encoding '" + text + "' (expected f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q4_k, q5_k or q6_k)");
}

gguf::RandomLlamaShape parse_shape(const Options& o, const std::set<std::string>& seen) {
  gguf::RandomLlamaShape s;
  if (seen.count("--shape")) {
    const auto named = gguf::named_llama_shape(o.shape);
    if (!named) cli::usage("--shape: unknown shape '" + o.shape + "' (known: " + gguf::kLlamaShapeNames + ")");
    s = *named;
  } else {
    for (const char* flag : {"--hidden", "--blocks", "--heads", "--ffn"})
      if (!seen.count(flag)) cli::usage(std::string("missing ") + flag + " (give it, or --shape)");
    s.heads_kv = o.heads;
  }
  const std::pair<const char*, uint32_t gguf::RandomLlamaShape::*> dims[] = {
      {"--hidden", &gguf::RandomLlamaShape::hidden},     {"--blocks", &gguf::RandomLlamaShape::blocks},
      {"--heads", &gguf::RandomLlamaShape::heads},       {"--heads-kv", &gguf::RandomLlamaShape::heads_kv},
      {"--ffn", &gguf::RandomLlamaShape::ffn},           {"--context", &gguf::RandomLlamaShape::context}};
  const uint32_t given[] = {o.hidden, o.blocks, o.heads, o.heads_kv, o.ffn, o.context};
  for (size_t i = 0; i < std::size(dims); ++i)
    if (seen.count(dims[i].first)) s.*dims[i].second = given[i];
  if (o.untied_head) s.tied_head = false;
  return s;
}

int run(std::span<const std::string> args) {
  Options o;
  const auto u64_option = [](uint64_t& target) {
    return cli::Option{true, false, [&target](const std::string& flag, const std::string& value) { target = cli::parse_u64(flag, value); }};
  };
  const cli::OptionTable table = {
      {"--output", cli::path_option(o.output)},
      {"--shape", cli::text_option(o.shape)},
      {"--hidden", cli::count_option(o.hidden, true)},
      {"--blocks", cli::count_option(o.blocks, true)},
      {"--heads", cli::count_option(o.heads, true)},
      {"--heads-kv", cli::count_option(o.heads_kv, true)},
      {"--ffn", cli::count_option(o.ffn, true)},
      {"--context", cli::count_option(o.context, true)},
      {"--untied-head", cli::switch_option(o.untied_head, true)},
      {"--type", cli::text_option(o.type)},
      {"--vocab", cli::path_option(o.vocab)},
      {"--seed", u64_option(o.seed)},
      {"--name", cli::text_option(o.name)},
      {"--help", cli::switch_option(o.help, true)},
  };
  const std::set<std::string> seen = cli::parse_options(table, args);
  if (o.help) {
    std::cout << kHelp;
    return 0;
  }
  if (!seen.count("--output")) cli::usage("missing required option --output");
  gguf::RandomLlamaOptions options;
  options.shape = parse_shape(o, seen);
  options.weights = parse_type(o.type);
  options.seed = o.seed;
  options.name = o.name;
  std::optional<gguf::File> vocabulary;
  if (seen.count("--vocab")) {
    vocabulary.emplace(gguf::File::open(o.vocab).value_or_throw());
    options.vocabulary = &*vocabulary;
  }

  // Staged first, so that an unwritable place fails before the work.
  cli::OutputFiles outputs;
  const std::filesystem::path staging = outputs.stage("--output", o.output);
  Result<gguf::Writer> writer = gguf::random_llama(options);
  if (!writer.ok() && writer.status().code() == ErrorCode::invalid_argument) cli::usage(writer.status().message());
  const std::vector<std::byte> bytes = std::move(writer).value_or_throw().bytes().value_or_throw();
  {
    std::ofstream out(staging, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    out.flush();
    if (!out) throw Error(ErrorCode::io_error, "--output " + o.output + ": cannot write " + staging.string());
  }
  outputs.commit();

  // Read back: the line reports what the file says, not what was meant.
  const gguf::File file = gguf::File::open(o.output).value_or_throw();
  uint64_t parameters = 0;
  for (const gguf::TensorInfo& t : file.tensors()) parameters += t.elements();
  const gguf::RandomLlamaShape& s = options.shape;
  std::cout << o.output << ": llama, " << s.blocks << " blocks, hidden " << s.hidden << ", heads " << s.heads << "/"
            << s.heads_kv << ", FFN " << s.ffn << ", vocab " << file.get_strings("tokenizer.ggml.tokens").value_or_throw().size() << ", "
            << gguf::to_string(options.weights) << (s.tied_head ? ", tied head, " : ", untied head, ") << parameters
            << " parameters, " << apps::human_bytes(file.size()) << std::endl;
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return cli::run_main("attendre-make-model", argc, argv, run); }
