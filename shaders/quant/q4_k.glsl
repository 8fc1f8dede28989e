// Q4_K: { fp16 d; fp16 dmin; uint8 scales[12]; uint8 qs[128] } = 144 bytes
// (layout in k_mins.glsl).
#include "interface/quant.h"
#define QUANT_BYTES kQ4_KBlockBytes
#define K_QS 16u
#include "quant/k_mins.glsl"
