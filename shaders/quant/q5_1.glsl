// Q5_1: { fp16 d; fp16 m; uint8 qh[4]; uint8 qs[16] } = 24 bytes,
// x = d * q + m, q in [0, 31] split as in Q5_0.
#include "interface/quant.h"
#define QUANT_BYTES kQ5_1BlockBytes
#define LEGACY_QH 4u
#define LEGACY_QS 8u
#define LEGACY_MIN
#include "quant/legacy.glsl"
