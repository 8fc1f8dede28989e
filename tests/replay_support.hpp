// Shared by the attendre-replay tests (test_replay.cpp: results against the
// reference; test_replay_errors.cpp: refusals and output sets): running the
// tool, writing a stream as its .npy inputs, the flags of a layer
// configuration, and reading its result files.
#pragma once

#ifdef ATTENDRE_REPLAY_BINARY

#include "support.hpp"

#include <attendre/config.hpp>
#include "npy/npy.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace attendre::test::replay {

namespace fs = std::filesystem;

inline void put_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out << bytes;
}

inline std::string quote(const std::string& s) { return "'" + s + "'"; }

using Outcome = attendre::test::ToolStreams;

// Runs the tool with `args` (already quoted where needed).
inline Outcome replay(const std::string& args, const std::string& shell_prefix = "") {
  return attendre::test::run_tool_streams(ATTENDRE_REPLAY_BINARY, args, shell_prefix);
}

// Writes the stream's arrays and returns the matching input flags.
inline std::string write_stream(const TempDir& dir, const test::Stream& s, bool valid_and_positions = true) {
  const AttentionShape& sh = s.shape;
  const int64_t T = s.rows;
  const int64_t q_shape[] = {T, sh.heads_q, sh.head_dim}, kv_shape[] = {T, sh.heads_kv, sh.head_dim}, row_shape[] = {T};
  npy::write<float>(dir / "q.npy", q_shape, s.q);
  npy::write<float>(dir / "k.npy", kv_shape, s.k);
  npy::write<float>(dir / "v.npy", kv_shape, s.v);
  std::string args = "--q " + quote(dir / "q.npy") + " --k " + quote(dir / "k.npy") + " --v " + quote(dir / "v.npy");
  if (!valid_and_positions) return args;
  npy::write<uint8_t>(dir / "valid.npy", row_shape, s.valid);
  npy::write<int64_t>(dir / "positions.npy", row_shape, s.positions);
  return args + " --valid " + quote(dir / "valid.npy") + " --positions " + quote(dir / "positions.npy");
}

// The flags describing `c`; only what these tests vary.
inline std::string layer_args(const LayerConfig& c) {
  std::ostringstream a;
  a.precision(17);
  a << " --chunk " << c.chunk << " --q-capacity " << c.q_capacity << " --kv-capacity " << c.kv.capacity
    << " --top-k=" << c.retrieval.top_k << " --policy " << to_string(c.kv.policy.kind);
  if (c.kv.policy.kind == PolicyKind::lfa) a << " --lambda " << c.kv.policy.lambda;
  if (c.kv.policy.attention_scored()) a << " --init-k " << c.kv.policy.initial.k;
  if (c.kv.n_sink) a << " --sinks " << c.kv.n_sink;
  if (c.kv.n_recent) a << " --recent " << c.kv.n_recent;
  if (!c.kv.protect_new) a << " --no-protect-new";
  if (c.retrieval.causal) a << " --causal";
  if (c.retrieval.mode == RetrievalMode::shared) a << " --retrieval shared";
  if (c.retrieval.bias == BiasKind::alibi) a << " --alibi";
  if (c.retrieval.tag_mask) a << " --tag-mask";
  return a.str();
}

struct Files {
  npy::Array outputs, retained, scores;
};

inline Files read_outputs(const std::string& dir) {
  return {npy::read_expect(dir + "/outputs.npy", npy::DType::f32, 3),
          npy::read_expect(dir + "/retained.npy", npy::DType::i64, 2),
          npy::read_expect(dir + "/scores.npy", npy::DType::f64, 2)};
}

}  // namespace attendre::test::replay

#endif
