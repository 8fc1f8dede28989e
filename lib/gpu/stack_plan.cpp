// Planning a device stack without creating it (gpu_stack.hpp:
// plan_stack_layout, plan_stack_memory, StackLayout::check):
// every buffer StackEngine makes, in the order it makes them, from the
// config, the device's caps and the weights' encodings.
#include "gpu/stack_engine.hpp"

#include "core/model_spec.hpp"
#include "core/try.hpp"

#include <attendre/error.hpp>
#include <attendre/gpu_stack.hpp>

#include <algorithm>
#include <functional>
#include <string>

namespace attendre::gpu {

uint32_t max_ffn(const StackConfig& config) {
  uint32_t f = 1;
  for (const BlockConfig& b : config.blocks) f = std::max(f, b.ffn);
  return f;
}

Result<ScratchWords> stack_scratch_words(const StackConfig& config, const DeviceCaps& caps) {
  ScratchWords words;
  const kernels::KernelPlan plan = kernels::plan_kernels(caps);
  for (size_t l = 0; l < config.blocks.size(); ++l) {
    LayerConfig c = config.attention(l);
    ATTENDRE_TRY_ASSIGN(const RetrievalPlan r, plan_retrieval(c, plan, DeviceBlock::max_queries(config, l), caps,
                                                                    config.blocks[l].lm_infinite));
    words = words.max(r.words);
  }
  return words;
}

uint64_t weight_bytes(const StackMemory& m) {
  uint64_t total = m.model;
  for (const BlockMemory& b : m.blocks) total += b.weights;
  return total;
}

uint64_t StackMemory::total() const {
  uint64_t t = model + scratch + activations + staging;
  for (const BlockMemory& b : blocks) t += b.total();
  return t;
}

namespace {

// The layout, with each matrix in the encoding `types` gives it: every
// buffer the engine creates, in the order it creates them, and the totals
// summed from them.
using StoredTypes = std::function<Result<ElementType>(const MatrixSpec&)>;

Result<StackLayout> plan(const StackConfig& config, const DeviceCaps& caps, const StoredTypes& types) {
  ATTENDRE_TRY_ASSIGN(const ModelSpec spec, model_spec(config));
  StackLayout layout;
  StackMemory& m = layout.memory;
  auto add = [&](uint64_t& total, const std::string& name, uint64_t bytes, bool weights, bool bound = true) {
    // The rows of one step grow with the chunk: S is what a user lowers.
    layout.buffers.push_back({name, bytes, weights, bound, weights ? "" : "lower the chunk S"});
    total += bytes;
  };
  // Weights in the loader's order (StackEngine's constructor): the final
  // norm, the embedding table and LM head (split by rows), then the blocks.
  add(m.model, spec.output_norm.name, DeviceNorm::placed_bytes(config.hidden, spec.output_norm_bias.has_value()), true);
  for (const auto& matrix : {spec.token_embd, spec.output}) {
    if (!matrix) continue;
    ATTENDRE_TRY_ASSIGN(const ElementType type, types(*matrix));
    ATTENDRE_TRY_ASSIGN(const std::vector<uint64_t> parts,
                        DeviceMatrix::placed_parts(caps, type, matrix->rows, matrix->cols, false));
    for (size_t i = 0; i < parts.size(); ++i)
      add(m.model, matrix->name + (parts.size() > 1 ? " part " + std::to_string(i) : ""), parts[i], true);
  }
  for (size_t l = 0; l < config.blocks.size(); ++l) {
    ATTENDRE_TRY_ASSIGN(const BlockMemory block, DeviceBlock::plan_memory(config, l, caps, types, &layout.buffers));
    m.blocks.push_back(block);
  }
  std::vector<uint64_t> placements;
  for (const PlannedBuffer& b : layout.buffers)
    if (b.weights) placements.push_back(b.bytes);
  layout.weight_allocations = vk::MemoryArena::plan_blocks(placements, caps.max_allocation);

  ATTENDRE_TRY_ASSIGN(const ScratchWords s, stack_scratch_words(config, caps));
  add(m.scratch, "retrieval logits", vk::rounded_bytes(s.logits * 4), false);
  add(m.scratch, "retrieval lists", vk::rounded_bytes(s.lists * 4), false);
  add(m.scratch, "retrieval attention", vk::rounded_bytes(s.attention * 4), false);
  add(m.scratch, "retrieval usage", vk::rounded_bytes(s.usage * 4), false);
  const uint64_t rows = max_rows(config), row_bytes = vk::rounded_bytes(rows * config.hidden * 4);
  for (const char* name : {"block rows 0", "block rows 1", "attention block rows"})
    add(m.activations, name, row_bytes, false);
  add(m.activations, "normed rows",
      vk::rounded_bytes(normed_words(config, static_cast<uint32_t>(rows), max_ffn(config)) * 4), false);
  ATTENDRE_TRY_ASSIGN(const FfnLayout ffn, FfnLayout::make(static_cast<uint32_t>(rows), max_ffn(config)));
  add(m.activations, "ffn rows", vk::rounded_bytes(ffn.words * 4), false);
  add(m.activations, "final rows", row_bytes, false);
  add(m.activations, "logits", vk::rounded_bytes(rows * config.vocab * 4), false);
  ATTENDRE_TRY_ASSIGN(const UploadPlan upload, UploadPlan::make(config));
  ATTENDRE_TRY_ASSIGN(const ReadbackPlan readback, ReadbackPlan::make(config));
  add(m.staging, "stack upload", vk::rounded_bytes(upload.words * 4), false);
  for (uint32_t slot = 0; slot < StepExecutor::kSlots; ++slot) {  // double-buffered submissions
    add(m.staging, "stack upload slot " + std::to_string(slot), vk::rounded_bytes(upload.words * 4), false, false);
    add(m.staging, "stack readback " + std::to_string(slot), vk::rounded_bytes(readback.words * 4), false, false);
  }
  for (uint32_t slot = 0; slot < StepExecutor::kCheckSlots; ++slot)  // flags per step in flight
    add(m.staging, "finite checks " + std::to_string(slot),
        vk::rounded_bytes(uint64_t{StackEngine::finite_sites(config)} * kSectionWords * 4), false);
  m.load_staging = caps.unified_memory ? 0 : WeightLoader::kStagingBytes;
  return layout;
}

StoredTypes stored_types(const StackConfig& config, WeightSource* weights) {
  if (!weights) {
    const ElementType stored = element_type(config.weights);
    return [stored](const MatrixSpec&) -> Result<ElementType> { return stored; };
  }
  return [&config, weights](const MatrixSpec& m) -> Result<ElementType> {
    const uint64_t shape[] = {m.rows, m.cols};
    ATTENDRE_TRY_ASSIGN(const std::optional<ElementType> type, weights->type_of(m.name, shape));
    if (!type) return invalid_argument("the weights have no tensor '" + m.name + "'");
    return DeviceMatrix::stored_type(*type, config.weights);
  };
}

// Rounded up, in the largest unit that is not zero: "6 MiB", "5 KiB", "300 bytes".
std::string size_text(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 20)) return std::to_string((bytes + (1u << 20) - 1) >> 20) + " MiB";
  if (bytes >= 1024) return std::to_string((bytes + 1023) >> 10) + " KiB";
  return std::to_string(bytes) + " bytes";
}

}  // namespace

Result<StackLayout> plan_stack_layout(const StackConfig& config, const DeviceCaps& caps) {
  ATTENDRE_TRY(config.check());
  return plan(config, caps, stored_types(config, nullptr));
}

Result<StackLayout> plan_stack_layout(const StackConfig& config, const DeviceCaps& caps, WeightSource& weights) {
  ATTENDRE_TRY(config.check());
  return plan(config, caps, stored_types(config, &weights));
}

Result<StackMemory> plan_stack_memory(const StackConfig& config, const DeviceCaps& caps) {
  ATTENDRE_TRY_ASSIGN(const StackLayout layout, plan_stack_layout(config, caps));
  return layout.memory;
}

Result<StackMemory> plan_stack_memory(const StackConfig& config, const DeviceCaps& caps, WeightSource& weights) {
  ATTENDRE_TRY_ASSIGN(const StackLayout layout, plan_stack_layout(config, caps, weights));
  return layout.memory;
}

Status PlannedBuffer::refused(ErrorCode code, const std::string& problem) const {
  return {code, "'" + name + "' " + problem + (remedy.empty() ? "" : "; " + remedy)};
}

Status StackLayout::check(const DeviceCaps& caps) const {
  for (const PlannedBuffer& b : buffers) {
    if (b.bound && b.bytes > caps.max_storage_range)
      return b.refused(ErrorCode::unsupported, "needs " + size_text(b.bytes) +
                                                   " in one buffer, over the device's storage-buffer range of " +
                                                   size_text(caps.max_storage_range));
    if (b.bytes > caps.max_allocation)
      return b.refused(ErrorCode::unsupported, "needs " + size_text(b.bytes) +
                                                   " in one allocation, over the device's maxMemoryAllocationSize of " +
                                                   size_text(caps.max_allocation));
  }
  // Every placement fits an allocation (above), so every block the arena opens does.
  for (uint64_t a : weight_allocations)
    ATTENDRE_REQUIRE(a <= caps.max_allocation, "the weight arena planned a block past maxMemoryAllocationSize");
  return {};
}

}  // namespace attendre::gpu
