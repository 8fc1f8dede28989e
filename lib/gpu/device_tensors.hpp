// Model tensors on the device, each in its own encoding (the source's, or
// fp16 for fp32 matrices stored so), placed in one memory arena and filled
// tensor by tensor: written in place on unified memory, else through a
// bounded staging ring whose copies go out several per submission while
// the host fills the other half. No whole model ever sits in host memory.
//
// A matrix (with its optional fp32 bias) lives in buffers of at most one
// storage range each: a matrix larger than that (an LM head or a token
// embedding table over a big vocabulary) is split by output rows into parts,
// each multiplied (or looked up) by its own dispatch.
#pragma once

#include "core/model_spec.hpp"
#include "kernels/matmul.hpp"
#include "vulkan/buffer.hpp"
#include "vulkan/commands.hpp"
#include "vulkan/memory_arena.hpp"

#include <attendre/tensor.hpp>
#include <attendre/transformer.hpp>

#include <array>
#include <initializer_list>
#include <memory>
#include <optional>
#include <vector>

namespace attendre::gpu {

struct MatrixPart {
  vk::Buffer buffer;  // encoded rows, then the bias slice at bias_offset words
  uint32_t first_row = 0;
  uint32_t rows = 0;
  uint32_t bias_offset = 0;
};

class DeviceMatrix {
 public:
  DeviceMatrix() = default;
  // Arena bytes of each part (split by rows to fit one storage range) of a
  // matrix of this encoding and shape, and their sum (for planners).
  // Fail (malformed_input) when a row is not a whole number of blocks,
  // (unsupported) when one row passes the storage range.
  static Result<std::vector<uint64_t>> placed_parts(const DeviceCaps& caps, ElementType type, uint64_t rows,
                                                    uint64_t cols, bool bias);
  static Result<uint64_t> placed_bytes(const DeviceCaps& caps, ElementType type, uint64_t rows, uint64_t cols,
                                       bool bias);
  // The encoding a tensor of `source` type is stored in under `storage`.
  static ElementType stored_type(ElementType source, WeightType storage);

  const std::vector<MatrixPart>& parts() const { return parts_; }
  ElementType type() const { return type_; }
  uint32_t rows() const { return rows_; }
  uint32_t cols() const { return cols_; }
  bool has_bias() const { return has_bias_; }
  uint64_t device_bytes() const;

 private:
  friend class WeightLoader;
  std::vector<MatrixPart> parts_;
  ElementType type_ = ElementType::f32;
  uint32_t rows_ = 0, cols_ = 0;
  bool has_bias_ = false;
};

// Norm gain (and LayerNorm shift) vectors in one small fp32 buffer.
struct DeviceNorm {
  vk::Buffer buffer;
  uint32_t bias_offset = 0;
  static uint64_t placed_bytes(uint64_t dim, bool bias);
};

// Reads tensors from a source and places them on the device.
class WeightLoader {
 public:
  // Bytes of host-visible staging a load holds at most (freed when it ends).
  static constexpr uint64_t kStagingBytes = uint64_t{8} << 20;

  WeightLoader(Context& context, WeightSource& source, vk::MemoryArena& arena, WeightType storage);
  // Waits for the copies in flight (a failed wait leaves them to the
  // submissions' own destructors).
  ~WeightLoader();
  WeightLoader(const WeightLoader&) = delete;
  WeightLoader& operator=(const WeightLoader&) = delete;

  // Fail naming the tensor when the source lacks it, holds another shape
  // or an encoding whose row does not split into whole blocks; the source's
  // own failures come through as they are. A failing call first waits for
  // every copy in flight (FinishOnFailure), so the buffers made before may go.
  Result<DeviceMatrix> matrix(const MatrixSpec& spec);
  // Matrices of one row length and stored encoding, without biases, as one
  // matrix of all their rows in one part, in the order given (a gated
  // FFN's [gate; up] for gated products, [wq; wk; wv] for a split
  // product). Fails (invalid_argument) when they differ or do not fit one
  // storage range.
  Result<DeviceMatrix> matrix_stack(std::initializer_list<const MatrixSpec*> specs);
  // The encoding a tensor of the source is stored in (stored_type).
  Result<ElementType> stored_type_of(const MatrixSpec& spec);
  Result<DeviceNorm> norm(const VectorSpec& gain, const std::optional<VectorSpec>& shift);
  // A small tensor decoded to float64 on the host (tables the host turns
  // into kernel inputs: T5 biases, RoPE factors).
  Result<std::vector<double>> values(const std::string& name, std::vector<uint64_t> shape);
  // Host-made fp32 constants placed in the arena (constants_bytes() of it).
  Result<vk::Buffer> constants(std::span<const float> values, const char* label);
  static uint64_t constants_bytes(uint64_t count);
  // Waits for every copy: the tensors are ready for kernels afterwards.
  Status finish();

  // A load that fails midway may leave copies in flight (or recorded, still
  // to be submitted) into buffers that go away with the failure: declared
  // after them, this waits for every copy on the way out unless the load
  // succeeded. Every call above holds one; so does whoever keeps what they
  // returned in objects that a later failure frees.
  class FinishOnFailure {
   public:
    explicit FinishOnFailure(WeightLoader& loader) : loader_(loader) {}
    ~FinishOnFailure();
    FinishOnFailure(const FinishOnFailure&) = delete;
    FinishOnFailure& operator=(const FinishOnFailure&) = delete;
    void succeeded() { succeeded_ = true; }

   private:
    WeightLoader& loader_;
    bool succeeded_ = false;
  };

 private:
  Result<TensorView> fetch(const std::string& name, std::vector<uint64_t> shape);
  // The view's bytes in `type` (fp32 converted to fp16 into `converted`).
  static std::span<const std::byte> stored_bytes(const TensorView& view, ElementType type,
                                                 std::vector<std::byte>& converted);
  // Copies `data` to `dst` at `offset`: in place on unified memory, else
  // through the staging ring.
  Status write(const vk::Buffer& dst, uint64_t offset, std::span<const std::byte> data);
  Status submit_half();

  Context& context_;
  WeightSource& source_;
  vk::MemoryArena& arena_;
  WeightType storage_;
  vk::Buffer staging_;
  std::unique_ptr<vk::Submission> submissions_[2];
  int half_ = 0;           // the half being filled
  uint64_t filled_ = 0;    // bytes of it
  bool recording_ = false;
};

// A product with one DeviceMatrix: one Matmul per part, bound once to the
// caller's A, C and R buffers.
class Projection {
 public:
  Projection() = default;
  static Result<Projection> create(Context& context, vk::DescriptorArena& arena, const kernels::KernelPlan& plan,
                                   const DeviceMatrix& matrix, vk::BufferBinding a, vk::BufferBinding c,
                                   vk::BufferBinding r = {}, MemoryStorage input = MemoryStorage::f32,
                                   std::optional<ActivationKind> gated = std::nullopt,
                                   std::optional<kernels::RmsInput> rms = std::nullopt);
  // `gated`: the matrix is a matrix_stack [gate; up] of one part, and
  // C[r][o] = act(A[r] . gate[o]) * (A[r] . up[o]) (kernels::Matmul's gated product).
  // `rms`: every part RMS-normalizes the A rows on the way in (kernels::RmsInput).
  // C[r][o] = A[r] . W[o] (+ bias) (+ R[r][o]) for `rows` rows; c and r
  // address whole output rows (the parts write their own columns); A rows
  // are stored as `input` said (fp16: `a` counts words of packed pairs).
  Status record(vk::CommandRecorder& rec, uint32_t rows, kernels::RowRef a, kernels::RowRef c,
              std::optional<kernels::RowRef> residual = std::nullopt) const;

 private:
  const DeviceMatrix* matrix_ = nullptr;
  bool gated_ = false;
  std::vector<kernels::Matmul> parts_;
};

// A product with three stacked matrices (WeightLoader::matrix_stack of
// `rows` rows each, one part, no bias: [wq; wk; wv]) whose outputs go to
// three places: the first matrix's to rows c of binding `c`, the second's
// and third's to rows c2 and c3 of binding `split`. One split product
// (kernels::SplitRows) where the device runs them, else one product per
// matrix over its rows of the same buffer; `rms` as Projection's.
class StackedProjection {
 public:
  StackedProjection() = default;
  static Result<StackedProjection> create(Context& context, vk::DescriptorArena& arena, const kernels::KernelPlan& plan,
                                          const DeviceMatrix& matrix, std::array<uint32_t, 3> rows, vk::BufferBinding a,
                                          vk::BufferBinding c, vk::BufferBinding split,
                                          MemoryStorage input = MemoryStorage::f32,
                                          std::optional<kernels::RmsInput> rms = std::nullopt);
  // c2 and c3: contiguous rows of the split binding.
  Status record(vk::CommandRecorder& rec, uint32_t rows, kernels::RowRef a, kernels::RowRef c, kernels::RowRef c2,
                kernels::RowRef c3) const;
  // Whether one split product runs (else one product per matrix).
  bool split() const { return split_.has_value(); }

 private:
  const DeviceMatrix* matrix_ = nullptr;
  std::array<uint32_t, 3> rows_{};
  std::optional<kernels::Matmul> split_;
  std::vector<kernels::Matmul> each_;
};

}  // namespace attendre::gpu
