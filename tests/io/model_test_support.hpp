// Shared by the model tests: a GGUF file rewritten with edits (keys
// replaced, added or removed; tensors dropped or added), so that each
// malformed variant of a valid fixture differs from it in one place.
#pragma once

#include "gguf_test_support.hpp"

#include <algorithm>
#include <map>
#include <optional>

namespace attendre::test {

// The metadata value `value` holds, as a writer takes it (arrays nest).
inline gguf::MetadataValue copy_value(const gguf::Value& value) {
  using gguf::MetadataValue;
  using gguf::ValueType;
  const std::string_view key = "copy";
  switch (value.type().value_or_throw()) {
    case ValueType::u8: return MetadataValue::u8(static_cast<uint8_t>(value.as_u64(key).value_or_throw()));
    case ValueType::i8: return MetadataValue::i8(static_cast<int8_t>(value.as_i64(key).value_or_throw()));
    case ValueType::u16: return MetadataValue::u16(static_cast<uint16_t>(value.as_u64(key).value_or_throw()));
    case ValueType::i16: return MetadataValue::i16(static_cast<int16_t>(value.as_i64(key).value_or_throw()));
    case ValueType::u32: return MetadataValue::u32(static_cast<uint32_t>(value.as_u64(key).value_or_throw()));
    case ValueType::i32: return MetadataValue::i32(static_cast<int32_t>(value.as_i64(key).value_or_throw()));
    case ValueType::u64: return MetadataValue::u64(value.as_u64(key).value_or_throw());
    case ValueType::i64: return MetadataValue::i64(value.as_i64(key).value_or_throw());
    case ValueType::f32: return MetadataValue::f32(static_cast<float>(value.as_f64(key).value_or_throw()));
    case ValueType::f64: return MetadataValue::f64(value.as_f64(key).value_or_throw());
    case ValueType::boolean: return MetadataValue::boolean(value.as_bool(key).value_or_throw());
    case ValueType::string: return MetadataValue::string(value.as_string(key).value_or_throw());
    case ValueType::array: {
      std::vector<MetadataValue> elements;
      for (uint64_t i = 0; i < value.size().value_or_throw(); ++i) elements.push_back(copy_value(value.at(i).value_or_throw()));
      return MetadataValue::array(value.element_type().value_or_throw(), elements).value_or_throw();
    }
  }
  FAIL("unknown metadata type");
  return MetadataValue::u8(0);
}

struct GgufEdits {
  std::map<std::string, std::optional<gguf::MetadataValue>> keys;  // nullopt removes the key
  std::vector<std::string> drop_tensors;
  std::vector<gguf::TensorToWrite> add_tensors;  // replaces a tensor of the same name
};

// `source` rewritten to `target` with `edits`.
inline void rewrite_gguf(const std::filesystem::path& source, const std::filesystem::path& target, const GgufEdits& edits) {
  const gguf::File file = gguf::File::open(source).value_or_throw();
  gguf::Writer w = gguf::Writer::create().value_or_throw();
  for (const std::string& key : file.keys()) {
    const auto edit = edits.keys.find(key);
    if (edit == edits.keys.end()) w.add(key, copy_value(file.get(key).value_or_throw())).or_throw();
    else if (edit->second) w.add(key, *edit->second).or_throw();
  }
  for (const auto& [key, value] : edits.keys)
    if (value && !file.find(key)) w.add(key, *value).or_throw();
  auto replaced = [&](const std::string& name) {
    for (const auto& t : edits.add_tensors)
      if (t.name == name) return true;
    return std::find(edits.drop_tensors.begin(), edits.drop_tensors.end(), name) != edits.drop_tensors.end();
  };
  for (const gguf::TensorInfo& t : file.tensors())
    if (!replaced(t.name)) w.add_tensor(t.name, t.dims, t.type, file.data(t).value_or_throw()).or_throw();
  for (const auto& t : edits.add_tensors) w.add_tensor(t).or_throw();
  w.write(target).or_throw();
}

}  // namespace attendre::test
