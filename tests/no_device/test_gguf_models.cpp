// The reader and the reference codecs against real files nobody on the
// project wrote (../shared/models, see its README.md): every file opens and
// reads whole; the llama models' metadata and per-tensor types are as
// described; the F16, Q8_0 and Q4_0 files, quantized by llama.cpp from the
// F32 file, dequantize to it within each type's bound, and our quantizers
// reproduce their blocks byte for byte.
#include "gguf_test_support.hpp"
#include "gguf/quant.hpp"

#include <cmath>
#include <cstring>
#include <map>

namespace gguf = attendre::gguf;
using gguf::TensorType;
using gguf::ValueType;

namespace {

// Decodes every value, every array element included; returns how many.
uint64_t touch(const gguf::Value& value) {
  switch (value.type().value_or_throw()) {
    case ValueType::array: {
      uint64_t count = 1;
      for (uint64_t i = 0; i < value.size().value_or_throw(); ++i) count += touch(value.at(i).value_or_throw());
      return count;
    }
    case ValueType::string: (void)value.as_string("string").value_or_throw(); break;
    case ValueType::boolean: (void)value.as_bool("bool").value_or_throw(); break;
    case ValueType::f32: case ValueType::f64: (void)value.as_f64("float").value_or_throw(); break;
    case ValueType::i8: case ValueType::i16: case ValueType::i32: case ValueType::i64: (void)value.as_i64("int").value_or_throw(); break;
    default: (void)value.as_u64("uint").value_or_throw(); break;
  }
  return 1;
}

std::vector<double> f32_tensor(const gguf::File& file, const std::string& name) {
  const gguf::TensorInfo* info = file.find_tensor(name);
  REQUIRE_MESSAGE(info, name);
  REQUIRE(info->type == TensorType::f32);
  return gguf::dequantize(TensorType::f32, file.data(*info).value_or_throw()).value_or_throw();
}

// The type llama-quantize gave each tensor of the aidreams260K files: norms
// stay F32; ffn_down's rows of 172 fit no 32-block, so they fall back to F16;
// the Q4_0 file keeps output.weight in Q8_0.
TensorType expected_type(const std::string& file, const std::string& tensor) {
  if (file == "aidreams260K.gguf" || tensor.find("_norm.") != std::string::npos) return TensorType::f32;
  if (file == "aidreams260K-F16.gguf" || tensor.find("ffn_down") != std::string::npos) return TensorType::f16;
  if (file == "aidreams260K-Q4_0.gguf" && tensor != "output.weight") return TensorType::q4_0;
  return TensorType::q8_0;
}

// The largest error a tensor of `type` may have at value x, in a block of 32
// whose largest magnitude is `amax`, given how llama.cpp quantizes:
//   F16:  round to nearest: half an ulp, 2^-11 relative (2^-25 absolute below the normals);
//   Q8_0: d = amax / 127, levels rounded (d / 2) plus the fp16 rounding of d times 127;
//   Q4_0: d = extreme / -8, levels rounded, except that the extreme's opposite
//         clamps to level 15, one whole step (d = amax / 8) off; plus fp16 of d times 8.
double error_bound(TensorType type, double x, double amax) {
  switch (type) {
    case TensorType::f32: return 0;
    case TensorType::f16: return std::fabs(x) * 0x1p-11 + 0x1p-25;
    case TensorType::q8_0: return amax * (0.5 / 127 + 0x1p-11) * 1.001;
    case TensorType::q4_0: return amax * (1.0 / 8 + 0x1p-11) * 1.001;
    default: FAIL("no bound for " << gguf::to_string(type)); return 0;
  }
}

const char* const kModelFiles[] = {"aidreams260K.gguf", "aidreams260K-F16.gguf", "aidreams260K-Q8_0.gguf",
                                   "aidreams260K-Q4_0.gguf"};

}  // namespace

TEST_CASE("gguf real files: every shared .gguf opens and reads whole") {
  const auto models = attendre::test::shared_models();
  if (!models) return;
  int files = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(*models)) {
    if (entry.path().extension() != ".gguf") continue;
    CAPTURE(entry.path().string());
    const gguf::File file = gguf::File::open(entry.path()).value_or_throw();
    ++files;
    CHECK(file.version() == 3);
    uint64_t values = 0;
    for (const std::string& key : file.keys()) values += touch(file.get(key).value_or_throw());
    CHECK(values >= file.keys().size());
    // The vocabulary decodes whole, as a tokenizer reads it, and agrees with at().
    const auto tokens = file.get_strings("tokenizer.ggml.tokens").value_or_throw();
    CHECK(tokens.size() == file.get("tokenizer.ggml.tokens").value_or_throw().size().value_or_throw());
    CHECK(tokens.back() == file.get("tokenizer.ggml.tokens").value_or_throw().at(tokens.size() - 1).value_or_throw().as_string("tokens").value_or_throw());
    CHECK(file.get_i32s("tokenizer.ggml.token_type").value_or_throw().size() == tokens.size());
    if (file.find("tokenizer.ggml.scores")) CHECK(file.get_f32s("tokenizer.ggml.scores").value_or_throw().size() == tokens.size());
    uint64_t bytes = 0;
    for (const gguf::TensorInfo& tensor : file.tensors()) bytes += file.data(tensor).value_or_throw().size();
    CHECK(bytes <= file.size());
    if (!file.tensors().empty()) CHECK(file.data_offset() + bytes <= file.size());
  }
  CHECK(files == 18);
}

TEST_CASE("gguf real files: vocabulary files carry their tokenizer's keys") {
  const auto models = attendre::test::shared_models();
  if (!models) return;
  struct Expected {
    const char* file;
    const char* model;
    const char* pre;  // tokenizer.ggml.pre, "" when absent
    uint64_t tokens;
  };
  const Expected expected[] = {
      {"ggml-vocab-llama-spm.gguf", "llama", "default", 32000},  {"ggml-vocab-llama-bpe.gguf", "gpt2", "llama-bpe", 128256},
      {"ggml-vocab-qwen2.gguf", "gpt2", "qwen2", 151936},        {"ggml-vocab-baichuan.gguf", "llama", "", 64000},
      {"ggml-vocab-nomic-bert-moe.gguf", "t5", "default", 250048}, {"ggml-vocab-gpt-2.gguf", "gpt2", "gpt-2", 50257},
  };
  for (const Expected& e : expected) {
    CAPTURE(e.file);
    const gguf::File file = gguf::File::open(*models / "vocab" / e.file).value_or_throw();
    CHECK(file.get_string("tokenizer.ggml.model").value_or_throw() == e.model);
    CHECK(file.get_string("tokenizer.ggml.pre", "").value_or_throw() == e.pre);
    CHECK(file.get("tokenizer.ggml.tokens").value_or_throw().size().value_or_throw() == e.tokens);
    CHECK(file.tensors().empty());
  }
  const gguf::File bpe = gguf::File::open(*models / "vocab" / "ggml-vocab-llama-bpe.gguf").value_or_throw();
  CHECK(bpe.get_strings("tokenizer.ggml.merges").value_or_throw().size() == 280147);
  CHECK(bpe.get_f64("llama.rope.freq_base").value_or_throw() == 500000.0);
  CHECK(bpe.get_u64("llama.attention.head_count_kv").value_or_throw() == 8);
  const gguf::File nomic = gguf::File::open(*models / "vocab" / "ggml-vocab-nomic-bert-moe.gguf").value_or_throw();
  const gguf::Value charsmap = nomic.get("tokenizer.ggml.precompiled_charsmap").value_or_throw();
  CHECK(charsmap.element_type().value_or_throw() == ValueType::u8);
  CHECK(charsmap.size().value_or_throw() == 237539);
  CHECK_FALSE(nomic.get_bool("nomic-bert-moe.attention.causal").value_or_throw());
  CHECK(nomic.get_u64("tokenizer.ggml.mask_token_id").value_or_throw() == 250001);
}

TEST_CASE("gguf real files: the llama models' hyperparameters and tensor infos") {
  const auto models = attendre::test::shared_models();
  if (!models) return;
  for (const char* name : kModelFiles) {
    CAPTURE(name);
    const gguf::File file = gguf::File::open(*models / name).value_or_throw();
    CHECK(file.get_string("general.architecture").value_or_throw() == "llama");
    CHECK(file.get_u64("llama.embedding_length").value_or_throw() == 64);
    CHECK(file.get_u64("llama.block_count").value_or_throw() == 4);
    CHECK(file.get_u64("llama.attention.head_count").value_or_throw() == 4);
    CHECK(file.get_u64("llama.attention.head_count_kv").value_or_throw() == 4);
    CHECK(file.get_u64("llama.feed_forward_length").value_or_throw() == 172);
    CHECK(file.get_u64("llama.context_length").value_or_throw() == 128);
    CHECK(file.get_u64("llama.rope.dimension_count").value_or_throw() == 16);
    CHECK_FALSE(file.find("llama.rope.freq_base"));  // absent: loaders use 10000
    CHECK(file.get_f64("llama.rope.freq_base", 10000.0).value_or_throw() == 10000.0);
    CHECK(file.get_f64("llama.attention.layer_norm_rms_epsilon").value_or_throw() == doctest::Approx(1e-5).epsilon(1e-6));
    CHECK(file.get_string("tokenizer.ggml.model").value_or_throw() == "llama");
    const auto tokens = file.get_strings("tokenizer.ggml.tokens").value_or_throw();
    REQUIRE(tokens.size() == 512);
    CHECK(tokens[0] == "<unk>");
    CHECK(tokens[1] == "<s>");
    CHECK(tokens[2] == "</s>");
    CHECK(file.get_u64("tokenizer.ggml.bos_token_id").value_or_throw() == 1);
    CHECK(file.get_u64("tokenizer.ggml.eos_token_id").value_or_throw() == 2);
    // The converter's misspelling, as found in the file.
    CHECK(file.get_u64("tokenizer.ggml.seperator_token_id").value_or_throw() == 4294967295u);

    REQUIRE(file.tensors().size() == 39);
    std::map<std::string, std::vector<uint64_t>> dims;
    for (const gguf::TensorInfo& t : file.tensors()) {
      CAPTURE(t.name);
      dims[t.name] = t.dims;
      CHECK(t.type == expected_type(name, t.name));
      CHECK(t.offset % file.alignment() == 0);
    }
    CHECK(dims["token_embd.weight"] == std::vector<uint64_t>{64, 512});
    CHECK(dims["output.weight"] == std::vector<uint64_t>{64, 512});
    CHECK(dims["output_norm.weight"] == std::vector<uint64_t>{64});
    for (int block = 0; block < 4; ++block) {
      const std::string prefix = "blk." + std::to_string(block) + ".";
      for (const char* square : {"attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight"})
        CHECK(dims[prefix + square] == std::vector<uint64_t>{64, 64});
      CHECK(dims[prefix + "ffn_gate.weight"] == std::vector<uint64_t>{64, 172});
      CHECK(dims[prefix + "ffn_up.weight"] == std::vector<uint64_t>{64, 172});
      CHECK(dims[prefix + "ffn_down.weight"] == std::vector<uint64_t>{172, 64});
      CHECK(dims[prefix + "attn_norm.weight"] == std::vector<uint64_t>{64});
      CHECK(dims[prefix + "ffn_norm.weight"] == std::vector<uint64_t>{64});
    }
  }

  const gguf::File stories = gguf::File::open(*models / "stories260K.gguf").value_or_throw();
  CHECK(stories.get_u64("llama.block_count").value_or_throw() == 5);
  CHECK(stories.get_u64("llama.attention.head_count").value_or_throw() == 8);
  CHECK(stories.get_u64("llama.attention.head_count_kv").value_or_throw() == 4);
  CHECK(stories.get_u64("llama.context_length").value_or_throw() == 2048);
  CHECK(stories.get_u64("llama.rope.dimension_count").value_or_throw() == 8);
  CHECK(stories.tensors().size() == 48);
  REQUIRE(stories.find_tensor("blk.4.attn_k.weight"));
  CHECK(stories.find_tensor("blk.4.attn_k.weight")->dims == std::vector<uint64_t>{64, 32});  // GQA: 4 KV heads of 8
}

TEST_CASE("gguf real files: F16, Q8_0 and Q4_0 tensors dequantize to the F32 file's within their bounds") {
  const auto models = attendre::test::shared_models();
  if (!models) return;
  const gguf::File reference = gguf::File::open(*models / "aidreams260K.gguf").value_or_throw();
  std::map<TensorType, int> tensors_checked;
  for (const char* name : kModelFiles) {
    const gguf::File file = gguf::File::open(*models / name).value_or_throw();
    for (const gguf::TensorInfo& t : file.tensors()) {
      CAPTURE(name);
      CAPTURE(t.name);
      const std::vector<double> exact = f32_tensor(reference, t.name);
      const std::vector<double> decoded = gguf::dequantize(t.type, file.data(t).value_or_throw()).value_or_throw();
      REQUIRE(decoded.size() == exact.size());
      REQUIRE(exact.size() % 32 == 0);
      double worst = 0;  // the largest error as a fraction of its bound
      for (size_t b = 0; b < exact.size(); b += 32) {
        double amax = 0;
        for (size_t i = b; i < b + 32; ++i) amax = std::max(amax, std::fabs(exact[i]));
        for (size_t i = b; i < b + 32; ++i) {
          const double error = std::fabs(decoded[i] - exact[i]), bound = error_bound(t.type, exact[i], amax);
          if (error > bound) FAIL("value " << i << ": " << decoded[i] << " vs " << exact[i] << ", bound " << bound);
          if (bound > 0) worst = std::max(worst, error / bound);
        }
      }
      // A quantized tensor whose errors are all far below the bound would mean
      // the bound proves little; Q4_0's clamped extremes use most of theirs.
      if (t.type == TensorType::q4_0) CHECK(worst > 0.5);
      ++tensors_checked[t.type];
    }
  }
  // 39 tensors per file, 9 of them norms; the 4 ffn_down are F16 in all three
  // quantized files, and the Q4_0 file keeps output.weight in Q8_0.
  CHECK(tensors_checked[TensorType::f16] == 30 + 4 + 4);
  CHECK(tensors_checked[TensorType::q8_0] == 26 + 1);
  CHECK(tensors_checked[TensorType::q4_0] == 25);
}

TEST_CASE("gguf real files: our F16, Q8_0 and Q4_0 quantizers reproduce llama-quantize's blocks") {
  const auto models = attendre::test::shared_models();
  if (!models) return;
  const gguf::File reference = gguf::File::open(*models / "aidreams260K.gguf").value_or_throw();
  int compared = 0;
  for (const char* name : kModelFiles) {
    const gguf::File file = gguf::File::open(*models / name).value_or_throw();
    for (const gguf::TensorInfo& t : file.tensors()) {
      if (t.type == TensorType::f32) continue;
      CAPTURE(name);
      CAPTURE(t.name);
      const gguf::TensorInfo* source = reference.find_tensor(t.name);
      REQUIRE(source);
      const auto f32 = reference.data(*source).value_or_throw();
      std::vector<float> values(f32.size() / 4);
      std::memcpy(values.data(), f32.data(), f32.size());
      const std::vector<std::byte> ours = gguf::quantize(t.type, values).value_or_throw();
      const auto theirs = file.data(t).value_or_throw();
      REQUIRE(ours.size() == theirs.size());
      size_t differing = 0;
      for (size_t i = 0; i < ours.size(); ++i) differing += ours[i] != theirs[i];
      CHECK_MESSAGE(differing == 0, differing << " of " << ours.size() << " bytes differ");
      ++compared;
    }
  }
  CHECK(compared == 38 + 27 + 25);
}
