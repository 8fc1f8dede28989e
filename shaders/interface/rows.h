// Row addressing shared by the transformer block kernels: row r of a tensor
// lives at word  offset + ((first + r) % capacity) * stride,  so that rows can
// live in ring buffers (capacity = 0xFFFFFFFF and first = 0 for plain
// contiguous rows). ATT_ROWS(p) declares one such reference in a push-constant
// block: four flat uint fields p_offset, p_stride, p_first, p_capacity in
// GLSL (push-constant blocks cannot nest structs portably), and one
// kernels::RowRef member `p` in C++, which has the same four 32-bit words in
// the same order (static_asserts in kernels/rows.hpp).
#ifndef ATTENDRE_INTERFACE_ROWS_H
#define ATTENDRE_INTERFACE_ROWS_H
#include "interface/params.h"

#ifdef __cplusplus
#include "kernels/rows.hpp"
#define ATT_ROWS(p) ::attendre::kernels::RowRef p;
#else
#define ATT_ROWS(p) uint p##_offset; uint p##_stride; uint p##_first; uint p##_capacity;
#endif

#endif
