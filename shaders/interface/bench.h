// bench_copy.comp and bench_fma.comp: the device limits attendre-bench
// measures every kernel against (copy bandwidth, FMA throughput).
#ifndef ATTENDRE_INTERFACE_BENCH_H
#define ATTENDRE_INTERFACE_BENCH_H
#include "interface/params.h"

ATT_NAMESPACE_BEGIN
// Independent vec4 FMA chains per invocation of bench_fma, and rounds of
// them per loop iteration: chains * rounds * 4 lanes * 2 flops per iteration.
ATT_CONST(kBenchFmaChains, 8u)
ATT_CONST(kBenchFmaRounds, 4u)

ATT_PARAMS_BEGIN(BenchParams)
  ATT_U32(count)       // bench_copy: elements (vec4, or float for COPY_SCALAR) to copy
  ATT_U32(iterations)  // bench_fma: loop iterations per invocation
  ATT_F32(multiplier)  // bench_fma: x = x * multiplier + addend, |multiplier| < 1 keeps x bounded
  ATT_F32(addend)
ATT_PARAMS_END(BenchParams)
ATT_NAMESPACE_END

#endif
