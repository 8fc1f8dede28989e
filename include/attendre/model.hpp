// A language model from a GGUF file: its architecture and hyper-parameters
// as a StackConfig, its tensors as a WeightSource over the memory-mapped
// file (no copy: each tensor keeps its file encoding, which the device
// decodes in its kernels), and its tokenizer. The memories (S, N, M, K,
// policy, sinks) are the caller's: stack_config() applies a MemoryPlan.
//
// Architectures (general.architecture): llama (Llama 2/3, TinyLlama, SmolLM,
// llama2.c exports; "normal" RoPE pairs, optional biases) and qwen2 (NeoX
// RoPE, q/k/v biases). Everything else, RoPE scaling included, is refused
// with a one-line Error naming the key.
#pragma once

#include <attendre/memory_plan.hpp>
#include <attendre/stack.hpp>
#include <attendre/tensor.hpp>
#include <attendre/tokenizer.hpp>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>

namespace attendre {

// What the file says about the model besides its stack.
struct ModelInfo {
  std::string architecture;     // general.architecture
  std::string name;             // general.name ("" when absent)
  // <arch>.context_length: the length it was trained on (LM-Infinite's
  // n_local, paper section 4, for the position-encoding work).
  uint32_t context_length = 0;
  uint32_t blocks = 0;          // <arch>.block_count
  uint64_t parameters = 0;      // elements of every tensor the stack uses
  uint64_t tensor_bytes = 0;    // their bytes in the file
};

struct ModelOptions {
  // Storage of the file's F32 matrices on the device (f16 halves them);
  // tensors in other encodings keep theirs.
  WeightType weights = WeightType::f32;
};

class Model {
 public:
  // Maps the file and reads the architecture, hyper-parameters, tensor
  // infos and tokenizer. Throws Error (one line, naming the file and the key
  // or tensor): io_error, malformed_input for missing keys or inconsistent
  // shapes, unsupported for architectures, RoPE scaling or tensor encodings
  // attendre does not run.
  static Model open(const std::filesystem::path& path, const ModelOptions& options = {});

  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  const std::filesystem::path& path() const;
  const ModelInfo& info() const;
  // The stack with the memory plan's settings on every block.
  StackConfig stack_config(const MemoryPlan& memory) const;
  // The default plan: chunks of 64 and the full trained context
  // (MemorySetting::full_context(context_length)).
  MemoryPlan default_memory() const;
  // The tensors, by the stack's names (which are GGUF's); their bytes stay
  // valid while the Model lives.
  WeightSource& weights();
  const Tokenizer& tokenizer() const;

 private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace attendre
