// A compute pipeline (from the context's cache) and the descriptor set that
// binds its buffers: the unit every kernel wrapper is built from.
#pragma once

#include "vulkan/commands.hpp"
#include "vulkan/pipeline.hpp"

#include <attendre/config.hpp>
#include <attendre/context.hpp>
#include <attendre/shader_ids.hpp>

#include <attendre/status.hpp>
#include <attendre/tensor.hpp>

#include <initializer_list>
#include <string>
#include <vector>

namespace attendre::kernels {

using shaders::ShaderId;

class Kernel {
 public:
  Kernel() = default;
  // full_subgroups: the shader depends on every subgroup being full
  // (specialization constant 0, the workgroup size, a multiple of the
  // device's largest subgroup size).
  // Fails when the pipeline cannot be built on the device, or when two
  // bindings overlap and one of them is written (invalid_argument).
  template <class Params>
  static Result<Kernel> make(Context& context, vk::DescriptorArena& arena, ShaderId shader,
                             std::vector<uint32_t> specialization, std::initializer_list<vk::BufferBinding> bindings,
                             bool full_subgroups = false) {
    return build(context, arena, shader, sizeof(Params), std::move(specialization), bindings, full_subgroups);
  }

  template <class Params>
  void dispatch(vk::CommandRecorder& recorder, const Params& params, uint32_t x, uint32_t y = 1,
                uint32_t z = 1) const {
    recorder.dispatch(*pipeline_, set_, uses_, &params, sizeof(Params), x, y, z,
                      label_.empty() ? nullptr : label_.c_str());
  }
  // What profiles call this kernel's dispatches where its shader's name
  // does not tell (a specialization that does other work: gated products).
  void set_label(std::string label) { label_ = std::move(label); }
  const std::string& label() const { return label_; }

  explicit operator bool() const { return pipeline_ != nullptr; }

 private:
  static Result<Kernel> build(Context& context, vk::DescriptorArena& arena, ShaderId shader, uint32_t push_bytes,
                              std::vector<uint32_t> specialization, std::initializer_list<vk::BufferBinding> bindings,
                              bool full_subgroups);

  const vk::ComputePipeline* pipeline_ = nullptr;
  VkDescriptorSet set_ = VK_NULL_HANDLE;
  std::vector<vk::BufferUse> uses_;  // each binding's range and access, for derived barriers
  std::string label_;                // empty: the shader's name
};

// The kernels that read weights, each compiled once per weight encoding
// (shaders/weights.glsl).
enum class WeightKernel { gemm, matvec, direct, embedding };

// Whether fp16 weights, memories and activations are read as 32-bit words
// and unpacked (unpackHalf2x16): where 16-bit storage is absent or switched
// off, or the driver's quirk half_loads_lane_by_lane says words are faster.
bool f16_as_words(const DeviceCaps& caps);

// Whether Q8_0 quants are read as int8 values (the *_q8_0_int8 builds):
// where storageBuffer8BitAccess is present and not switched off, and no
// driver quirk (byte_loads_lane_by_lane) says 32-bit words are faster; else
// unpacked from 32-bit words like every other block type.
bool q8_0_as_int8(const DeviceCaps& caps);

// Whether fp16 activations times fp16 weights are multiplied in fp16, their
// sums accumulated in fp32 (*_f16_a16_math, shaders/half_math.glsl): where
// shaderFloat16 is present and 16-bit loads are in use (!f16_as_words), and
// the driver's quirk half_math_emulated does not advise against it.
bool half_math(const DeviceCaps& caps);

// The variant of `kernel` for weights encoded as `type` and A rows stored
// as `input` (fp16 activations: packed pairs, shaders/input_rows.glsl):
// fails (unsupported) naming `what` when there is none. Every encoding but
// F16 and Q8_0 is read as 32-bit words; F16 too where f16_as_words(), Q8_0
// unless q8_0_as_int8(); fp16 A rows by 16-bit loads (*_a16) or, where
// f16_as_words(), as words (*_a16_words); fp16 rows times F16 weights where
// half_math() in fp16 (*_f16_a16_math).
Result<ShaderId> weight_variant(const Context& context, WeightKernel kernel, ElementType type, const std::string& what,
                                MemoryStorage input = MemoryStorage::f32);

// Values of `type` the matvec and direct kernels decode per step (a block
// or part of one, interface/quant.h; 1 for the float types).
uint32_t decode_unit(ElementType type);

// Checks that a matrix or table of `cols` columns at `offset` (elements of
// the float types, bytes of the block types) can be addressed in `type`:
// rows of whole blocks, block offsets even. Fails (invalid_argument) naming `what`.
Status check_weight_layout(ElementType type, uint32_t cols, uint32_t offset, const char* what);

// Whether a kernel writing `out` while reading `in` works in place: the same
// binding (one read/write binding in the IN_PLACE shader variant), or
// disjoint ones. Fails (invalid_argument) for bindings that overlap without being equal.
Result<bool> in_place(const vk::BufferBinding& in, const vk::BufferBinding& out, const char* kernel);

inline uint32_t ceil_div(uint64_t a, uint64_t b) { return static_cast<uint32_t>((a + b - 1) / b); }

}  // namespace attendre::kernels
