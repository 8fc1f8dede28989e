// Q4_0: { fp16 d; uint8 qs[16] } = 18 bytes, x = d * (q - 8), q in [0, 15].
#include "interface/quant.h"
#define QUANT_BYTES kQ4_0BlockBytes
#define LEGACY_QS 2u
#define LEGACY_ZERO 8.0
#include "quant/legacy.glsl"
