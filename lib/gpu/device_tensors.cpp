#include "gpu/device_tensors.hpp"

#include "core/half.hpp"
#include "gpu/layouts.hpp"
#include "gguf/quant.hpp"
#include "core/try.hpp"

#include <attendre/error.hpp>

#include <algorithm>
#include <cstring>

namespace attendre::gpu {
namespace {

// Bytes of `rows` rows of `cols` values in `type`; fails naming the tensor
// when a row is not a whole number of blocks.
Result<uint64_t> row_bytes(ElementType type, uint64_t cols, const std::string& name) {
  const ElementBlock b = element_block(type);
  if (cols % b.values != 0)
    return malformed_input("tensor '" + name + "': rows of " + std::to_string(cols) + " values do not split into " +
                                         std::string(to_string(type)) + " blocks of " + std::to_string(b.values));
  return cols / b.values * b.bytes;
}

// Rows of one part: as many as fit one storage range with their bias slice.
Result<uint64_t> rows_per_part(const DeviceCaps& caps, uint64_t rows, uint64_t per_row, bool bias) {
  // Config checks keep every width >= 1; a row of no bytes would be a width
  // that wrapped to 0 on the way here, and the divisor below.
  if (per_row == 0) return invalid_argument("a weight matrix with rows of 0 bytes");
  const uint64_t fit = (caps.max_storage_range - 512) / (per_row + (bias ? 4 : 0));
  if (fit == 0)
    return Status(ErrorCode::unsupported, "one weight row of " + std::to_string(per_row) + " bytes exceeds the storage range");
  return std::min(rows, fit);
}

// A part's bytes: its rows (padded to a word boundary, then to a section),
// then its bias slice.
uint64_t part_bytes(uint64_t rows, uint64_t per_row, bool bias, uint32_t* bias_offset) {
  const uint64_t weight_words = align_words((rows * per_row + 3) / 4);
  if (bias_offset) *bias_offset = static_cast<uint32_t>(weight_words);
  return (weight_words + (bias ? align_words(rows) : 0)) * 4;
}

}  // namespace

ElementType DeviceMatrix::stored_type(ElementType source, WeightType storage) {
  return source == ElementType::f32 ? element_type(storage) : source;
}

Result<std::vector<uint64_t>> DeviceMatrix::placed_parts(const DeviceCaps& caps, ElementType type, uint64_t rows,
                                                         uint64_t cols, bool bias) {
  ATTENDRE_TRY_ASSIGN(const uint64_t per_row, row_bytes(type, cols, "matrix"));
  ATTENDRE_TRY_ASSIGN(const uint64_t per, rows_per_part(caps, rows, per_row, bias));
  std::vector<uint64_t> parts;
  for (uint64_t first = 0; first < rows; first += per)
    parts.push_back(vk::MemoryArena::placed_bytes(part_bytes(std::min(per, rows - first), per_row, bias, nullptr)));
  return parts;
}

Result<uint64_t> DeviceMatrix::placed_bytes(const DeviceCaps& caps, ElementType type, uint64_t rows, uint64_t cols,
                                            bool bias) {
  ATTENDRE_TRY_ASSIGN(const std::vector<uint64_t> parts, placed_parts(caps, type, rows, cols, bias));
  uint64_t total = 0;
  for (uint64_t p : parts) total += p;
  return total;
}

uint64_t DeviceMatrix::device_bytes() const {
  uint64_t total = 0;
  for (const MatrixPart& p : parts_) total += vk::MemoryArena::placed_bytes(p.buffer.size());
  return total;
}

uint64_t DeviceNorm::placed_bytes(uint64_t dim, bool bias) {
  return vk::MemoryArena::placed_bytes((align_words(dim) + (bias ? align_words(dim) : 0)) * 4);
}

WeightLoader::WeightLoader(Context& context, WeightSource& source, vk::MemoryArena& arena, WeightType storage)
    : context_(context), source_(source), arena_(arena), storage_(storage) {}

WeightLoader::~WeightLoader() {
  // Never leave copies in flight over buffers that may go away; a failed
  // wait (a lost device) leaves the submissions to their own destructors.
  (void)finish();
}

Result<TensorView> WeightLoader::fetch(const std::string& name, std::vector<uint64_t> shape) {
  ATTENDRE_TRY_ASSIGN(const std::optional<TensorView> view, source_.tensor(name, shape));
  if (!view) return invalid_argument("the weights have no tensor '" + name + "'");
  uint64_t values = 1;
  for (uint64_t d : shape) values *= d;
  ATTENDRE_TRY_ASSIGN(const uint64_t per_row, row_bytes(view->type, shape.back(), name));
  const uint64_t expected = per_row * (values / shape.back());
  if (view->bytes.size() != expected)
    return malformed_input("tensor '" + name + "' holds " + std::to_string(view->bytes.size()) + " bytes; " +
                                         std::string(to_string(view->type)) + " of its shape takes " +
                                         std::to_string(expected));
  return *view;
}

Result<DeviceMatrix> WeightLoader::matrix(const MatrixSpec& spec) {
  DeviceMatrix m;
  FinishOnFailure guard(*this);
  ATTENDRE_TRY_ASSIGN(TensorView view, fetch(spec.name, {spec.rows, spec.cols}));
  m.type_ = DeviceMatrix::stored_type(view.type, storage_);
  m.rows_ = static_cast<uint32_t>(spec.rows);
  m.cols_ = static_cast<uint32_t>(spec.cols);
  m.has_bias_ = spec.bias.has_value();
  std::vector<std::byte> converted;  // fp32 stored as fp16: one tensor at a time
  view.bytes = stored_bytes(view, m.type_, converted);
  ATTENDRE_TRY_ASSIGN(const uint64_t per_row, row_bytes(m.type_, spec.cols, spec.name));
  ATTENDRE_TRY_ASSIGN(const uint64_t per, rows_per_part(context_.caps(), spec.rows, per_row, m.has_bias_));
  for (uint64_t first = 0; first < spec.rows; first += per) {
    MatrixPart part;
    part.first_row = static_cast<uint32_t>(first);
    part.rows = static_cast<uint32_t>(std::min(per, spec.rows - first));
    ATTENDRE_TRY_ASSIGN(part.buffer, vk::Buffer::create(arena_, part_bytes(part.rows, per_row, m.has_bias_, &part.bias_offset),
                                                        spec.name.c_str()));
    ATTENDRE_TRY(write(part.buffer, 0, view.bytes.subspan(first * per_row, part.rows * per_row)));
    m.parts_.push_back(std::move(part));
  }
  if (spec.bias) {
    // The bias may come from the same source call buffer: fetch it after the rows went out.
    ATTENDRE_TRY_ASSIGN(const TensorView bias, fetch(spec.bias->name, {spec.bias->size}));
    std::vector<double> values;
    if (bias.type != ElementType::f32) {
      ATTENDRE_TRY_ASSIGN(values, gguf::dequantize(static_cast<gguf::TensorType>(bias.type), bias.bytes));
    }
    for (MatrixPart& part : m.parts_) {
      std::vector<float> slice(part.rows);
      for (uint32_t r = 0; r < part.rows; ++r) {
        if (values.empty()) std::memcpy(&slice[r], bias.bytes.data() + uint64_t{part.first_row + r} * 4, 4);
        else slice[r] = static_cast<float>(values[part.first_row + r]);
      }
      ATTENDRE_TRY(write(part.buffer, uint64_t{part.bias_offset} * 4, std::as_bytes(std::span<const float>(slice))));
    }
  }
  guard.succeeded();
  return m;
}

std::span<const std::byte> WeightLoader::stored_bytes(const TensorView& view, ElementType type,
                                                     std::vector<std::byte>& converted) {
  if (type == view.type) return view.bytes;
  const uint64_t count = view.bytes.size() / 4;
  converted.resize(count * 2);
  for (uint64_t i = 0; i < count; ++i) {
    float x;
    std::memcpy(&x, view.bytes.data() + i * 4, 4);
    const uint16_t h = half::float_to_half(x);
    std::memcpy(converted.data() + i * 2, &h, 2);
  }
  return converted;
}

Result<ElementType> WeightLoader::stored_type_of(const MatrixSpec& spec) {
  const uint64_t shape[] = {spec.rows, spec.cols};
  ATTENDRE_TRY_ASSIGN(const std::optional<ElementType> type, source_.type_of(spec.name, shape));
  if (!type) return invalid_argument("the weights have no tensor '" + spec.name + "'");
  return DeviceMatrix::stored_type(*type, storage_);
}

Result<DeviceMatrix> WeightLoader::matrix_stack(std::initializer_list<const MatrixSpec*> specs) {
  std::string names;
  for (const MatrixSpec* spec : specs) names += (names.empty() ? "'" : ", '") + spec->name + "'";
  const MatrixSpec& first = **specs.begin();
  DeviceMatrix m;
  FinishOnFailure guard(*this);
  uint64_t rows = 0;
  for (const MatrixSpec* spec : specs) {
    ATTENDRE_REQUIRE(spec->cols == first.cols && !spec->bias,
                     "matrices " + names + " are not a stack of one row length without biases");
    rows += spec->rows;
  }
  ATTENDRE_REQUIRE(rows <= 0xFFFFFFFFull, "matrices " + names + " stack to more than 2^32 rows");
  m.rows_ = static_cast<uint32_t>(rows);
  m.cols_ = static_cast<uint32_t>(first.cols);
  uint64_t per_row = 0, at = 0;
  MatrixPart part;
  part.rows = m.rows_;
  for (const MatrixSpec* spec : specs) {
    ATTENDRE_TRY_ASSIGN(TensorView view, fetch(spec->name, {spec->rows, spec->cols}));
    const ElementType type = DeviceMatrix::stored_type(view.type, storage_);
    if (spec == &first) {
      m.type_ = type;
      ATTENDRE_TRY_ASSIGN(per_row, row_bytes(type, spec->cols, spec->name));
      ATTENDRE_TRY_ASSIGN(const uint64_t per, rows_per_part(context_.caps(), m.rows_, per_row, false));
      ATTENDRE_REQUIRE(per >= m.rows_, "matrices " + names + " do not fit one buffer");
      ATTENDRE_TRY_ASSIGN(part.buffer, vk::Buffer::create(arena_, part_bytes(part.rows, per_row, false, &part.bias_offset),
                                                          first.name.c_str()));
    }
    ATTENDRE_REQUIRE(type == m.type_, "matrices " + names + " are stored in different encodings");
    std::vector<std::byte> converted;
    ATTENDRE_TRY(write(part.buffer, at * per_row, stored_bytes(view, type, converted)));
    at += spec->rows;
  }
  m.parts_.push_back(std::move(part));
  guard.succeeded();
  return m;
}

Result<DeviceNorm> WeightLoader::norm(const VectorSpec& gain, const std::optional<VectorSpec>& shift) {
  DeviceNorm n;
  FinishOnFailure guard(*this);
  n.bias_offset = static_cast<uint32_t>(align_words(gain.size));
  ATTENDRE_TRY_ASSIGN(n.buffer, vk::Buffer::create(arena_, (align_words(gain.size) + (shift ? align_words(gain.size) : 0)) * 4,
                                                   gain.name.c_str()));
  auto put = [&](const VectorSpec& spec, uint64_t offset) -> Status {
    ATTENDRE_TRY_ASSIGN(const TensorView view, fetch(spec.name, {spec.size}));
    if (view.type == ElementType::f32) return write(n.buffer, offset, view.bytes);
    // Norm vectors are small: decoded to fp32 on the host, whatever they were stored as.
    ATTENDRE_TRY_ASSIGN(const std::vector<double> values,
                        gguf::dequantize(static_cast<gguf::TensorType>(view.type), view.bytes));
    const std::vector<float> floats(values.begin(), values.end());
    return write(n.buffer, offset, std::as_bytes(std::span<const float>(floats)));
  };
  ATTENDRE_TRY(put(gain, 0));
  if (shift) ATTENDRE_TRY(put(*shift, uint64_t{n.bias_offset} * 4));
  guard.succeeded();
  return n;
}

Result<std::vector<double>> WeightLoader::values(const std::string& name, std::vector<uint64_t> shape) {
  FinishOnFailure guard(*this);
  ATTENDRE_TRY_ASSIGN(const TensorView view, fetch(name, shape));
  guard.succeeded();
  if (view.type != ElementType::f32) return gguf::dequantize(static_cast<gguf::TensorType>(view.type), view.bytes);
  std::vector<float> floats(view.bytes.size() / 4);
  std::memcpy(floats.data(), view.bytes.data(), floats.size() * 4);
  return std::vector<double>(floats.begin(), floats.end());
}

WeightLoader::FinishOnFailure::~FinishOnFailure() {
  if (!succeeded_) (void)loader_.finish();  // a failed wait leaves the copies to the submissions' destructors
}

uint64_t WeightLoader::constants_bytes(uint64_t count) { return vk::MemoryArena::placed_bytes(align_words(count) * 4); }

Result<vk::Buffer> WeightLoader::constants(std::span<const float> values, const char* label) {
  vk::Buffer buffer;
  FinishOnFailure guard(*this);
  ATTENDRE_TRY_ASSIGN(buffer, vk::Buffer::create(arena_, align_words(values.size()) * 4, label));
  ATTENDRE_TRY(write(buffer, 0, std::as_bytes(values)));
  guard.succeeded();
  return buffer;
}

Status WeightLoader::write(const vk::Buffer& dst, uint64_t offset, std::span<const std::byte> data) {
  if (data.empty()) return {};
  if (void* host = dst.host_write_pointer()) {
    std::memcpy(static_cast<std::byte*>(host) + offset, data.data(), data.size());
    return dst.flush_host_writes();  // nothing to do on coherent memory
  }
  if (!staging_) {
    ATTENDRE_TRY_ASSIGN(vk::Buffer staging,
                        vk::Buffer::create(context_, kStagingBytes, vk::MemoryIntent::upload, "weight staging"));
    for (auto& s : submissions_) {
      ATTENDRE_TRY_ASSIGN(vk::Submission submission, vk::Submission::create(context_));
      s = std::make_unique<vk::Submission>(std::move(submission));
    }
    staging_ = std::move(staging);
  }
  const uint64_t half_bytes = kStagingBytes / 2;
  while (!data.empty()) {
    if (filled_ == half_bytes) ATTENDRE_TRY(submit_half());
    if (!recording_) {
      ATTENDRE_TRY(submissions_[half_]->begin());  // waits until the copies out of this half are done
      recording_ = true;
    }
    const uint64_t n = std::min<uint64_t>(data.size(), half_bytes - filled_);
    const uint64_t at = half_ * half_bytes + filled_;
    std::memcpy(static_cast<std::byte*>(staging_.mapped()) + at, data.data(), n);
    submissions_[half_]->recorder().copy(staging_, at, dst, offset, n);
    filled_ += n;
    offset += n;
    data = data.subspan(n);
  }
  return {};
}

Status WeightLoader::submit_half() {
  const bool recorded = recording_;
  recording_ = false;
  filled_ = 0;
  const int half = half_;
  half_ ^= 1;
  return recorded ? submissions_[half]->submit() : Status{};
}

Status WeightLoader::finish() {
  if (recording_) ATTENDRE_TRY(submit_half());
  for (auto& s : submissions_)
    if (s) ATTENDRE_TRY(s->wait());
  return {};
}

Result<Projection> Projection::create(Context& context, vk::DescriptorArena& arena, const kernels::KernelPlan& plan,
                                      const DeviceMatrix& matrix, vk::BufferBinding a, vk::BufferBinding c,
                                      vk::BufferBinding r, MemoryStorage input, std::optional<ActivationKind> gated,
                                      std::optional<kernels::RmsInput> rms) {
  Projection p;
  p.matrix_ = &matrix;
  p.gated_ = gated.has_value();
  ATTENDRE_REQUIRE(!gated || (matrix.parts().size() == 1 && !matrix.has_bias()),
                   "a gated projection needs its [gate; up] matrix in one part, without bias");
  for (const MatrixPart& part : matrix.parts()) {
    ATTENDRE_TRY_ASSIGN(kernels::Matmul m, kernels::Matmul::create(context, arena, plan, matrix.type(), a,
                                                                   vk::BufferBinding{&part.buffer}, c, r, input, gated, rms));
    p.parts_.push_back(std::move(m));
  }
  return p;
}

Status Projection::record(vk::CommandRecorder& rec, uint32_t rows, kernels::RowRef a, kernels::RowRef c,
                        std::optional<kernels::RowRef> residual) const {
  for (size_t i = 0; i < parts_.size(); ++i) {
    const MatrixPart& part = matrix_->parts()[i];
    kernels::Matmul::Args args;
    args.rows = rows;
    args.in = matrix_->cols();
    args.out = gated_ ? part.rows / 2 : part.rows;  // gated: the gate rows' outputs
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
    ATTENDRE_TRY(parts_[i].record(rec, args));
  }
  return {};
}

namespace {

// Where row `row` of a `type` matrix of `cols` columns starts, in the units
// of MatmulParams::w_offset (elements of the float types, bytes of the block types).
Result<uint32_t> row_offset(ElementType type, uint32_t cols, uint32_t row) {
  const ElementBlock b = element_block(type);
  const uint64_t at = b.values == 1 ? uint64_t{row} * cols : uint64_t{row} * (cols / b.values) * b.bytes;
  ATTENDRE_REQUIRE(at <= 0xFFFFFFFFull, "a stacked matrix's rows start past 2^32 units");
  return static_cast<uint32_t>(at);
}

}  // namespace

Result<StackedProjection> StackedProjection::create(Context& context, vk::DescriptorArena& arena,
                                                    const kernels::KernelPlan& plan, const DeviceMatrix& matrix,
                                                    std::array<uint32_t, 3> rows, vk::BufferBinding a,
                                                    vk::BufferBinding c, vk::BufferBinding split, MemoryStorage input,
                                                    std::optional<kernels::RmsInput> rms) {
  ATTENDRE_REQUIRE(matrix.parts().size() == 1 && !matrix.has_bias() && uint64_t{rows[0]} + rows[1] + rows[2] == matrix.rows(),
                   "a stacked projection needs its matrices in one part, without bias, of as many rows as they sum to");
  StackedProjection p;
  p.matrix_ = &matrix;
  p.rows_ = rows;
  const vk::BufferBinding w{&matrix.parts()[0].buffer};
  if (kernels::splits_outputs(context.caps(), plan, matrix.type(), input)) {
    Result<kernels::Matmul> one =
        kernels::Matmul::create(context, arena, plan, matrix.type(), a, w, c, {}, input, std::nullopt, rms, split);
    if (one.ok()) {
      p.split_ = std::move(one).value();
      return p;
    }
    if (one.status().code() != ErrorCode::unsupported) return std::move(one).status();  // else one product per matrix below
  }
  for (size_t i = 0; i < rows.size(); ++i) {
    ATTENDRE_TRY_ASSIGN(kernels::Matmul m, kernels::Matmul::create(context, arena, plan, matrix.type(), a, w,
                                                                   i == 0 ? c : split, {}, input, std::nullopt, rms));
    p.each_.push_back(std::move(m));
  }
  return p;
}

Status StackedProjection::record(vk::CommandRecorder& rec, uint32_t rows, kernels::RowRef a, kernels::RowRef c,
                                 kernels::RowRef c2, kernels::RowRef c3) const {
  kernels::Matmul::Args args;
  args.rows = rows;
  args.in = matrix_->cols();
  args.a = a;
  if (split_) {
    args.out = matrix_->rows();
    args.c = c;
    args.split = kernels::SplitRows{rows_[0], rows_[0] + rows_[1], c2, c3};
    return split_->record(rec, args);
  }
  const kernels::RowRef outputs[] = {c, c2, c3};
  uint32_t first_row = 0;
  for (size_t i = 0; i < each_.size(); ++i) {
    args.out = rows_[i];
    args.c = outputs[i];
    ATTENDRE_TRY_ASSIGN(args.w_offset, row_offset(matrix_->type(), matrix_->cols(), first_row));
    ATTENDRE_TRY(each_[i].record(rec, args));
    first_row += rows_[i];
  }
  return {};
}

}  // namespace attendre::gpu
