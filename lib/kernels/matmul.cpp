#include "kernels/matmul.hpp"

#include "vulkan/buffer.hpp"
#include "core/try.hpp"

#include <algorithm>
#include <optional>

namespace attendre::kernels {

// The GLSL block declares the same words flat (ATT_ROWS expands to four uints).
static_assert(offsetof(MatmulParams, a) == 32 && sizeof(MatmulParams) == 112);

namespace {

// Elements of `in` each matvec invocation should own at least, so that the
// reduction's barriers are amortized; lanes = pow2 >= in / kMatvecElements.
constexpr uint32_t kMatvecElements = 8;

constexpr uint32_t kDirectFewRows = 2;

// The direct product that reads `type` weights through a uniform texel
// buffer (matmul_direct_*_texel), its split-output build (*_texel_split)
// and the view's format.
struct TexelProduct {
  ElementType type;
  ShaderId shader, split;
  VkFormat format;
};
constexpr TexelProduct kTexelProducts[] = {
    {ElementType::f32, ShaderId::matmul_direct_f32_texel, ShaderId::matmul_direct_f32_texel_split,
     VK_FORMAT_R32G32B32A32_SFLOAT},
    {ElementType::f16, ShaderId::matmul_direct_f16_texel, ShaderId::matmul_direct_f16_texel_split,
     VK_FORMAT_R16G16B16A16_SFLOAT},
    {ElementType::bf16, ShaderId::matmul_direct_bf16_texel, ShaderId::matmul_direct_bf16_texel_split,
     VK_FORMAT_R32G32_UINT},
    {ElementType::q4_0, ShaderId::matmul_direct_q4_0_texel, ShaderId::matmul_direct_q4_0_texel_split, VK_FORMAT_R32_UINT},
    {ElementType::q4_1, ShaderId::matmul_direct_q4_1_texel, ShaderId::matmul_direct_q4_1_texel_split, VK_FORMAT_R32_UINT},
    {ElementType::q5_0, ShaderId::matmul_direct_q5_0_texel, ShaderId::matmul_direct_q5_0_texel_split, VK_FORMAT_R32_UINT},
    {ElementType::q5_1, ShaderId::matmul_direct_q5_1_texel, ShaderId::matmul_direct_q5_1_texel_split, VK_FORMAT_R32_UINT},
    {ElementType::q8_0, ShaderId::matmul_direct_q8_0_texel, ShaderId::matmul_direct_q8_0_texel_split, VK_FORMAT_R32_UINT},
    {ElementType::q4_k, ShaderId::matmul_direct_q4_k_texel, ShaderId::matmul_direct_q4_k_texel_split, VK_FORMAT_R32_UINT},
    {ElementType::q5_k, ShaderId::matmul_direct_q5_k_texel, ShaderId::matmul_direct_q5_k_texel_split, VK_FORMAT_R32_UINT},
    {ElementType::q6_k, ShaderId::matmul_direct_q6_k_texel, ShaderId::matmul_direct_q6_k_texel_split, VK_FORMAT_R32_UINT},
};

// Storage buffers a split product binds: A, W, C, R (or the gains) and the split outputs.
constexpr uint32_t kSplitStorageBuffers = 5;

}  // namespace

std::optional<TexelWeights> texel_weights(const DeviceCaps& caps, ElementType weights, MemoryStorage input,
                                          const vk::BufferBinding& w, const vk::BufferBinding& a) {
  if (input != MemoryStorage::f32) return std::nullopt;  // texel_view refuses the rest
  for (const TexelProduct& t : kTexelProducts) {
    if (t.type != weights) continue;
    Result<vk::BufferBinding> w_view = w.texel_view(caps, t.format);
    Result<vk::BufferBinding> a_view = a.texel_view(caps, VK_FORMAT_R32G32B32A32_SFLOAT);
    if (!w_view.ok() || !a_view.ok()) return std::nullopt;
    return TexelWeights{t.shader, w_view.value(), a_view.value(), t.split};
  }
  return std::nullopt;
}

bool splits_outputs(const DeviceCaps& caps, const KernelPlan& plan, ElementType weights, MemoryStorage input) {
  if (!direct_matmul(plan, weights) || input != MemoryStorage::f32) return false;
  if (!caps.texel_buffers || caps.max_storage_buffers < kSplitStorageBuffers) return false;
  return std::any_of(std::begin(kTexelProducts), std::end(kTexelProducts),
                     [&](const TexelProduct& t) { return t.type == weights; });
}

// Loads per FMA set the speed on a CPU device (matmul_direct.comp): a tile
// of R rows by O outputs reads each weight once for R rows and each A
// value once for O outputs. Measured on lavapipe (README, "Kernel
// performance"). Decoding (rows <= kDirectFewRows) takes a single-row
// variant that multiplies nothing in vain. Small workgroups keep every CPU
// thread busy on matrices of a few hundred outputs. One invocation's loop
// stays far below lavapipe's iteration limit (in / 4 per logical group).
DirectTile direct_tile(const KernelPlan& plan, ElementType type, bool few) {
  const uint32_t workgroup = plan.direct_matmul_workgroup;
  if (decode_unit(type) == 1)
    return few ? DirectTile{1, plan.direct_few_float_outputs, workgroup}
               : DirectTile{plan.direct_float_rows, plan.direct_float_outputs, workgroup};
  return few ? DirectTile{1, plan.direct_few_block_outputs, workgroup}
             : DirectTile{plan.direct_block_rows, plan.direct_block_outputs, workgroup};
}

bool direct_matmul(const KernelPlan& plan, ElementType) { return plan.direct && plan.direct_share > 0; }

bool folds_rms(const KernelPlan& plan, ElementType weights, MemoryStorage input) {
  return direct_matmul(plan, weights) && input == MemoryStorage::f32;
}

Result<Matmul> Matmul::create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan, ElementType weights,
                              vk::BufferBinding a, vk::BufferBinding w, vk::BufferBinding c, vk::BufferBinding r,
                              MemoryStorage input, std::optional<ActivationKind> gated,
                              std::optional<RmsInput> rms, vk::BufferBinding split) {
  Matmul m;
  m.plan_ = plan;
  m.type_ = weights;
  m.gated_ = gated.has_value();
  m.split_ = split.buffer != nullptr;
  if (m.split_) {
    if (!splits_outputs(context.caps(), plan, weights, input))
      return Status{ErrorCode::unsupported, "a split product needs the direct kernels over fp32 A rows, texel buffers and " +
                                                std::to_string(kSplitStorageBuffers) + " storage buffers per stage"};
    ATTENDRE_REQUIRE(!gated && !r.buffer, "a split product is not gated and adds no separate R");
  }
  if (rms) {
    ATTENDRE_REQUIRE(folds_rms(plan, weights, input), "an RMS-normalizing product needs the direct kernels and fp32 A rows");
    ATTENDRE_REQUIRE(!r.buffer, "an RMS-normalizing product reads its gains where R would be: no separate R");
    ATTENDRE_REQUIRE(rms->gains.buffer && rms->offset % 4 == 0, "an RMS-normalizing product needs gains from a multiple of 4 words");
    m.rms_ = rms;
  }
  if (gated) {
    ATTENDRE_REQUIRE(direct_matmul(plan, weights) && input == MemoryStorage::f32,
                     "a gated product needs the direct kernels and fp32 A rows");
  }
  const std::string what = "matmul over '" + (w.buffer ? w.buffer->label() : std::string("weights")) + "'";
  // Without a separate R, the residual (if any) is read from C itself, and
  // binding 3 takes A: it must hold a buffer, and one the dispatch only reads.
  m.residual_in_c_ = !r.buffer;
  if (rms) r = rms->gains;
  if (!r.buffer) r = a;
  m.plan_.direct = direct_matmul(plan, weights);
  if (m.plan_.direct) {
    const DirectTile many = m.tile(false), few = m.tile(true);
    // Gated: GATED = 1 + the activation kind, each invocation's two outputs a gate and an up row.
    const uint32_t gated_spec = gated ? 1u + static_cast<uint32_t>(*gated) : 0u;
    const uint32_t rms_spec = rms ? 1u : 0u;
    const std::vector<uint32_t> many_spec =
        with_fold({many.workgroup, many.rows, plan.direct_share, many.outputs, gated_spec, rms_spec}, plan);
    const std::vector<uint32_t> few_spec =
        with_fold({few.workgroup, few.rows, plan.direct_share, few.outputs, gated_spec, rms_spec}, plan);
    // Texel-buffer weights and A (and the gains) where the device has them
    // and can view every range; the storage-buffer loads otherwise.
    std::optional<TexelWeights> texel = texel_weights(context.caps(), weights, input, w, a);
    std::optional<vk::BufferBinding> gain_texels;
    if (texel) {
      // Binding 6 is read under RMS_IN only: plain products bind A's view.
      Result<vk::BufferBinding> view = rms ? r.texel_view(context.caps(), VK_FORMAT_R32G32B32A32_SFLOAT)
                                           : Result<vk::BufferBinding>(texel->a);
      if (view.ok()) gain_texels = view.value();
    }
    if (texel && gain_texels && m.split_) {
      m.texel_ = true;
      ATTENDRE_TRY_ASSIGN(m.direct_, Kernel::make<MatmulParams>(context, arena, texel->split, many_spec,
                                                                {a, w, c, r, texel->weights, texel->a, *gain_texels, split}));
      ATTENDRE_TRY_ASSIGN(m.direct_few_, Kernel::make<MatmulParams>(context, arena, texel->split, few_spec,
                                                                    {a, w, c, r, texel->weights, texel->a, *gain_texels, split}));
      m.label_variant(texel->split);
      return m;
    }
    if (m.split_)
      return Status{ErrorCode::unsupported, what + ": a split product reads its weights, A rows and gains as texels, "
                                                   "and one of them cannot be viewed so"};
    if (texel && gain_texels) {
      m.texel_ = true;
      ATTENDRE_TRY_ASSIGN(m.direct_, Kernel::make<MatmulParams>(context, arena, texel->shader, many_spec,
                                                                {a, w, c, r, texel->weights, texel->a, *gain_texels}));
      ATTENDRE_TRY_ASSIGN(m.direct_few_, Kernel::make<MatmulParams>(context, arena, texel->shader, few_spec,
                                                                    {a, w, c, r, texel->weights, texel->a, *gain_texels}));
      m.label_variant(texel->shader);
      return m;
    }
    ATTENDRE_TRY_ASSIGN(const ShaderId direct, weight_variant(context, WeightKernel::direct, weights, what, input));
    ATTENDRE_TRY_ASSIGN(m.direct_, Kernel::make<MatmulParams>(context, arena, direct, many_spec, {a, w, c, r}));
    ATTENDRE_TRY_ASSIGN(m.direct_few_, Kernel::make<MatmulParams>(context, arena, direct, few_spec, {a, w, c, r}));
    m.label_variant(direct);
    return m;
  }
  ATTENDRE_TRY_ASSIGN(const ShaderId gemm, weight_variant(context, WeightKernel::gemm, weights, what, input));
  ATTENDRE_TRY_ASSIGN(m.gemm_, Kernel::make<MatmulParams>(
                                   context, arena, gemm,
                                   with_fold({plan.matmul_workgroup, plan.matmul_tile_rows, plan.matmul_tile_outputs,
                                              plan.matmul_tile_in, plan.matmul_micro_rows, plan.matmul_micro_outputs},
                                             plan),
                                   {a, w, c, r}));
  ATTENDRE_TRY_ASSIGN(const ShaderId matvec, weight_variant(context, WeightKernel::matvec, weights, what, input));
  ATTENDRE_TRY_ASSIGN(m.matvec_, Kernel::make<MatmulParams>(context, arena, matvec,
                                                            with_fold({plan.matvec_workgroup}, plan), {a, w, c, r}));
  return m;
}

Result<MatmulParams> Matmul::params(const Args& args) const {
  ATTENDRE_REQUIRE(args.split.has_value() == split_, split_ ? "a split product needs its split rows (Args::split)"
                                                            : "matmul: split rows need a product created with a split binding");
  const SplitRows split = args.split.value_or(SplitRows{args.out, args.out, {}, {}});
  ATTENDRE_REQUIRE(split.first <= split.second && split.second <= args.out,
                   "matmul: split outputs need first <= second <= out");
  ATTENDRE_TRY(check_rows(args.a, args.rows, args.in, false, "matmul A"));
  ATTENDRE_TRY(check_rows(args.c, args.rows, split.first, true, "matmul C"));
  if (args.split) {
    for (const RowRef* rows : {&split.c2, &split.c3})
      ATTENDRE_REQUIRE(rows->first == 0 && rows->capacity == kInvalid, "matmul: split output rows must be contiguous");
    ATTENDRE_TRY(check_rows(split.c2, args.rows, split.second - split.first, true, "matmul split C2"));
    ATTENDRE_TRY(check_rows(split.c3, args.rows, args.out - split.second, true, "matmul split C3"));
    ATTENDRE_REQUIRE(!args.residual, "a split product adds no residual");
  }
  if (args.residual) ATTENDRE_TRY(check_rows(args.r, args.rows, args.out, false, "matmul R"));
  if (args.residual && residual_in_c_)
    ATTENDRE_REQUIRE(args.r == args.c,
                     "matmul: a residual added in place needs R rows to be the C rows (bind a separate R otherwise)");
  ATTENDRE_TRY(check_weight_layout(type_, args.in, args.w_offset, "matmul W"));
  if (gated_) ATTENDRE_REQUIRE(!args.bias && !args.residual, "a gated product adds no bias and no residual");
  MatmulParams p{};
  p.rows = args.rows;
  p.in_dim = args.in;
  p.out_dim = args.out;
  p.w_offset = args.w_offset;
  p.bias_offset = args.bias_offset;
  p.has_bias = args.bias ? 1u : 0u;
  p.has_residual = !args.residual ? kResidualNone : residual_in_c_ ? kResidualInC : kResidualSeparate;
  p.a = args.a;
  p.c = args.c;
  p.r = args.r;
  p.lanes = matvec_lanes(args.in);
  p.split_first = split.first;
  p.split_second = split.second;
  p.c2_offset = split.c2.offset;
  p.c2_stride = split.c2.stride;
  p.c3_offset = split.c3.offset;
  p.c3_stride = split.c3.stride;
  if (rms_) {
    p.norm_offset = rms_->offset;
    p.norm_eps = rms_->eps;
  }
  return p;
}

// Matvec: enough lanes per output that each owns ~kMatvecElements of `in`
// (float types) or one decode unit (block types).
uint32_t Matmul::matvec_lanes(uint32_t in) const {
  const uint32_t unit = decode_unit(type_);
  const uint32_t share = unit == 1 ? ceil_div(in, kMatvecElements) : in / unit;
  return std::min(plan_.matvec_workgroup, next_pow2(std::max(1u, share)));
}

// Profiles tell gated products (gate, up and activation in one) and
// RMS-normalizing ones from plain ones by a "_gated" and a "_rms" suffix on
// the shader's name.
void Matmul::label_variant(ShaderId shader) {
  if (!gated_ && !rms_) return;
  const std::string label = std::string(shaders::name(shader)) + (gated_ ? "_gated" : "") + (rms_ ? "_rms" : "");
  direct_.set_label(label);
  direct_few_.set_label(label);
}

DirectTile Matmul::tile(bool few) const {
  DirectTile t = direct_tile(plan_, type_, few);
  if (gated_) t.outputs = 2;  // a gate and an up row of one output
  return t;
}

const Kernel& Matmul::direct_for(uint32_t rows) const {
  return rows <= kDirectFewRows ? direct_few_ : direct_;
}

Grid Matmul::grid(const Args& args) const {
  if (plan_.direct) {
    const DirectTile s = tile(args.rows <= kDirectFewRows);
    const uint32_t outputs = gated_ ? s.workgroup : s.workgroup * s.outputs;  // per logical group
    return fold_groups(uint64_t{ceil_div(args.out, outputs)} * ceil_div(args.rows, s.rows), plan_);
  }
  if (uses_matvec(args.rows)) {
    const uint32_t per_group = plan_.matvec_workgroup / matvec_lanes(args.in);
    return fold_groups(ceil_div(args.out, per_group), plan_);
  }
  return fold_groups(uint64_t{ceil_div(args.out, plan_.matmul_tile_outputs)} * ceil_div(args.rows, plan_.matmul_tile_rows),
                     plan_);
}

Status Matmul::record(vk::CommandRecorder& recorder, const Args& args) const {
  if (args.rows == 0 || args.out == 0) return {};
  ATTENDRE_TRY_ASSIGN(const MatmulParams p, params(args));
  const Grid g = grid(args);
  (plan_.direct ? direct_for(args.rows) : uses_matvec(args.rows) ? matvec_ : gemm_).dispatch(recorder, p, g.x, g.y);
  return {};
}

}  // namespace attendre::kernels
