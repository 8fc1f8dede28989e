// Fuzz target: the GGUF reader on arbitrary bytes, parsed from memory. Every
// input is either refused with a one-line malformed_input naming the file, or
// opened into a File whose every metadata value (each array element, nested
// ones included) decodes with its own type's accessor, whose strings and
// tensor spans lie inside the input, and whose tensors are aligned and back to
// back in info order.
// Tensors of a type with a reference codec are dequantized too. Nothing else
// (a crash, an over-read, another exception, a hang) is acceptable.
#include "fuzz_check.hpp"

#include "gguf/gguf.hpp"
#include "model/gguf_architecture.hpp"
#include "gguf/quant.hpp"

#include <span>
#include <string>
#include <vector>

namespace {

using namespace attendre;
using gguf::ValueType;

struct Input {
  const std::byte* begin;
  const std::byte* end;
  bool contains(const void* data, size_t size) const {
    const auto* p = static_cast<const std::byte*>(data);
    return p >= begin && p <= end && size <= static_cast<size_t>(end - p);
  }
};

void touch(const gguf::Value& value, const Input& input) {
  switch (value.type().value_or_throw()) {
    case ValueType::array: {
      const uint64_t size = value.size().value_or_throw();
      for (uint64_t i = 0; i < size; ++i) {
        const gguf::Value element = value.at(i).value_or_throw();
        fuzz::check(element.type().value_or_throw() == value.element_type().value_or_throw(),
                    "an element has its array's element type");
        touch(element, input);
      }
      const Result<gguf::Value> past = value.at(size);
      fuzz::check(!past.ok(), "at(size()) fails");
      fuzz::check(past.status().code() == ErrorCode::invalid_argument, "at(size()) is invalid_argument",
                  past.status().message());
      return;
    }
    case ValueType::string: {
      const std::string_view text = value.as_string("fuzz").value_or_throw();
      fuzz::check(text.empty() || input.contains(text.data(), text.size()), "strings lie inside the input");
      return;
    }
    case ValueType::boolean: (void)value.as_bool("fuzz").value_or_throw(); return;
    case ValueType::f32: case ValueType::f64: (void)value.as_f64("fuzz").value_or_throw(); return;
    case ValueType::i8: case ValueType::i16: case ValueType::i32: case ValueType::i64: (void)value.as_i64("fuzz").value_or_throw(); return;
    default: (void)value.as_u64("fuzz").value_or_throw(); return;
  }
}

void check_file(const gguf::File& file, const Input& input) {
  for (const std::string& key : file.keys()) {
    const gguf::Value value = file.get(key).value_or_throw();
    touch(value, input);
    if (value.type().value_or_throw() != ValueType::array) continue;
    const uint64_t size = value.size().value_or_throw();
    // The whole-array accessors agree with at().
    if (value.element_type().value_or_throw() == ValueType::string)
      fuzz::check(file.get_strings(key).value_or_throw().size() == size, "get_strings has every element");
    if (value.element_type().value_or_throw() == ValueType::f32)
      fuzz::check(file.get_f32s(key).value_or_throw().size() == size, "get_f32s has every element");
    if (value.element_type().value_or_throw() == ValueType::i32)
      fuzz::check(file.get_i32s(key).value_or_throw().size() == size, "get_i32s has every element");
  }
  uint64_t next = 0;  // where the next tensor's data must start: the padded end of the one before
  for (const gguf::TensorInfo& tensor : file.tensors()) {
    const auto data = file.data(tensor).value_or_throw();
    fuzz::check(data.size() == tensor.bytes && input.contains(data.data(), data.size()),
                "tensor data lie inside the input", tensor.name);
    fuzz::check(tensor.offset % file.alignment() == 0 && file.data_offset() % file.alignment() == 0,
                "tensor data are aligned", tensor.name);
    fuzz::check(tensor.dims.size() <= gguf::kMaxDims, "at most 4 dims", tensor.name);
    fuzz::check(tensor.offset == next, "tensors lie back to back in info order, each padded to the alignment",
                tensor.name);
    next = (tensor.offset + tensor.bytes + file.alignment() - 1) / file.alignment() * file.alignment();
    unsigned sum = 0;  // every byte read, so that the sanitizers see any over-read
    for (const std::byte b : data) sum += static_cast<unsigned>(b);
    (void)sum;
    constexpr uint64_t kMaxDecoded = 1 << 16;  // keeps each input fast
    if (gguf::has_reference_codec(tensor.type) && tensor.elements() <= kMaxDecoded) {
      const std::vector<double> values = gguf::dequantize(tensor.type, data).value_or_throw();
      fuzz::check(values.size() == tensor.elements(), "dequantize gives every element", tensor.name);
    }
  }
}

// A model read from the file's metadata: described, or refused in one line
// naming the file, as missing or inconsistent (malformed_input) or as
// something the stack does not run (unsupported).
void check_model(const gguf::File& file) {
  try {
    const gguf::ModelDescription model = gguf::describe_model(file, WeightType::f32).value_or_throw();
    fuzz::check(model.stack.blocks.size() == model.info.blocks, "a block per block_count");
  } catch (const Error& e) {
    const std::string message = e.what();
    fuzz::check(e.code() == ErrorCode::malformed_input || e.code() == ErrorCode::unsupported,
                "models are refused as malformed or unsupported", message);
    fuzz::check(message.rfind("fuzz.gguf: ", 0) == 0, "model rejections name the file", message);
    fuzz::check_one_line(message);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  const Input input{bytes.data(), bytes.data() + bytes.size()};
  try {
    const gguf::File file = gguf::File::parse(bytes, "fuzz.gguf").value_or_throw();
    check_file(file, input);
    check_model(file);
  } catch (const Error& e) {
    const std::string message = e.what();
    fuzz::check(e.code() == ErrorCode::malformed_input, "rejections are malformed_input", message);
    fuzz::check(message.rfind("fuzz.gguf: ", 0) == 0, "rejections name the file", message);
    fuzz::check_one_line(message);
  }
  return 0;
}
