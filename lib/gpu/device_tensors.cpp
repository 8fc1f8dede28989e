#include "gpu/device_tensors.hpp"

#include "gpu/layouts.hpp"
#include "core/half.hpp"
#include "vulkan/commands.hpp"

#include <attendre/error.hpp>

#include <algorithm>
#include <cstring>

namespace attendre::gpu {
namespace {

uint64_t element_bytes(WeightType type) { return type == WeightType::f16 ? 2 : 4; }

// Rows of one part: as many as fit one storage range with their bias slice.
uint64_t rows_per_part(const DeviceCaps& caps, WeightType type, uint64_t rows, uint64_t cols, bool bias) {
  const uint64_t per_row = cols * element_bytes(type) + (bias ? 4 : 0);
  const uint64_t fit = (caps.max_storage_range - 512) / per_row;
  if (fit == 0) fail(ErrorCode::unsupported, "one weight row of " + std::to_string(cols) + " columns exceeds the storage range");
  return std::min(rows, fit);
}

uint64_t part_bytes(WeightType type, uint64_t rows, uint64_t cols, bool bias, uint32_t* bias_offset) {
  const uint64_t weight_words = align_words((rows * cols * element_bytes(type) + 3) / 4);
  if (bias_offset) *bias_offset = static_cast<uint32_t>(weight_words);
  return (weight_words + (bias ? align_words(rows) : 0)) * 4;
}

}  // namespace

void Uploader::upload(const vk::Buffer& dst, uint64_t dst_bytes, const void* data, uint64_t bytes) {
  if (bytes == 0) return;
  if (!staging_ || staging_.size() < bytes)
    staging_ = vk::Buffer(context_, std::max<uint64_t>(bytes, 1 << 20), vk::MemoryIntent::upload, "weight staging");
  std::memcpy(staging_.mapped(), data, bytes);
  vk::Submission submission(context_);
  vk::CommandRecorder& rec = submission.begin();
  rec.copy(staging_, 0, dst, dst_bytes, bytes);
  submission.submit();
  submission.wait();
}

uint64_t DeviceMatrix::bytes(const DeviceCaps& caps, WeightType type, uint64_t rows, uint64_t cols, bool bias) {
  const uint64_t per = rows_per_part(caps, type, rows, cols, bias);
  uint64_t total = 0;
  for (uint64_t first = 0; first < rows; first += per)
    total += part_bytes(type, std::min(per, rows - first), cols, bias, nullptr);
  return total;
}

DeviceMatrix::DeviceMatrix(Context& context, Uploader& uploader, WeightType type, const Tensor& w, const Tensor* bias)
    : type_(type), rows_(static_cast<uint32_t>(w.rows())), cols_(static_cast<uint32_t>(w.cols())), has_bias_(bias) {
  const uint64_t per = rows_per_part(context.caps(), type, rows_, cols_, has_bias_);
  for (uint64_t first = 0; first < rows_; first += per) {
    MatrixPart part;
    part.first_row = static_cast<uint32_t>(first);
    part.rows = static_cast<uint32_t>(std::min(per, rows_ - first));
    const uint64_t size = part_bytes(type, part.rows, cols_, has_bias_, &part.bias_offset);
    part.buffer = vk::Buffer(context, size, vk::MemoryIntent::device, w.name.c_str());
    const float* rows = w.data.data() + first * cols_;
    const uint64_t count = uint64_t{part.rows} * cols_;
    if (type == WeightType::f16) {
      const std::vector<uint16_t> half = half::to_half({rows, count});
      uploader.upload(part.buffer, 0, half.data(), count * 2);
    } else {
      uploader.upload(part.buffer, 0, rows, count * 4);
    }
    if (bias) uploader.upload(part.buffer, uint64_t{part.bias_offset} * 4, bias->data.data() + first, uint64_t{part.rows} * 4);
    parts_.push_back(std::move(part));
  }
}

uint64_t DeviceMatrix::device_bytes() const {
  uint64_t total = 0;
  for (const MatrixPart& p : parts_) total += p.buffer.size();
  return total;
}

Projection::Projection(Context& context, vk::DescriptorArena& arena, const kernels::KernelPlan& plan,
                       const DeviceMatrix& matrix, vk::BufferBinding a, vk::BufferBinding c, vk::BufferBinding r)
    : matrix_(&matrix) {
  for (const MatrixPart& part : matrix.parts())
    parts_.emplace_back(context, arena, plan, matrix.type(), a, vk::BufferBinding{&part.buffer}, c, r);
}

void Projection::record(vk::CommandRecorder& rec, uint32_t rows, kernels::RowRef a, kernels::RowRef c,
                        std::optional<kernels::RowRef> residual) const {
  for (size_t i = 0; i < parts_.size(); ++i) {
    const MatrixPart& part = matrix_->parts()[i];
    kernels::Matmul::Args args;
    args.rows = rows;
    args.in = matrix_->cols();
    args.out = part.rows;
    args.a = a;
    args.c = c;
    args.c.offset += part.first_row;  // this part's columns of each output row
    args.bias = matrix_->has_bias();
    args.bias_offset = part.bias_offset;
    if (residual) {
      args.residual = true;
      args.r = *residual;
      args.r.offset += part.first_row;
    }
    parts_[i].record(rec, args);
  }
}

DeviceNorm::DeviceNorm(Context& context, Uploader& uploader, const Tensor& gain, const Tensor* bias)
    : buffer(context, bytes(gain.data.size(), bias), vk::MemoryIntent::device, gain.name.c_str()),
      bias_offset(static_cast<uint32_t>(align_words(gain.data.size()))) {
  uploader.upload(buffer, 0, gain.data.data(), gain.data.size() * 4);
  if (bias) uploader.upload(buffer, uint64_t{bias_offset} * 4, bias->data.data(), bias->data.size() * 4);
}

uint64_t DeviceNorm::bytes(uint64_t dim, bool bias) { return (align_words(dim) + (bias ? align_words(dim) : 0)) * 4; }

}  // namespace attendre::gpu
