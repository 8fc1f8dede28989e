#include "stream_export.hpp"

#include "core/fail.hpp"

#include "npy/npy.hpp"

#include <vector>

namespace reader {

void export_first_block(const Backend& backend, Document& document, int64_t tokens,
                        const attendre::AttentionShape& shape, attendre::apps::OutputSet& out) {
  const std::array<std::string, 3>& names = kStreamFiles;
  const int64_t q_shape[] = {tokens, shape.heads_q, shape.head_dim}, kv_shape[] = {tokens, shape.heads_kv, shape.head_dim};
  attendre::npy::StreamWriter q_file(out.staging() / names[0], attendre::npy::DType::f32, q_shape);
  attendre::npy::StreamWriter k_file(out.staging() / names[1], attendre::npy::DType::f32, kv_shape);
  attendre::npy::StreamWriter v_file(out.staging() / names[2], attendre::npy::DType::f32, kv_shape);
  std::vector<float> q(shape.q_row()), k(shape.kv_row()), v(shape.kv_row());
  std::unique_ptr<TokenStream> tokenizer = backend.make_token_stream();
  document.walk(*tokenizer, [&](const TokenView& t) {
    if (!backend.first_block_qkv(t.token, q, k, v))
      attendre::fail(attendre::ErrorCode::unsupported, "--export-stream: this model's first block depends on more than its tokens");
    q_file.append(std::span<const float>(q));
    k_file.append(std::span<const float>(k));
    v_file.append(std::span<const float>(v));
  });
  q_file.close();
  k_file.close();
  v_file.close();
  out.commit();
}

}  // namespace reader
