// Model tensors on the device. A matrix (with its optional bias) lives in
// buffers of at most one storage range each: a matrix larger than that (an
// LM head over a big vocabulary) is split by output rows into parts, each
// multiplied by its own dispatch.
#pragma once

#include "core/model_weights.hpp"
#include "kernels/matmul.hpp"
#include "vulkan/buffer.hpp"

#include <attendre/transformer.hpp>

#include <memory>
#include <vector>

namespace attendre::gpu {

// Copies host data into device buffers through one reusable staging buffer.
class Uploader {
 public:
  explicit Uploader(Context& context) : context_(context) {}
  void upload(const vk::Buffer& dst, uint64_t dst_bytes, const void* data, uint64_t bytes);

 private:
  Context& context_;
  vk::Buffer staging_;
};

struct MatrixPart {
  vk::Buffer buffer;     // weights, then the bias slice at bias_offset words
  uint32_t first_row = 0;
  uint32_t rows = 0;
  uint32_t bias_offset = 0;
};

class DeviceMatrix {
 public:
  DeviceMatrix() = default;
  DeviceMatrix(Context& context, Uploader& uploader, WeightType type, const Tensor& weights, const Tensor* bias);
  // Bytes a matrix of rows x cols (with a bias or not) takes, as allocated.
  static uint64_t bytes(const DeviceCaps& caps, WeightType type, uint64_t rows, uint64_t cols, bool bias);

  const std::vector<MatrixPart>& parts() const { return parts_; }
  WeightType type() const { return type_; }
  uint32_t rows() const { return rows_; }
  uint32_t cols() const { return cols_; }
  bool has_bias() const { return has_bias_; }
  uint64_t device_bytes() const;

 private:
  std::vector<MatrixPart> parts_;
  WeightType type_ = WeightType::f32;
  uint32_t rows_ = 0, cols_ = 0;
  bool has_bias_ = false;
};

// A product with one DeviceMatrix: one Matmul per part, bound once to the
// caller's A, C and R buffers.
class Projection {
 public:
  Projection() = default;
  Projection(Context& context, vk::DescriptorArena& arena, const kernels::KernelPlan& plan, const DeviceMatrix& matrix,
             vk::BufferBinding a, vk::BufferBinding c, vk::BufferBinding r = {});
  // C[r][o] = A[r] . W[o] (+ bias) (+ R[r][o]) for `rows` rows; c and r
  // address whole output rows (the parts write their own columns).
  void record(vk::CommandRecorder& rec, uint32_t rows, kernels::RowRef a, kernels::RowRef c,
              std::optional<kernels::RowRef> residual = std::nullopt) const;

 private:
  const DeviceMatrix* matrix_ = nullptr;
  std::vector<kernels::Matmul> parts_;
};

// Norm gain (and LayerNorm shift) vectors in one small buffer.
struct DeviceNorm {
  vk::Buffer buffer;
  uint32_t bias_offset = 0;
  DeviceNorm() = default;
  DeviceNorm(Context& context, Uploader& uploader, const Tensor& gain, const Tensor* bias);
  static uint64_t bytes(uint64_t dim, bool bias);
};

}  // namespace attendre::gpu
