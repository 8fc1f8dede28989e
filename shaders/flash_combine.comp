#version 450
// Merges flash_attend.comp's partials when the slots were split over
// several workgroups (splits > 1): with M = max_s m_s and
// c_s = exp(m_s - M), the row's sum is L = sum_s c_s l_s and its output
// o = sum_s c_s acc_s / L (0 when L = 0: no unmasked entry in any split),
// its log-sum-exp M + log(L). One invocation per (query, head, dim), and
// per (query, head) one more for the log-sum-exp: each walks the splits twice.
//
// Bindings: 0 partials read, 1 outputs and log-sum-exp write
// Spec constants: 0 workgroup size W, 1 HEAD_DIM
// Dispatch: (ceil(heads_q * (HEAD_DIM + 1) / W), queries)
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interface/flash.h"

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint HEAD_DIM = 64;
const uint PARTIAL = ATT_FLASH_PARTIAL_WORDS(HEAD_DIM);

layout(std430, binding = 0) readonly buffer Partials { float partials[]; };
layout(std430, binding = 1) writeonly buffer Outputs { float outputs[]; };

void main() {
  const uint e = gl_GlobalInvocationID.x, query = gl_WorkGroupID.y;
  if (e >= pc.heads_q * (HEAD_DIM + 1u)) return;
  const uint h = e / (HEAD_DIM + 1u), d = e % (HEAD_DIM + 1u);  // d == HEAD_DIM: the log-sum-exp
  const uint row = query * pc.heads_q + h, stride = pc.queries * pc.heads_q * PARTIAL;
  const uint at = pc.partial_offset + row * PARTIAL;

  float top = NEG_INF;
  for (uint s = 0u; s < pc.splits; ++s) top = max(top, partials[at + s * stride + HEAD_DIM]);
  float total = 0.0, value = 0.0;
  if (top != NEG_INF)
    for (uint s = 0u; s < pc.splits; ++s) {
      const uint p = at + s * stride;
      const float m = partials[p + HEAD_DIM];
      if (m == NEG_INF) continue;  // a split with no unmasked entry holds acc = 0, l = 0
      const float c = exp(m - top);
      total = fma(c, partials[p + HEAD_DIM + 1u], total);
      if (d < HEAD_DIM) value = fma(c, partials[p + d], value);
    }
  const uint out_row = (pc.out_first_query + query) * pc.heads_q + h;
  if (d == HEAD_DIM) outputs[pc.lse_offset + out_row] = total > 0.0 ? top + log(total) : NEG_INF;
  else outputs[pc.out_offset + out_row * HEAD_DIM + d] = total > 0.0 ? value / total : 0.0;
}
