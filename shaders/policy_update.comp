#version 450
// Policy score update (spec 2.4) for every held entry, one invocation per
// slot, folding the batch's queries in order. A step's queries may come in
// several batches: the first batch starts the replace-style scores from 0
// (entries retrieved by no query get 0) and applies lfa's decay once.
//   lru       s = max(s, max p_q over queries that used j)        (int32)
//   lfu       s += number of queries that used j                   (int32)
//   lra_last  s = u(q_last, j)
//   lra_max   s = max_q u(q, j)
//   lra_sum   s = sum_q u(q, j)
//   lfa       s = s * exp(lambda (i_prev - i_max)) + sum_q u(q, j) exp(lambda (p_q - i_max))
// with u(q, j) = usage[q][j] / heads_q. fifo never reaches this kernel.
//
// Bindings: 0 K/V memory (scores read/write), 1 usage read, 2 Q ring read
// Spec constants: 0 workgroup size W
// Dispatch: (ceil(held / W))
#extension GL_GOOGLE_include_directive : require
#include "common.glsl"
#include "interface/policy.h"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) buffer KvMemory { uint kv[]; };
layout(std430, binding = 1) readonly buffer Usage { uint usage[]; };
layout(std430, binding = 2) readonly buffer QRing { uint ring[]; };

float u(uint q, uint j) { return uintBitsToFloat(usage[q * pc.usage_stride + j]) * pc.inv_heads; }
bool used(uint q, uint j) { return usage[pc.used_offset + q * pc.usage_stride + j] != 0u; }
int query_position(uint q) { return int(ring[pc.ring_pos_offset + (pc.ring_first + q) % pc.ring_capacity]); }
// Padding queries retrieve nothing; skipping them also keeps their
// arbitrary positions out of lfa's exponentials.
bool valid(uint q) { return ring[pc.ring_valid_offset + (pc.ring_first + q) % pc.ring_capacity] != 0u; }

void main() {
  const uint j = gl_GlobalInvocationID.x;
  if (j >= pc.held) return;
  const uint bits = kv[pc.kv_score_offset + j];
  const bool first = pc.first_batch != 0u;

  if (pc.policy == kPolicyLru || pc.policy == kPolicyLfu) {
    int s = int(bits);
    for (uint q = 0u; q < pc.queries; ++q)
      if (used(q, j)) s = pc.policy == kPolicyLru ? max(s, query_position(q)) : s + 1;
    kv[pc.kv_score_offset + j] = uint(s);
    return;
  }

  float s = uintBitsToFloat(bits);
  if (pc.policy == kPolicyLraLast) {
    if (first) s = 0.0;
    if (pc.last_query != kInvalid) s = u(pc.last_query, j);
  } else if (pc.policy == kPolicyLraMax) {
    if (first) s = 0.0;
    for (uint q = 0u; q < pc.queries; ++q) s = max(s, u(q, j));
  } else if (pc.policy == kPolicyLraSum) {
    if (first) s = 0.0;
    for (uint q = 0u; q < pc.queries; ++q) s += u(q, j);
  } else if (pc.policy == kPolicyLfa) {
    if (first) s *= exp(pc.lambda * float(pc.i_prev - pc.i_max));
    for (uint q = 0u; q < pc.queries; ++q)
      if (valid(q)) s += u(q, j) * exp(pc.lambda * float(query_position(q) - pc.i_max));
  }
  kv[pc.kv_score_offset + j] = floatBitsToUint(s);
}
