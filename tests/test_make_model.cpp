// attendre-make-model as a user runs it: small random llamas it writes load
// with the library, hold RandomWeights' values in the chosen encoding, and
// run on the GPU as the float64 reference does; --vocab carries a real
// tokenizer over; every bad argument is a one-line error, a non-zero exit
// and no output file.
#if defined(ATTENDRE_MAKE_MODEL_BINARY)

#include "no_device/gguf_test_support.hpp"
#include "model_checks.hpp"
#include "stack_support.hpp"
#include "support.hpp"

#include "gguf/quant.hpp"
#include <attendre/gpu_stack.hpp>
#include <attendre/tokenizer.hpp>

using namespace attendre;
namespace fs = std::filesystem;

namespace {

std::string quoted(const fs::path& p) {
  std::string text = "'";
  text += p.string();
  text += "'";
  return text;
}

std::string upper(std::string text) {
  for (char& c : text) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return text;
}

// A small shape whose rows split into 32-value blocks: llama.cpp's SmolLM
// layout at a test's size (GQA 2:1, tied head).
const std::string kSmall = "--hidden 64 --blocks 2 --heads 4 --heads-kv 2 --ffn 96 --context 64";

test::ToolStreams make(const std::string& args) { return test::run_tool_streams(ATTENDRE_MAKE_MODEL_BINARY, args); }


// The GPU's logits of `prompt`, then of three decode steps, against the
// float64 reference's, relative to the row's scale (as test_models.cpp).
void check_gpu_equals_reference(Model& model, std::span<const uint32_t> prompt) {
  const StackConfig config = model.stack_config(test::bounded_plan()).value_or_throw();
  const auto device = gpu::Stack::create(test::gpu(), config, model.weights()).value_or_throw();
  reference::Stack cpu(config, model.weights());
  const auto check = [](const std::vector<float>& actual, const std::vector<float>& expected) {
    REQUIRE(actual.size() == expected.size());
    double scale = 1.0;
    for (float x : expected) scale = std::max(scale, std::fabs(static_cast<double>(x)));
    CHECK(test::max_difference(actual, expected) <= 2e-4 * scale);
  };
  check(test::stack_logits(*device, prompt), test::stack_logits(cpu, prompt));
  StackRequest request;
  request.hidden = false;
  request.logits = true;
  for (uint32_t t = 0; t < 3; ++t) {
    const test::OnePosition one{prompt[t], static_cast<int64_t>(prompt.size() + t)};
    check(device->decode(one.chunk(), request).value_or_throw().logits, cpu.decode(one.chunk(), request).value_or_throw().logits);
  }
}

// One line on stderr naming the problem, nothing on stdout, and nothing at
// `output` nor a staging file beside it.
void check_refused(const std::string& args, int code, const std::string& needle, const fs::path& output) {
  INFO(args);
  const test::ToolStreams r = make(args);
  INFO(r.err);
  CHECK(r.code == code);
  CHECK(r.out.empty());
  CHECK(r.err.rfind("attendre-make-model: ", 0) == 0);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find(needle) != std::string::npos);
  CHECK_FALSE(fs::exists(output));
  if (fs::is_directory(output.parent_path()))
    for (const auto& entry : fs::directory_iterator(output.parent_path()))
      CHECK(entry.path().filename().string().rfind(output.filename().string(), 0) != 0);
}

}  // namespace

TEST_CASE("attendre-make-model: a small random llama loads, holds the seeded weights and runs on the GPU as the float64 reference") {
  test::GgufTempDir dir;
  for (const char* type : {"f16", "q8_0", "f32"}) {
    INFO(std::string(type));
    const fs::path path = dir.path / (std::string(type) + ".gguf");
    const test::ToolStreams r = make(kSmall + " --type " + type + " --seed 7 --output " + quoted(path));
    INFO(r.err);
    REQUIRE(r.code == 0);
    CHECK(r.err.empty());
    CHECK(r.out.find("2 blocks, hidden 64, heads 4/2, FFN 96, vocab 257") != std::string::npos);

    Model model = Model::open(path).value_or_throw();
    CHECK(model.info().architecture == "llama");
    CHECK(model.info().blocks == 2);
    CHECK(model.info().context_length == 64);
    const StackConfig config = model.stack_config(test::bounded_plan()).value_or_throw();
    CHECK(config.tied_embeddings);
    CHECK(config.vocab == 257);
    CHECK(config.blocks[0].attention.shape.heads_kv == 2);

    // The tensors are RandomWeights' values through the type's quantizer.
    const gguf::File file = gguf::File::open(path).value_or_throw();
    const std::vector<uint64_t> shape = {64, 64};
    const std::vector<float> expected = RandomWeights(7).values("blk.1.attn_q.weight", shape);
    const gguf::TensorInfo* q = file.find_tensor("blk.1.attn_q.weight");
    REQUIRE(q != nullptr);
    CHECK(gguf::to_string(q->type) == upper(type));
    const std::span<const std::byte> data = file.data(*q).value_or_throw();
    CHECK(std::vector<std::byte>(data.begin(), data.end()) == gguf::quantize(q->type, expected).value_or_throw());
    CHECK(file.find_tensor("blk.0.attn_norm.weight")->type == gguf::TensorType::f32);

    const std::vector<uint32_t> prompt = model.tokenizer().encode("Once upon a time, the cat sat on the mat").value_or_throw();
    check_gpu_equals_reference(model, prompt);
  }
  // Same seed, same file; another seed, other weights.
  REQUIRE(make(kSmall + " --seed 7 --output " + quoted(dir.path / "again.gguf")).code == 0);
  CHECK(test::slurp(dir.path / "again.gguf") == test::slurp(dir.path / "f16.gguf"));
  REQUIRE(make(kSmall + " --seed 8 --output " + quoted(dir.path / "other.gguf")).code == 0);
  CHECK(test::slurp(dir.path / "other.gguf") != test::slurp(dir.path / "f16.gguf"));
  test::check_no_validation_messages(test::gpu());
}

TEST_CASE("attendre-make-model: --vocab copies a real tokenizer, --untied-head writes output.weight, --shape gives SmolLM-135M's keys") {
  test::GgufTempDir dir;
  const auto models = test::shared_models();
  if (models) {
    const fs::path vocab = *models / "vocab" / "ggml-vocab-gpt-2.gguf";
    const fs::path path = dir.path / "gpt2.gguf";
    const test::ToolStreams r = make("--hidden 32 --blocks 1 --heads 2 --ffn 64 --untied-head --type q8_0 --vocab " +
                                     quoted(vocab) + " --output " + quoted(path));
    INFO(r.err);
    REQUIRE(r.code == 0);
    Model model = Model::open(path).value_or_throw();
    const Tokenizer original = Tokenizer::open(vocab).value_or_throw();
    const std::string text = "Hello world, it's 2024!  \xc3\xa9t\xc3\xa9 <|endoftext|>";
    CHECK(model.tokenizer().encode(text).value_or_throw() == original.encode(text).value_or_throw());
    const gguf::File file = gguf::File::open(path).value_or_throw(), source = gguf::File::open(vocab).value_or_throw();
    CHECK(file.get_string("tokenizer.ggml.pre").value_or_throw() == source.get_string("tokenizer.ggml.pre").value_or_throw());
    CHECK(file.get_strings("tokenizer.ggml.merges").value_or_throw() == source.get_strings("tokenizer.ggml.merges").value_or_throw());
    CHECK(file.get_u64("llama.vocab_size").value_or_throw() == 50257);
    REQUIRE(file.find_tensor("output.weight") != nullptr);
    CHECK(file.find_tensor("output.weight")->dims == std::vector<uint64_t>{32, 50257});
    CHECK_FALSE(model.stack_config(test::bounded_plan()).value_or_throw().tied_embeddings);
    const std::vector<uint32_t> prompt = model.tokenizer().encode("Once upon a time, the cat").value_or_throw();
    check_gpu_equals_reference(model, prompt);
  }
  // The named shape's keys (written at one block: the dims a user leaves
  // alone come from the shape, the ones given override it).
  const fs::path path = dir.path / "smol.gguf";
  REQUIRE(make("--shape smollm-135m --blocks 1 --type q4_0 --output " + quoted(path)).code == 0);
  const gguf::File file = gguf::File::open(path).value_or_throw();
  CHECK(file.get_u64("llama.embedding_length").value_or_throw() == 576);
  CHECK(file.get_u64("llama.block_count").value_or_throw() == 1);
  CHECK(file.get_u64("llama.attention.head_count").value_or_throw() == 9);
  CHECK(file.get_u64("llama.attention.head_count_kv").value_or_throw() == 3);
  CHECK(file.get_u64("llama.feed_forward_length").value_or_throw() == 1536);
  CHECK(file.get_u64("llama.context_length").value_or_throw() == 2048);
  CHECK(file.get_u64("llama.rope.dimension_count").value_or_throw() == 64);
  CHECK(file.get_u64("general.file_type").value_or_throw() == 2);
  CHECK(file.find_tensor("output.weight") == nullptr);
  CHECK(file.find_tensor("blk.0.ffn_down.weight")->dims == std::vector<uint64_t>{1536, 576});
  CHECK(file.find_tensor("blk.0.attn_k.weight")->dims == std::vector<uint64_t>{576, 192});
  // The longest context written still opens (the loader's default memory holds it).
  const fs::path longest = dir.path / "long.gguf";
  REQUIRE(make(kSmall.substr(0, kSmall.find(" --context")) + " --context 2147483648 --output " + quoted(longest)).code == 0);
  CHECK(Model::open(longest).value_or_throw().info().context_length == 2147483648u);
}

TEST_CASE("attendre-make-model: bad arguments are one-line errors with no output file") {
  test::GgufTempDir dir;
  const fs::path out = dir.path / "m.gguf";
  const std::string to = " --output " + quoted(out);
  const test::ToolStreams help = make("--help");
  CHECK(help.code == 0);
  CHECK(help.out.rfind("usage: attendre-make-model --output FILE.gguf", 0) == 0);
  check_refused(kSmall + " --layers 3" + to, 2, "--layers", out);
  check_refused(kSmall, 2, "missing required option --output", out);
  check_refused("--hidden 64 --blocks 2 --heads 4" + to, 2, "missing --ffn", out);
  check_refused("--shape smollm-1b" + to, 2, "unknown shape 'smollm-1b' (known: smollm-135m)", out);
  check_refused(kSmall + " --type q9_9" + to, 2, "--type: unknown encoding 'q9_9'", out);
  check_refused("--hidden 0 --blocks 1 --heads 4 --ffn 64" + to, 2, "--hidden", out);
  check_refused("--hidden 64 --blocks 1 --heads 3 --ffn 64" + to, 2, "hidden 64 does not split into 3 heads", out);
  check_refused("--hidden 60 --blocks 1 --heads 4 --ffn 64" + to, 2, "heads of 15 values", out);
  check_refused("--hidden 64 --blocks 1 --heads 4 --heads-kv 3 --ffn 64" + to, 2,
                "heads 4 do not split into groups of heads-kv 3", out);
  check_refused(kSmall + " --blocks 3" + to, 2, "--blocks: given more than once", out);
  check_refused(kSmall + " --type q4_k" + to, 2, "rows of 64 values do not split into the 256-value blocks of Q4_K", out);
  check_refused("--shape smollm-135m --hidden 36864 --heads 576" + to, 2, "more than the 8589934592", out);
  check_refused(kSmall + " --seed -1" + to, 2, "--seed", out);
  check_refused(kSmall + " --context 4294967296" + to, 2, "--context", out);
  check_refused("--hidden 64 --blocks 1 --heads 4 --ffn 64 --context 2147483649" + to, 2,
                "context 2147483649 is past the 2147483648 positions", out);
  check_refused(kSmall + " --vocab " + quoted(dir.path / "absent.gguf") + to, 1, "absent.gguf", out);
  // A GGUF without a vocabulary.
  gguf::Writer empty = gguf::Writer::create().value_or_throw();
  empty.add("general.architecture", gguf::MetadataValue::string("llama")).or_throw();
  empty.write(dir.path / "novocab.gguf").or_throw();
  check_refused(kSmall + " --vocab " + quoted(dir.path / "novocab.gguf") + to, 1, "no tokenizer.ggml.tokens", out);
  check_refused(kSmall + " --output " + quoted(dir.path / "no" / "such" / "m.gguf"), 1, "--output", dir.path / "no" / "such" / "m.gguf");
}

#endif
