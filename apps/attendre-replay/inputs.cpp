// The input side of the replay file contract (spec section 6). Every check
// names the file and states expected vs found, because the typical failure
// is a capture script that saved the wrong array.
#include "inputs.hpp"
#include "core/fail.hpp"

#include <attendre/error.hpp>

#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace attendre::replay {
namespace {

[[noreturn]] void bad_input(const std::string& file, const std::string& message) {
  fail(ErrorCode::malformed_input, file + ": " + message);
}

std::string shape_of(const npy::Array& array) { return npy::shape_string(array.shape); }

// Rank-1 arrays of length T: valid, positions, tags.
void expect_rows(const npy::Array& array, const std::string& file, uint64_t rows) {
  if (array.shape[0] != static_cast<int64_t>(rows))
    bad_input(file, "shape " + shape_of(array) + ", expected (" + std::to_string(rows) + ",) to match the " +
                        std::to_string(rows) + " rows of q");
}

uint32_t head_count(int64_t dim) {
  return dim >= 1 && dim <= std::numeric_limits<uint32_t>::max() ? static_cast<uint32_t>(dim) : 0u;
}

// The layer refuses non-finite values in valid rows (they would make every
// ordering meaningless); padding rows are never read, so neither are
// invalid rows here.
void expect_finite(const npy::Array& array, const std::string& file, const std::vector<uint8_t>& valid) {
  const uint64_t heads = static_cast<uint64_t>(array.shape[1]), dims = static_cast<uint64_t>(array.shape[2]);
  const auto values = array.as<float>();
  for (uint64_t row = 0; row < valid.size(); ++row) {
    if (!valid[row]) continue;
    for (uint64_t i = 0; i < heads * dims; ++i) {
      const float x = values[row * heads * dims + i];
      if (std::isfinite(x)) continue;
      bad_input(file, "row " + std::to_string(row) + " (head " + std::to_string(i / dims) + ", dim " +
                          std::to_string(i % dims) + "): " + (std::isnan(x) ? "NaN" : x > 0 ? "inf" : "-inf") +
                          ", expected finite values in every valid row");
    }
  }
}

// The largest head norm over the valid rows of `array` [T, heads, dims], and its row.
struct Largest {
  double norm = 0.0;
  uint64_t row = 0;
};
Largest largest_head_norm(const npy::Array& array, const std::vector<uint8_t>& valid) {
  const uint64_t heads = static_cast<uint64_t>(array.shape[1]), dims = static_cast<uint64_t>(array.shape[2]);
  const auto values = array.as<float>();
  Largest best;
  for (uint64_t row = 0; row < valid.size(); ++row) {
    if (!valid[row]) continue;
    for (uint64_t h = 0; h < heads; ++h) {
      double squares = 0.0;
      for (uint64_t d = 0; d < dims; ++d) {
        const double x = values[(row * heads + h) * dims + d];
        squares += x * x;
      }
      if (std::sqrt(squares) > best.norm) best = {std::sqrt(squares), row};
    }
  }
  return best;
}

std::string g(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g", value);
  return text;
}

std::vector<uint32_t> load_tags(const std::string& file, uint64_t rows) {
  const npy::Array array = npy::read(file);
  if (array.dtype != npy::DType::u32 && array.dtype != npy::DType::i64)
    bad_input(file, "dtype is " + npy::to_string(array.dtype) + ", expected uint32 or int64");
  if (array.shape.size() != 1)
    bad_input(file, "shape " + shape_of(array) + " has " + std::to_string(array.shape.size()) +
                        " dims, expected 1 (T,)");
  expect_rows(array, file, rows);
  if (array.dtype == npy::DType::u32) {
    const auto values = array.as<uint32_t>();
    return {values.begin(), values.end()};
  }
  std::vector<uint32_t> tags;
  tags.reserve(rows);
  const auto values = array.as<int64_t>();
  for (size_t r = 0; r < values.size(); ++r) {
    if (values[r] < 0 || values[r] > std::numeric_limits<uint32_t>::max())
      bad_input(file, "row " + std::to_string(r) + " holds " + std::to_string(values[r]) +
                          ", expected a tag in [0, 2^32)");
    tags.push_back(static_cast<uint32_t>(values[r]));
  }
  return tags;
}

}  // namespace

void check_magnitudes(const Options& o, const Inputs& in, const LayerConfig& config) {
  const Largest q = largest_head_norm(in.q, in.valid), k = largest_head_norm(in.k, in.valid);
  const double scale = std::abs(config.scale()), logit = scale * q.norm * k.norm;
  if (logit > kMaxLogitMagnitude)
    bad_input(o.q_path, "row " + std::to_string(q.row) + " and " + o.k_path + " row " + std::to_string(k.row) +
                            ": scale * |q| * |k| reaches " + g(logit) + ", over the limit of " +
                            g(kMaxLogitMagnitude) + " that keeps float32 logits finite; scale the inputs down");
  const auto values = in.v.as<float>();
  const uint64_t row_floats = in.shape.kv_row();
  for (uint64_t row = 0; row < in.rows; ++row) {
    if (!in.valid[row]) continue;
    for (uint64_t i = 0; i < row_floats; ++i)
      if (std::abs(static_cast<double>(values[row * row_floats + i])) > kMaxValueMagnitude)
        bad_input(o.v_path, "row " + std::to_string(row) + " holds |v| = " + g(values[row * row_floats + i]) +
                                ", over the limit of " + g(kMaxValueMagnitude) +
                                " that keeps float32 attention outputs finite");
  }
}

ChunkView Inputs::chunk(uint64_t first, uint32_t count) const {
  const uint64_t q_row = shape.q_row(), kv_row = shape.kv_row();
  ChunkView c;
  c.rows = count;
  c.q = q.as<float>().subspan(first * q_row, count * q_row);
  c.k = k.as<float>().subspan(first * kv_row, count * kv_row);
  c.v = v.as<float>().subspan(first * kv_row, count * kv_row);
  c.positions = std::span<const int64_t>(positions).subspan(first, count);
  c.valid = std::span<const uint8_t>(valid).subspan(first, count);
  if (!tags.empty()) c.tags = std::span<const uint32_t>(tags).subspan(first, count);
  return c;
}

Inputs load_inputs(const Options& o) {
  Inputs in;
  in.q = npy::read_expect(o.q_path, npy::DType::f32, 3);
  const std::vector<int64_t>& qs = in.q.shape;
  in.rows = static_cast<uint64_t>(qs[0]);
  in.shape.heads_q = head_count(qs[1]);
  in.shape.head_dim = head_count(qs[2]);
  if (in.shape.heads_q == 0 || in.shape.head_dim == 0)
    bad_input(o.q_path, "shape " + shape_of(in.q) + ", expected (T, H_q, D) with H_q and D in [1, 2^32)");
  // A row's floats are counted in 32 bits (AttentionShape::q_row(), and
  // the layer's buffers): past that the count wraps into a small, wrong
  // row. No data is needed to claim it: a file of T = 0 rows does.
  if (uint64_t{in.shape.heads_q} * in.shape.head_dim > std::numeric_limits<uint32_t>::max())
    bad_input(o.q_path, "shape " + shape_of(in.q) + ": H_q * D = " +
                            std::to_string(uint64_t{in.shape.heads_q} * in.shape.head_dim) +
                            " floats per row, more than 2^32 - 1");

  in.k = npy::read_expect(o.k_path, npy::DType::f32, 3);
  const std::vector<int64_t>& ks = in.k.shape;
  in.shape.heads_kv = head_count(ks[1]);
  if (ks[0] != qs[0] || ks[2] != qs[2] || in.shape.heads_kv == 0)
    bad_input(o.k_path, "shape " + shape_of(in.k) + ", expected (" + std::to_string(qs[0]) + ", H_kv, " +
                            std::to_string(qs[2]) + ") to match q " + shape_of(in.q));
  if (in.shape.heads_q % in.shape.heads_kv != 0)
    bad_input(o.k_path, "H_kv=" + std::to_string(in.shape.heads_kv) + " key/value heads, but q's H_q=" +
                            std::to_string(in.shape.heads_q) + " is not a multiple of it");

  in.v = npy::read_expect(o.v_path, npy::DType::f32, 3);
  if (in.v.shape != ks)
    bad_input(o.v_path, "shape " + shape_of(in.v) + ", expected " + shape_of(in.k) + " like k");

  if (o.valid_path) {
    const npy::Array valid = npy::read_expect(*o.valid_path, npy::DType::u8, 1);
    expect_rows(valid, *o.valid_path, in.rows);
    const auto flags = valid.as<uint8_t>();
    for (size_t r = 0; r < flags.size(); ++r)
      if (flags[r] > 1)
        bad_input(*o.valid_path, "row " + std::to_string(r) + " holds " + std::to_string(flags[r]) +
                                     ", expected 0 or 1");
    in.valid.assign(flags.begin(), flags.end());
  } else {
    in.valid.assign(in.rows, 1);
  }

  if (o.positions_path) {
    const npy::Array positions = npy::read_expect(*o.positions_path, npy::DType::i64, 1);
    expect_rows(positions, *o.positions_path, in.rows);
    const auto values = positions.as<int64_t>();
    in.positions.assign(values.begin(), values.end());
  } else {
    in.positions.resize(in.rows);
    for (uint64_t r = 0; r < in.rows; ++r) in.positions[r] = static_cast<int64_t>(r);
  }
  expect_finite(in.q, o.q_path, in.valid);
  expect_finite(in.k, o.k_path, in.valid);
  expect_finite(in.v, o.v_path, in.valid);

  // The layer checks the order too, but per chunk; here the message names
  // the file's rows, and the output mapping relies on the order.
  const std::string positions_file = o.positions_path.value_or("positions");
  bool seen = false;
  uint64_t last_row = 0;
  for (uint64_t r = 0; r < in.rows; ++r) {
    if (!in.valid[r]) continue;
    if (seen && in.positions[r] <= in.positions[last_row])
      bad_input(positions_file, "positions must strictly increase over valid rows: row " + std::to_string(r) +
                                    " holds " + std::to_string(in.positions[r]) + " after " +
                                    std::to_string(in.positions[last_row]) + " at row " + std::to_string(last_row));
    seen = true;
    last_row = r;
    // The GPU path stores positions as int32; the reference takes any int64.
    if (o.device == Device::gpu && (in.positions[r] < std::numeric_limits<int32_t>::min() ||
                                    in.positions[r] > std::numeric_limits<int32_t>::max()))
      bad_input(positions_file, "row " + std::to_string(r) + " holds " + std::to_string(in.positions[r]) +
                                    ", outside the int32 positions of --device gpu (--device cpu takes int64)");
  }

  if (o.tags_path) in.tags = load_tags(*o.tags_path, in.rows);
  return in;
}

}  // namespace attendre::replay
