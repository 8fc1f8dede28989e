// Q5_0: { fp16 d; uint8 qh[4]; uint8 qs[16] } = 22 bytes, x = d * (q - 16),
// q in [0, 31]: its low 4 bits in the nibbles, its fifth in qh.
#include "interface/quant.h"
#define QUANT_BYTES kQ5_0BlockBytes
#define LEGACY_QH 2u
#define LEGACY_QS 6u
#define LEGACY_ZERO 16.0
#include "quant/legacy.glsl"
