#include "kernels/embedding.hpp"
#include "core/fail.hpp"

namespace attendre::kernels {

// The GLSL block declares the same words flat (ATT_ROWS expands to four uints).
static_assert(offsetof(EmbeddingParams, ids) == 16 && offsetof(EmbeddingParams, first_id) == 48 &&
              sizeof(EmbeddingParams) == 52);

Embedding::Embedding(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan, ElementType table_type,
                     vk::BufferBinding ids, vk::BufferBinding table, vk::BufferBinding out)
    : plan_(plan), type_(table_type) {
  const ShaderId shader = weight_variant(context, WeightKernel::embedding, table_type, "the embedding table");
  kernel_ = Kernel::make<EmbeddingParams>(context, arena, shader, {plan.workgroup}, {ids, table, out});
}

void Embedding::record(vk::CommandRecorder& recorder, const Args& args) const {
  if (args.rows == 0 || args.dim == 0) return;
  check_weight_layout(type_, args.dim, args.table_offset, "embedding table");
  // The kernel addresses the table in 32-bit elements (float types) or bytes (block types).
  const ElementBlock block = element_block(type_);
  const uint64_t extent = block.values == 1 ? uint64_t{args.vocab} * args.dim : encoded_bytes(type_, uint64_t{args.vocab} * args.dim);
  require(extent + args.table_offset <= 0xFFFFFFFFull, "embedding table larger than 2^32 elements or bytes");
  check_rows(args.ids, args.rows, 1, false, "embedding ids");
  check_rows(args.out, args.rows, args.dim, true, "embedding output");
  EmbeddingParams p{};
  p.rows = args.rows;
  p.dim = args.dim;
  p.vocab = args.vocab;
  p.table_offset = args.table_offset;
  p.first_id = args.first_id;
  p.ids = args.ids;
  p.out = args.out;
  const Grid g = fold_groups(uint64_t{args.rows} * ceil_div(args.dim, plan_.workgroup), plan_);
  kernel_.dispatch(recorder, p, g.x, g.y);
}

}  // namespace attendre::kernels
