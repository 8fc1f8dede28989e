// Shared by the model tests: a GGUF file rewritten with edits (keys
// replaced, added or removed; tensors dropped or added), so that each
// malformed variant of a valid fixture differs from it in one place.
#pragma once

#include "gguf_test_support.hpp"

#include <algorithm>
#include <map>
#include <optional>

namespace attendre::test {

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
    if (edit == edits.keys.end()) w.add(key, gguf::copy_value(file.get(key).value_or_throw(), key).value_or_throw()).or_throw();
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
