// Addressing of R(q,h) shared by attend and usage: entry r of a row is a
// slot, either r itself (full attention) or the payload of list entry r.
#ifndef ATTENDRE_RETRIEVED_GLSL
#define ATTENDRE_RETRIEVED_GLSL

uint retrieved_slot(uint query, uint head, uint r) {
  if (pc.full != 0u) return r;
  const uint list_row = pc.shared_lists != 0u ? query : query * pc.heads_q + head;
  return lists[(list_row * pc.list_tiles * pc.list_keep + r) * 3u + 2u];
}

#endif
