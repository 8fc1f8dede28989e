// The caller's half of a stack configuration: how much each block's memories
// hold and how they evict (S, N, M, K, policy, sinks, masks), as opposed to
// the model's half (shapes, norms, RoPE, scale), which a model file fixes.
// One setting applies to every block, with per-block overrides. LM-Infinite
// is the caller's too: it changes how far apart a memory's entries look,
// not what the model is.
#pragma once

#include <attendre/config.hpp>
#include <attendre/encoder_decoder.hpp>
#include <attendre/stack.hpp>

#include <cstdint>
#include <map>

namespace attendre {

// A LayerConfig without its shape, chunk and model-defined logit scale and bias.
struct MemorySetting {
  uint32_t q_capacity = 0;  // N: how many positions each query waits
  KvMemoryConfig kv;        // M, policy, sinks, protect_new
  uint32_t top_k = 0;       // K; 0 means K = M (full attention over the memory)
  RetrievalMode mode = RetrievalMode::per_head;
  bool causal = true;
  // LM-Infinite distances (paper section 4) on the block's RoPE attention;
  // blocks without RoPE (cross-attention, T5) are left as they are.
  LmInfinite lm_infinite;
  // The distance mask of a sliding window (RetrievalConfig::window): keys
  // `window` or more positions behind a query are hidden; 0: none.
  uint32_t window = 0;

  // The unbounded reference setting for a stream of `positions` positions read
  // in chunks of `chunk`: N = 0, causal, fifo, M = max(positions, chunk), K = M.
  // Nothing is ever evicted, so the stack equals ordinary causal attention.
  // invalid_argument when M would pass 2^32.
  static Result<MemorySetting> full_context(uint64_t positions, uint32_t chunk);
  // The same for an encoder: every query waits for the whole stream (N =
  // positions) and sees all of it, not causal, so the stack equals ordinary
  // bidirectional attention.
  static Result<MemorySetting> full_bidirectional(uint64_t positions, uint32_t chunk);
  // A sliding window of W positions (what llama.cpp's SWA blocks see: the
  // query and the W - 1 positions before it) for a block receiving at most
  // `rows` rows per step: N = 0, causal, fifo, M = W + rows - 1, K = M and
  // the distance mask W. A chunk's first query still needs the W - 1 keys
  // before it when its last row is inserted, hence the rows - 1 more
  // (docs/spec-notes.md, "Sliding windows"). invalid_argument for W = 0 or
  // M past 2^31.
  static Result<MemorySetting> sliding_window(uint32_t window, uint32_t rows);
};

struct MemoryPlan {
  uint32_t chunk = 64;  // S: positions fed per step
  MemorySetting all;    // every block, unless overridden
  std::map<uint32_t, MemorySetting> blocks;  // overrides by block index
  bool flush_capable = false;  // finish() may flush (see StackConfig::flush_capable)
  // How the stack stores the activations its products read (StackConfig::activations).
  MemoryStorage activations = MemoryStorage::f32;
  // Blocks whose model reads a sliding window (BlockConfig::sliding_window)
  // and that `blocks` does not override keep it: sliding_window() for
  // the rows they receive, storing and retrieving as `all` says (storage,
  // retrieval mode). false: they take `all` as every other block.
  bool model_windows = true;

  const MemorySetting& for_block(uint32_t block) const;
};

// Sets config.chunk, flush_capable and every block's N, M, K, policy, sinks,
// retrieval mode, causal and window masks and (RoPE blocks) LM-Infinite
// from `plan` (the model's sliding windows as MemoryPlan::model_windows says),
// leaving shapes, scale and bias as the model set them. Fails with
// invalid_argument for an override of a block the stack does not have, and
// for LM-Infinite on a stack without RoPE blocks (config unchanged then);
// feasibility is StackConfig::check()'s.
Status apply_memory(StackConfig& config, const MemoryPlan& plan);
// The same for one layer: N, M, K, policy, sinks, retrieval mode and causal
// mask from `setting`, the shape, chunk, scale and bias left as they are.
void apply_memory(LayerConfig& config, const MemorySetting& setting);

// The caller's half of an encoder-decoder (paper section 3.3).
struct EncoderDecoderPlan {
  MemoryPlan encoder;  // the encoder's blocks
  // O: how many of the newest encoder outputs the encoder output memory
  // keeps; every cross-attention block reads all of them (M = K = O).
  uint32_t encoder_memory = 0;
  // M of every decoder self-attention block (causal, N = 0, fifo, K = M):
  // decoding more positions slides a window over them.
  uint32_t decoder_positions = 0;
};

// Applies `plan`: the encoder plan to config.encoder, O, and the decoder's
// self- and cross-attention memories as EncoderDecoderPlan describes them
// (the decoder reads one position per decode(): S = 1).
Status apply_encoder_decoder_memory(EncoderDecoderConfig& config, const EncoderDecoderPlan& plan);

}  // namespace attendre
