#include "vulkan/spirv_reflect.hpp"
#include "core/try.hpp"

#include <attendre/error.hpp>

#include <map>
#include <set>

namespace attendre::vk {
namespace {

// SPIR-V opcodes, decorations and storage classes used below (SPIR-V 1.3 spec, 3.x).
constexpr uint32_t kMagic = 0x07230203;
constexpr uint32_t kOpTypeImage = 25, kOpTypeSampledImage = 27, kOpTypeStruct = 30, kOpTypePointer = 32, kOpVariable = 59, kOpDecorate = 71,
                   kOpMemberDecorate = 72;
constexpr uint32_t kDecorationBufferBlock = 3, kDecorationNonWritable = 24, kDecorationNonReadable = 25,
                   kDecorationBinding = 33, kDecorationDescriptorSet = 34;
constexpr uint32_t kStorageUniformConstant = 0, kStorageUniform = 2, kStorageStorageBuffer = 12;
constexpr uint32_t kDimBuffer = 5;

struct Decorations {
  bool non_writable = false, non_readable = false, buffer_block = false;
  int64_t binding = -1, set = 0;
};

}  // namespace

Result<std::vector<BindingAccess>> reflect_storage_bindings(std::span<const uint32_t> spirv) {
  ATTENDRE_REQUIRE(spirv.size() >= 5 && spirv[0] == kMagic, "reflect_storage_bindings: not a SPIR-V module");
  std::map<uint32_t, Decorations> decorations;                     // by id
  std::map<uint32_t, std::map<uint32_t, Decorations>> members;     // struct id -> member -> decorations
  std::map<uint32_t, uint32_t> member_counts;                      // struct id -> members
  std::map<uint32_t, std::pair<uint32_t, uint32_t>> pointers;      // pointer id -> (storage class, pointee)
  struct Variable {
    uint32_t id, type, storage;
  };
  std::vector<Variable> variables;
  std::set<uint32_t> buffer_images;   // OpTypeImage ids of Dim Buffer, Sampled 1 (samplerBuffer's image)
  std::set<uint32_t> texel_types;     // OpTypeSampledImage ids of those (uniform texel buffers)

  for (size_t at = 5; at < spirv.size();) {
    const uint32_t count = spirv[at] >> 16, opcode = spirv[at] & 0xFFFFu;
    ATTENDRE_REQUIRE(count > 0 && at + count <= spirv.size(), "reflect_storage_bindings: truncated instruction");
    const uint32_t* w = &spirv[at];
    auto apply = [](Decorations& d, uint32_t decoration, const uint32_t* literal, bool has_literal) {
      if (decoration == kDecorationNonWritable) d.non_writable = true;
      if (decoration == kDecorationNonReadable) d.non_readable = true;
      if (decoration == kDecorationBufferBlock) d.buffer_block = true;
      if (decoration == kDecorationBinding && has_literal) d.binding = *literal;
      if (decoration == kDecorationDescriptorSet && has_literal) d.set = *literal;
    };
    if (opcode == kOpDecorate && count >= 3) apply(decorations[w[1]], w[2], w + 3, count >= 4);
    if (opcode == kOpMemberDecorate && count >= 4) apply(members[w[1]][w[2]], w[3], w + 4, count >= 5);
    if (opcode == kOpTypeStruct && count >= 2) member_counts[w[1]] = count - 2;
    if (opcode == kOpTypePointer && count >= 4) pointers[w[1]] = {w[2], w[3]};
    if (opcode == kOpTypeImage && count >= 8 && w[3] == kDimBuffer && w[7] == 1) buffer_images.insert(w[1]);
    if (opcode == kOpTypeSampledImage && count >= 3 && buffer_images.count(w[2])) texel_types.insert(w[1]);
    if (opcode == kOpVariable && count >= 4) variables.push_back({w[2], w[1], w[3]});
    at += count;
  }

  std::vector<BindingAccess> out;
  for (const Variable& v : variables) {
    const auto pointer = pointers.find(v.type);
    if (pointer == pointers.end()) continue;
    const uint32_t block = pointer->second.second;
    const Decorations& texel_d = decorations[v.id];
    if (v.storage == kStorageUniformConstant && texel_types.count(block) && texel_d.binding >= 0 && texel_d.set == 0) {
      const auto b = static_cast<size_t>(texel_d.binding);
      if (out.size() <= b) out.resize(b + 1);
      out[b].used = out[b].reads = out[b].texel = true;
      continue;
    }
    const bool storage = v.storage == kStorageStorageBuffer ||
                         (v.storage == kStorageUniform && decorations[block].buffer_block);
    const Decorations& d = decorations[v.id];
    if (!storage || d.binding < 0 || d.set != 0) continue;
    // Qualifiers on the block land on each member; one writable member
    // makes the binding written (likewise for reads).
    bool reads = false, writes = false;
    const uint32_t n = member_counts.count(block) ? member_counts[block] : 0;
    for (uint32_t m = 0; m < n; ++m) {
      const Decorations& md = members[block][m];
      reads |= !md.non_readable;
      writes |= !md.non_writable;
    }
    if (n == 0) reads = writes = true;
    reads &= !d.non_readable;
    writes &= !d.non_writable;
    const auto b = static_cast<size_t>(d.binding);
    if (out.size() <= b) out.resize(b + 1);
    out[b].used = true;
    out[b].reads |= reads;
    out[b].writes |= writes;
  }
  return out;
}

}  // namespace attendre::vk
