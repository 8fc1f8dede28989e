#include "kernels/stored.hpp"

namespace attendre::kernels {

StoredPath stored_path(const DeviceCaps& caps, MemoryStorage storage) {
  if (storage == MemoryStorage::f32) return StoredPath::f32;
  return f16_as_words(caps) ? StoredPath::f16_words : StoredPath::f16;
}

ShaderId stored_variant(StoredPath path, ShaderId f32, ShaderId f16, ShaderId f16_words) {
  switch (path) {
    case StoredPath::f16: return f16;
    case StoredPath::f16_words: return f16_words;
    case StoredPath::f32: break;
  }
  return f32;
}

}  // namespace attendre::kernels
