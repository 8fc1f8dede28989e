// C[r][o] = sum_i A[r][i] * W[o][i] (+ bias[o]) (+ R[r][o]) for `rows` rows of
// `in` floats into `out` floats (matmul.comp, matvec.comp, matmul_direct.comp).
// W is row-major [out][in] in any weight encoding, decoded by the kernels
// (shaders/weights.glsl); the bias is fp32 in the same binding.
#pragma once

#include "kernels/kernel_plan.hpp"
#include "interface/matmul.h"
#include "kernels/kernel.hpp"

#include <attendre/status.hpp>
#include "kernels/rows.hpp"

#include <attendre/transformer.hpp>

#include <optional>

namespace attendre::kernels {

// Whether products over `weights` take matmul_direct.comp: under the direct
// style where subgroup shuffles share the A loads (KernelPlan::direct_share);
// the tiled GEMM and matvec otherwise.
bool direct_matmul(const KernelPlan& plan, ElementType weights);

// A product that RMS-normalizes its fp32 A rows on the way in
// (matmul_direct.comp's RMS_IN): C[r][o] = ((A[r] / rms(A[r])) * g) . W[o]
// (+ bias[o]), rms(a) = sqrt(mean(a^2) + eps), the norm kernel's result
// without its dispatch. `gains` holds g (fp32) from word `offset`, a
// multiple of 4; it takes binding 3, so the product adds no separate R.
struct RmsInput {
  vk::BufferBinding gains;
  uint32_t offset = 0;
  float eps = 0.0f;
};
// Whether products over `weights` reading `input` rows can take an
// RmsInput: the direct kernels with fp32 A rows. Elsewhere (the tiled GEMM
// and matvec split `in` across invocations) the norm runs as its own kernel.
bool folds_rms(const KernelPlan& plan, ElementType weights, MemoryStorage input);

// Outputs split across two bindings (matmul_direct.comp's SPLIT_OUTPUT):
// outputs [0, first) go to the C rows as usual, [first, second) to the
// contiguous rows c2 of the split binding and [second, out) to its
// contiguous rows c3 (c2 and c3 relative to that binding), so that one
// product of stacked matrices ([wq; wk; wv]) writes each matrix's outputs
// where its own product would have.
struct SplitRows {
  uint32_t first = 0, second = 0;
  RowRef c2, c3;
};
// Whether products over `weights` reading `input` rows can split their
// outputs: the direct kernels through texel buffers (fp32 A), on a device
// that allows a fifth storage buffer per stage. Matmul::create may still
// fail (unsupported) where a buffer cannot be viewed as texels.
bool splits_outputs(const DeviceCaps& caps, const KernelPlan& plan, ElementType weights, MemoryStorage input);

// What one matmul_direct invocation computes: a register tile of `rows`
// rows by `outputs` outputs, in workgroups of `workgroup`; `few`: the
// single-row variant for products of at most 2 rows (decoding).
struct DirectTile {
  uint32_t rows, outputs, workgroup;
};
DirectTile direct_tile(const KernelPlan& plan, ElementType weights, bool few);

// Where direct products read their weights and A rows through uniform
// texel buffers (matmul_direct_*_texel): the device has texel buffers
// (DeviceCaps::texel_buffers, not switched off), A rows are fp32, and both
// `w` and `a` can be viewed (buffers of the library's, offsets and sizes
// within the device's texel limits); the shader and the two views then,
// std::nullopt otherwise (the storage-buffer kernels run).
struct TexelWeights {
  ShaderId shader;
  vk::BufferBinding weights, a;
  ShaderId split;  // the split-output build of `shader` (SplitRows)
};
std::optional<TexelWeights> texel_weights(const DeviceCaps& caps, ElementType weights, MemoryStorage input,
                                          const vk::BufferBinding& w, const vk::BufferBinding& a);

class Matmul {
 public:
  struct Args {
    uint32_t rows = 0, in = 0, out = 0;
    RowRef a, c, r;             // r only read when residual
    uint32_t w_offset = 0;      // where W starts: elements of F32/F16/BF16, bytes (even) of block types
                                // (row o then starts at byte w_offset + o * row bytes)
    uint32_t bias_offset = 0;   // words (fp32) of the weight binding: bias[o] at bias_offset + o
    bool bias = false, residual = false;
    std::optional<SplitRows> split;  // only for a product created with a split binding
  };

  Matmul() = default;
  // Bindings: a (A rows), w (weights and bias), c (C rows, written), r (R rows,
  // disjoint from C; an empty binding means that R row r is C row r: the
  // residual is added in place). A must not overlap C. Fails (unsupported)
  // for an encoding without a kernel. `input` is how A rows are stored:
  // fp32, or fp16 pairs packed in words (fp16 activations; the row
  // references then count words of ceil(in / 2)).
  // Only the kernels of the plan's style are built.
  // `gated`: a gated product (matmul_direct.comp's GATED; direct products
  // only, fp32 A): W holds 2 * out rows, the gate rows then the up rows,
  // and C[r][o] = act(A[r] . W[o]) * (A[r] . W[out + o]) in one dispatch,
  // with no bias and no residual.
  // `rms`: A rows are RMS-normalized in the product (RmsInput; fails
  // unless folds_rms holds, or with a separate `r`).
  // `split`: the binding of split outputs (SplitRows; fails (unsupported)
  // unless splits_outputs holds and every texel view can be made; no
  // residual, not gated); every record() then gives Args::split.
  static Result<Matmul> create(Context& context, vk::DescriptorArena& arena, const KernelPlan& plan,
                               ElementType weights, vk::BufferBinding a, vk::BufferBinding w, vk::BufferBinding c,
                               vk::BufferBinding r = {}, MemoryStorage input = MemoryStorage::f32,
                               std::optional<ActivationKind> gated = std::nullopt,
                               std::optional<RmsInput> rms = std::nullopt, vk::BufferBinding split = {});

  // Records the product: on direct-style devices matmul_direct.comp, else
  // the matrix-vector kernel for rows <= kMatvecMaxRows and the tiled GEMM
  // otherwise. No barrier is recorded: the caller orders it
  // against the writes it reads and the reads of what it writes.
  Status record(vk::CommandRecorder& recorder, const Args& args) const;

  // The parameters and workgroup counts record() uses (exposed for tests);
  // the parameters fail as record() does for malformed rows or weights.
  Result<MatmulParams> params(const Args& args) const;
  Grid grid(const Args& args) const;
  bool uses_matvec(uint32_t rows) const { return rows <= kMatvecMaxRows; }
  // Whether the direct kernels read the weights through a texel view (texel_weights).
  bool texel() const { return texel_; }

 private:
  const Kernel& direct_for(uint32_t rows) const;
  // The direct kernels' register tile (direct_tile; two outputs when gated).
  DirectTile tile(bool few) const;
  void label_variant(ShaderId shader);
  // Invocations sharing one output in the matvec kernel.
  uint32_t matvec_lanes(uint32_t in) const;

  KernelPlan plan_;
  ElementType type_ = ElementType::f32;
  bool residual_in_c_ = false;
  bool texel_ = false;
  bool gated_ = false;
  bool split_ = false;
  std::optional<RmsInput> rms_;
  Kernel gemm_, matvec_;
  Kernel direct_, direct_few_;  // direct_few_: the single-row variant (rows <= 2)
};

}  // namespace attendre::kernels
