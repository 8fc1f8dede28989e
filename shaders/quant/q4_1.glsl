// Q4_1: { fp16 d; fp16 m; uint8 qs[16] } = 20 bytes, x = d * q + m, q in [0, 15].
#include "interface/quant.h"
#define QUANT_BYTES kQ4_1BlockBytes
#define LEGACY_QS 4u
#define LEGACY_MIN
#include "quant/legacy.glsl"
