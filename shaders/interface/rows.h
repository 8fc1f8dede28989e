// Row addressing shared by the transformer block kernels: row r of a tensor
// lives at word  offset + ((first + r) % capacity) * stride,  so that rows can
// live in ring buffers (capacity = 0xFFFFFFFF and first = 0 for plain
// contiguous rows). ATT_ROWS(p) declares one such reference in a push-constant
// block: four flat uint fields p_offset, p_stride, p_first, p_capacity in
// GLSL (push-constant blocks cannot nest structs portably), and one
// kernels::RowRef member `p` in C++, which has the same four 32-bit words in
// the same order (static_asserts below).
#ifndef ATTENDRE_INTERFACE_ROWS_H
#define ATTENDRE_INTERFACE_ROWS_H
#include "interface/constants.h"
#include "interface/params.h"

#ifdef __cplusplus
#include <cstddef>

namespace attendre::kernels {

// Where the rows of one tensor live. The default is plain contiguous rows
// from word 0 with stride 0: set stride (words per row) before use.
struct RowRef {
  uint32_t offset = 0;            // words from the start of the binding
  uint32_t stride = 0;            // words between consecutive ring slots
  uint32_t first = 0;             // ring slot of row 0
  uint32_t capacity = kInvalid;   // ring slots (kInvalid: no wrap)

  // Contiguous rows of `stride` words starting at word `offset`.
  static RowRef contiguous(uint32_t stride, uint32_t offset = 0) { return {offset, stride, 0, kInvalid}; }
  // Rows in a ring of `capacity` slots of `stride` words from `offset`, row 0 in slot `first`.
  static RowRef ring(uint32_t stride, uint32_t capacity, uint32_t first, uint32_t offset = 0) {
    return {offset, stride, first, capacity};
  }
  // Word of row r (host mirror of shaders/rows.glsl).
  uint64_t word(uint32_t r) const { return offset + uint64_t{(first + r) % capacity} * stride; }
  bool operator==(const RowRef&) const = default;
};
// The GLSL side declares the same four words as flat push-constant fields.
static_assert(sizeof(RowRef) == 16 && alignof(RowRef) == 4);
static_assert(offsetof(RowRef, stride) == 4 && offsetof(RowRef, first) == 8 && offsetof(RowRef, capacity) == 12);

}  // namespace attendre::kernels

#define ATT_ROWS(p) ::attendre::kernels::RowRef p;
#else
#define ATT_ROWS(p) uint p##_offset; uint p##_stride; uint p##_first; uint p##_capacity;
#endif

// Specialization constant ids of the folded grid's largest extents (FOLD_X
// and FOLD_Y in rows.glsl, set by kernels::with_fold); past every kernel's
// own ids.
#define ATT_FOLD_X_ID 30
#define ATT_FOLD_Y_ID 31

#endif
