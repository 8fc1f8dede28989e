// The three result files of spec section 6, written into one folder while
// the layer runs. retained.npy and scores.npy ([steps, M] each) go to disk
// row by row as steps complete: with a large M they are far larger than
// anything the replay holds, so they are never assembled in memory and
// their -1 / NaN padding is written in small blocks. outputs.npy
// ([T, H_q, D], the size of q.npy) is filled in memory, since its rows
// arrive in emission order, and written at the end.
#pragma once

#include <attendre/config.hpp>
#include "npy/npy.hpp"

#include <array>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace attendre::replay {

class ResultFiles {
 public:
  static constexpr std::array<const char*, 3> kNames = {"outputs.npy", "retained.npy", "scores.npy"};

  // Creates the three files in `folder` for `rows` input rows and exactly
  // `steps` steps of a memory of capacity M.
  ResultFiles(const std::filesystem::path& folder, const AttentionShape& shape, uint64_t rows, uint64_t steps,
              uint32_t capacity);

  // Input row `row`'s slot in outputs.npy; NaN until written.
  std::span<float> output_row(uint64_t row);

  // One step's retained positions (ascending) and their scores, at most M
  // of each; the rest of the row is padded with -1 and NaN.
  void append_step(std::span<const int64_t> positions, std::span<const double> scores);

  uint64_t steps_written() const { return steps_written_; }

  // Writes outputs.npy and completes the three files (each fsynced).
  // Throws invalid_argument when fewer steps than promised were appended.
  void close();

 private:
  uint64_t row_floats_ = 0, steps_ = 0, steps_written_ = 0;
  uint32_t capacity_ = 0;
  std::vector<float> outputs_;
  npy::StreamWriter outputs_file_, retained_, scores_;
};

}  // namespace attendre::replay
