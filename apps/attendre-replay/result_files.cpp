#include "result_files.hpp"

#include "common/output_set.hpp"
#include "core/fail.hpp"

#include <attendre/error.hpp>

#include <limits>
#include <string>

namespace attendre::replay {
namespace {

constexpr float kNoOutput = std::numeric_limits<float>::quiet_NaN();
constexpr double kNoScore = std::numeric_limits<double>::quiet_NaN();
constexpr int64_t kNoPosition = -1;

std::array<int64_t, 3> output_shape(const AttentionShape& shape, uint64_t rows) {
  return {static_cast<int64_t>(rows), shape.heads_q, shape.head_dim};
}

std::array<int64_t, 2> step_shape(uint64_t steps, uint32_t capacity) {
  return {static_cast<int64_t>(steps), capacity};
}

}  // namespace

ResultFiles::ResultFiles(const std::filesystem::path& folder, const AttentionShape& shape, uint64_t rows,
                         uint64_t steps, uint32_t capacity)
    : row_floats_(shape.q_row()),
      steps_(steps),
      capacity_(capacity),
      outputs_(rows * shape.q_row(), kNoOutput),
      outputs_file_(folder / kNames[0], npy::DType::f32, output_shape(shape, rows)),
      retained_(folder / kNames[1], npy::DType::i64, step_shape(steps, capacity)),
      scores_(folder / kNames[2], npy::DType::f64, step_shape(steps, capacity)) {}

std::span<float> ResultFiles::output_row(uint64_t row) {
  return std::span<float>(outputs_).subspan(row * row_floats_, row_floats_);
}

void ResultFiles::append_step(std::span<const int64_t> positions, std::span<const double> scores) {
  require(positions.size() == scores.size() && positions.size() <= capacity_,
          "ResultFiles: a step holds " + std::to_string(positions.size()) + " positions and " +
              std::to_string(scores.size()) + " scores, capacity M=" + std::to_string(capacity_));
  require(steps_written_ < steps_, "ResultFiles: more than the " + std::to_string(steps_) + " steps promised");
  retained_.append(positions);
  retained_.append_repeated(kNoPosition, capacity_ - positions.size());
  if (steps_written_ == 0) apps::inject_failure_at("write");
  scores_.append(scores);
  scores_.append_repeated(kNoScore, capacity_ - scores.size());
  ++steps_written_;
}

void ResultFiles::close() {
  require(steps_written_ == steps_, "ResultFiles: " + std::to_string(steps_written_) + " steps written, " +
                                        std::to_string(steps_) + " promised");
  outputs_file_.append(std::span<const float>(outputs_));
  outputs_file_.close();
  retained_.close();
  scores_.close();
}

}  // namespace attendre::replay
