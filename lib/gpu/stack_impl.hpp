// The device stack's internals, shared with the encoder-decoder, which
// hooks the encoder's output rows and loads the decoder's cross memories.
#pragma once

#include "core/stack_chunk.hpp"
#include "gpu/stack_block.hpp"
#include "kernels/embedding.hpp"
#include "vulkan/commands.hpp"

#include <attendre/gpu_stack.hpp>

#include <algorithm>
#include <functional>
#include <memory>
#include <vector>

namespace attendre::gpu {

// The most rows any block passes on in one step.
inline uint32_t max_rows(const StackConfig& config) {
  uint32_t rows = config.chunk;
  for (size_t l = 0; l < config.blocks.size(); ++l) rows = std::max(rows, DeviceBlock::max_queries(config, l));
  return rows;
}

// Where the per-step input and every block's metadata sit in the upload buffer.
struct UploadPlan {
  uint64_t input = 0;                // ids or embeddings
  std::vector<uint64_t> blocks;      // each block's metadata
  uint64_t words = 0;
  explicit UploadPlan(const StackConfig& c) {
    SectionCursor cursor;
    input = cursor.take(uint64_t{c.chunk} * (c.vocab > 0 ? 1 : c.hidden));
    for (size_t l = 0; l < c.blocks.size(); ++l) blocks.push_back(cursor.take(DeviceBlock::upload_words(c, l)));
    words = cursor.words;
  }
};

// Where the final rows and logits land in the readback buffer.
struct ReadbackPlan {
  uint64_t hidden = 0, logits = 0, words = 0;
  explicit ReadbackPlan(const StackConfig& c) {
    SectionCursor cursor;
    const uint32_t rows = max_rows(c);
    hidden = cursor.take(uint64_t{rows} * c.hidden);
    logits = cursor.take(uint64_t{rows} * c.vocab);
    words = cursor.words;
  }
};

struct Stack::Impl {
  Impl(Context& ctx, const StackConfig& c, WeightSource& weights, const vk::Buffer* encoder_rows);

  StackOutput run(const StackChunk* chunk, size_t first_block, BlockMode mode, const StackRequest& request);
  // Waits for the last submitted step and reports its non-finite values.
  void finish_pending();
  // Loads every cross-attention block from `rows` rows of the encoder buffer.
  void load_encoder_memory(kernels::RowRef rows, const std::vector<int64_t>& positions);
  std::vector<QueryMeta> stage_input(const StackChunk* chunk, uint32_t rows);

  Context& context;
  StackConfig config;
  UploadPlan upload_plan;
  ReadbackPlan readback_plan;
  SharedBuffers shared;
  vk::Buffer final_rows, logits, readback;
  std::unique_ptr<Uploader> uploader;
  DeviceNorm output_norm;
  DeviceMatrix embedding_table, output;
  std::vector<std::unique_ptr<DeviceBlock>> blocks;
  std::unique_ptr<vk::DescriptorArena> arena;
  kernels::Embedding embed;
  kernels::Norm final_norm;
  Projection head;
  vk::Submission submission;
  StackStreamValidator validator;
  Recorded recorded;
  std::unique_ptr<vk::Profiler> profiler;
  uint32_t logits_site = 0;
  uint64_t steps = 0;       // submitted so far
  bool unverified = false;  // the last step's checks are still to be read
  bool finished = false;
  // Called after the final norm with the rows that left the last block (an
  // encoder hands them to its output memory here, on the device).
  std::function<void(vk::CommandRecorder&, const vk::Buffer&, const std::vector<QueryMeta>&)> on_output;
};


}  // namespace attendre::gpu
