// Q5_K: { fp16 d; fp16 dmin; uint8 scales[12]; uint8 qh[32]; uint8 qs[128] }
// = 176 bytes (layout in k_mins.glsl).
#include "interface/quant.h"
#define QUANT_BYTES kQ5_KBlockBytes
#define K_QH 16u
#define K_QS 48u
#include "quant/k_mins.glsl"
