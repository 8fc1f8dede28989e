// Block layouts of the GGUF (ggml) weight encodings: values per block and
// bytes per block, shared by the decoding kernels (shaders/quant/*.glsl),
// the host (ElementType, element_block) and the CPU reference codecs
// (lib/gguf/quant_*.cpp). Every block size is even and every fp16 field sits
// at an even byte of its block, so a block may start at any even byte: the
// kernels read blocks as 32-bit words and shift (no 8- or 16-bit storage).
#ifndef ATTENDRE_INTERFACE_QUANT_H
#define ATTENDRE_INTERFACE_QUANT_H
#include "interface/params.h"

ATT_NAMESPACE_BEGIN
// Legacy types: blocks of 32 values with an fp16 scale d (and minimum m).
ATT_CONST(kLegacyBlockValues, 32u)
ATT_CONST(kQ4_0BlockBytes, 18u)  // d, 16 bytes of nibbles
ATT_CONST(kQ4_1BlockBytes, 20u)  // d, m, 16 bytes of nibbles
ATT_CONST(kQ5_0BlockBytes, 22u)  // d, 4 bytes of fifth bits, 16 of nibbles
ATT_CONST(kQ5_1BlockBytes, 24u)  // d, m, 4 + 16
ATT_CONST(kQ8_0BlockBytes, 34u)  // d, 32 int8
// K-quants: super-blocks of 256 values with sub-block scales.
ATT_CONST(kSuperBlockValues, 256u)
ATT_CONST(kQ4_KBlockBytes, 144u)  // d, dmin, 12 bytes of 6-bit scales and mins, 128 of nibbles
ATT_CONST(kQ5_KBlockBytes, 176u)  // as Q4_K plus 32 bytes of fifth bits before the nibbles
ATT_CONST(kQ6_KBlockBytes, 210u)  // 128 bytes of low nibbles, 64 of high pairs, 16 int8 scales, d

// Decode units: the values the matvec and direct kernels decode per step
// (one legacy block; two Q4_K/Q5_K sub-blocks, which share their bytes of
// nibbles; half a Q6_K block, which shares its low and high bits), so that
// every word loaded is used whole.
ATT_CONST(kLegacyUnitValues, 32u)
ATT_CONST(kQ4_KUnitValues, 64u)
ATT_CONST(kQ5_KUnitValues, 64u)
ATT_CONST(kQ6_KUnitValues, 128u)
ATT_NAMESPACE_END

#endif
