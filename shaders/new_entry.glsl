// The score a new K/V entry starts with (spec 2.4 table), as raw bits:
// fifo and lru start at the position, lfu at 0 (both int32), lra_* and lfa
// at the float written by score_stats into the chunk.
#ifndef ATTENDRE_NEW_ENTRY_GLSL
#define ATTENDRE_NEW_ENTRY_GLSL

uint initial_score_bits(uint policy, int position, uint init_bits) {
  if (policy == kPolicyFifo || policy == kPolicyLru) return uint(position);
  if (policy == kPolicyLfu) return 0u;
  return init_bits;
}

#endif
