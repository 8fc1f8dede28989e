#include "kernels/embedding.hpp"
#include "core/try.hpp"

namespace attendre::kernels {

// The GLSL block declares the same words flat (ATT_ROWS expands to four uints).
static_assert(offsetof(EmbeddingParams, ids) == 16 && offsetof(EmbeddingParams, first_id) == 48 &&
              sizeof(EmbeddingParams) == 56);

Result<Embedding> Embedding::create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                                    ElementType table_type, vk::BufferBinding ids, vk::BufferBinding table,
                                    vk::BufferBinding out) {
  Embedding e;
  e.plan_ = plan;
  e.type_ = table_type;
  ATTENDRE_TRY_ASSIGN(const ShaderId shader,
                      weight_variant(context, WeightKernel::embedding, table_type, "the embedding table"));
  ATTENDRE_TRY_ASSIGN(e.kernel_, Kernel::make<EmbeddingParams>(context, arena, shader,
                                                               with_fold({plan.workgroup}, plan), {ids, table, out}));
  return e;
}

Status Embedding::record(vk::CommandRecorder& recorder, const Args& args) const {
  if (args.rows == 0 || args.dim == 0) return {};
  ATTENDRE_TRY(check_weight_layout(type_, args.dim, args.table_offset, "embedding table"));
  // The kernel addresses the table in 32-bit elements (float types) or bytes (block types).
  const ElementBlock block = element_block(type_);
  uint64_t extent = uint64_t{args.vocab} * args.dim;
  if (block.values != 1) {
    ATTENDRE_TRY_ASSIGN(extent, encoded_bytes(type_, extent));
  }
  ATTENDRE_REQUIRE(extent + args.table_offset <= 0xFFFFFFFFull, "embedding table larger than 2^32 elements or bytes");
  ATTENDRE_TRY(check_rows(args.ids, args.rows, 1, false, "embedding ids"));
  ATTENDRE_TRY(check_rows(args.out, args.rows, args.dim, true, "embedding output"));
  EmbeddingParams p{};
  p.rows = args.rows;
  p.dim = args.dim;
  p.vocab = args.vocab;
  p.table_offset = args.table_offset;
  p.first_id = args.first_id;
  p.scale = args.scale;
  p.ids = args.ids;
  p.out = args.out;
  const Grid g = fold_groups(uint64_t{args.rows} * ceil_div(args.dim, plan_.workgroup), plan_);
  kernel_.dispatch(recorder, p, g.x, g.y);
  return {};
}

}  // namespace attendre::kernels
