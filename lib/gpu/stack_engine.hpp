// The device stack's engine: plans every block's step on the host, then
// records the whole stack (embedding, blocks, final norm, LM head, readback
// copies) into one command buffer and submits it once. It is the state and
// machinery of the public gpu::Stack (its pimpl: gpu::Stack alone implements
// TransformerStack, its methods checking the public contract and running
// the step here); the encoder-decoder runs two gpu::Stacks, hooking the
// encoder's output rows and loading the decoder's cross-attention memories
// through StackAccess.
#pragma once

#include "core/model_spec.hpp"
#include "core/stack_chunk.hpp"
#include "gpu/recorded_steps.hpp"
#include "gpu/stack_block.hpp"
#include "gpu/step_executor.hpp"
#include "kernels/embedding.hpp"
#include "kernels/soft_cap.hpp"
#include "vulkan/commands.hpp"
#include "core/stream_validator.hpp"
#include "core/try.hpp"

#include <attendre/gpu_stack.hpp>

#include <algorithm>
#include <array>
#include <span>
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

// The widest FFN of the stack's blocks (at least 1).
uint32_t max_ffn(const StackConfig& config);
// The retrieval scratch the blocks share: the largest any block needs.
Result<ScratchWords> stack_scratch_words(const StackConfig& config, const DeviceCaps& caps);
// The bytes of weights in a memory plan (model and blocks).
uint64_t weight_bytes(const StackMemory& memory);

// Where the per-step input and every block's metadata sit in the upload
// buffer; fails (out_of_device_memory) past 2^32 words.
struct UploadPlan {
  uint64_t input = 0;                // ids or embeddings
  std::vector<uint64_t> blocks;      // each block's metadata
  uint64_t words = 0;
  static Result<UploadPlan> make(const StackConfig& c) {
    UploadPlan p;
    SectionCursor cursor;
    p.input = cursor.take(uint64_t{c.chunk} * (c.vocab > 0 ? 1 : c.hidden));
    for (size_t l = 0; l < c.blocks.size(); ++l) p.blocks.push_back(cursor.take(DeviceBlock::upload_words(c, l)));
    p.words = cursor.words;
    ATTENDRE_TRY(cursor.status());
    return p;
  }
};

// Where the final rows and logits land in the readback buffer.
struct ReadbackPlan {
  uint64_t hidden = 0, logits = 0, words = 0;
  static Result<ReadbackPlan> make(const StackConfig& c) {
    ReadbackPlan p;
    SectionCursor cursor;
    const uint32_t rows = max_rows(c);
    p.hidden = cursor.take(uint64_t{rows} * c.hidden);
    p.logits = cursor.take(uint64_t{rows} * c.vocab);
    p.words = cursor.words;
    ATTENDRE_TRY(cursor.status());
    return p;
  }
};

// Stack positions within the kernels' int32 range (valid rows only).
Status check_gpu_positions(const StackChunk& chunk);

class StackEngine {
 public:
  // Finite-check sites a stack registers: its blocks', then its final rows and logits.
  static uint32_t finite_sites(const StackConfig& config) {
    return static_cast<uint32_t>(DeviceBlock::kFiniteSites * config.blocks.size() + 2);
  }

  // `encoder_rows`: a decoder's cross-attention blocks load from it (else
  // null). Fails for the config, the device's limits, the weights (the
  // source's own failures as they are) and what the device refuses;
  // nothing is left behind, no copy in flight.
  static Result<std::unique_ptr<StackEngine>> create(Context& ctx, const StackConfig& c, WeightSource& weights,
                                                     const vk::Buffer* encoder_rows = nullptr);

  StackMemory memory() const;

  // Loads every cross-attention block from `rows` rows of the encoder buffer.
  Status load_encoder_memory(kernels::RowRef rows, const std::vector<int64_t>& positions);
  // Called after the final norm with the rows that left the last block (an
  // encoder hands them to its output memory here, on the device).
  std::function<void(vk::CommandRecorder&, const vk::Buffer&, const std::vector<QueryMeta>&)> on_output;

 private:
  friend class Stack;  // the public face: its methods are the stack's entry points

  // One step's host half: every block planned (committed) and the upload
  // image (input, then each block's metadata) written at `words`.
  struct Planned {
    uint32_t input_rows = 0;  // rows embedded (0: the step starts past block 0)
    std::vector<BlockStep> blocks;
    std::vector<QueryMeta> emitted;  // rows leaving the last block, valid or not
  };
  Result<Planned> plan(const StackChunk* chunk, size_t first_block, BlockMode mode, uint32_t* words);
  // Where a step's final rows or logits are copied: packed (valid rows only,
  // as record() writes an application's buffer) or all rows as computed.
  struct Destination {
    const vk::Buffer* buffer = nullptr;
    uint64_t offset = 0;  // bytes
    bool packed = false;
  };
  // Records a planned step: embedding, blocks, then, when it emits any valid
  // row, the final norm, the LM head and the copies to every `hidden`
  // destination and to `logits` (which may have no buffer).
  Status record_step(vk::CommandRecorder& rec, const Planned& step, size_t first_block,
                   std::span<const Destination> hidden, Destination logits);
  // Plans and submits one step from the next slot (double-buffered: the
  // host plans step t+1 while the device runs step t).
  Result<Ticket> submit_step(const StackChunk* chunk, size_t first_block, BlockMode mode, const StackRequest& request,
                     const SubmitOptions& options);
  // Plans and records one step into the application's `cb` (record*()).
  Result<RecordedStep> record_step_into(VkCommandBuffer cb, const StackRecordInputs& in, const StackRecordOutputs& out,
                                size_t first_block, BlockMode mode);
  void copy_rows(vk::CommandRecorder& rec, const vk::Buffer& src, uint32_t row_floats,
                 const std::vector<QueryMeta>& rows, Destination dst) const;
  // A blocking step (drain, flush, decode): earlier steps waited for first.
  Result<StackOutput> run(const StackChunk* chunk, size_t first_block, BlockMode mode, const StackRequest& request);
  // The ticket's step waited for when it reads something back, and decoded.
  Result<StackOutput> collect(const Ticket& ticket);
  // What result() decodes of the step a submit slot holds.
  struct StepRead {
    std::vector<QueryMeta> emitted;
    StackRequest request;
  };
  std::vector<QueryMeta> stage_input(const StackChunk* chunk, uint32_t rows, uint32_t* words);

  StackEngine(Context& ctx, const StackConfig& c, const UploadPlan& upload, const ReadbackPlan& readback)
      : context_(ctx), config_(c), upload_plan_(upload), readback_plan_(readback) {}
  // create()'s work on the engine in place (its buffers' addresses are
  // final), in these steps:
  Status build(WeightSource& weights, const vk::Buffer* encoder_rows);
  // The layout of every buffer, checked against the device's limits before
  // anything is allocated or a weight read.
  Result<StackLayout> check_layout(WeightSource& weights);
  // The activations, upload, scratch, finite checks and the executor's slots.
  Status make_buffers();
  // The weight arena (`planned`'s size) and every weight of `spec` loaded into it.
  Status load_weights(WeightSource& weights, const ModelSpec& spec, const StackMemory& planned);
  // The blocks, on their loaded weights and the shared buffers.
  Status make_blocks();
  // The final norm, the embedding kernels, the LM head and the logits' soft-cap.
  Status make_head();

  Context& context_;
  StackConfig config_;
  UploadPlan upload_plan_;
  ReadbackPlan readback_plan_;
  SharedBuffers shared_;
  vk::Buffer final_rows_, logits_;
  std::unique_ptr<vk::MemoryArena> arena_;  // the weights' memory: before them, so it outlives them
  DeviceNorm output_norm_;
  DeviceMatrix embedding_table_, output_;
  std::vector<BlockWeights> block_weights_;  // before the blocks, which refer to them
  std::vector<std::unique_ptr<DeviceBlock>> blocks_;
  std::unique_ptr<vk::DescriptorArena> descriptors_;
  std::vector<kernels::Embedding> embed_;  // one per part of the embedding table
  kernels::SoftCap soft_cap_;              // of the logits (StackConfig::logit_soft_cap > 0)
  kernels::Norm final_norm_;
  Projection head_;
  // Where the head can RMS-normalize its rows itself (kernels::RmsInput),
  // a step that reads only logits runs no final norm: head_rms_ reads the
  // last block's output rows with the final norm's gains.
  std::optional<Projection> head_rms_;
  kernels::StoreHalfRows final_half_;  // fp16 activations: the final rows rounded into h for head_
  std::unique_ptr<StepExecutor> executor_;
  std::array<StepRead, StepExecutor::kSlots> reads_;  // per submit slot
  StackStreamValidator validator_;
  Stack::Recorded recorded_;
  uint32_t final_rows_site_ = 0, logits_site_ = 0;
  bool finished_ = false;
};

// How the library inside reaches a gpu::Stack's engine (the
// encoder-decoder's hooks) and wraps an engine made with an encoder's rows.
struct StackAccess {
  static std::unique_ptr<Stack> wrap(std::unique_ptr<StackEngine> engine) {
    return std::unique_ptr<Stack>(new Stack(std::move(engine)));
  }
  static StackEngine& engine(Stack& stack) { return *stack.engine_; }
};

}  // namespace attendre::gpu
