#version 450
// Device arithmetic peak: kBenchFmaChains independent vec4 FMA chains per
// invocation (enough independent work to hide FMA latency on CPUs and
// GPUs alike), kBenchFmaRounds rounds of them per loop iteration. The
// multiplier and addend come from push constants and the chains' sum is
// written out, so the compiler can neither fold nor drop the work.
// attendre-bench counts invocations * iterations * chains * rounds * 8 flops.
//
// Bindings:  0 result vec4[] write (one per invocation)
// Spec constants: 0 workgroup size W
// Push constants: BenchParams (interface/bench.h): iterations, multiplier, addend
// Dispatch: (groups) 1-D
#extension GL_GOOGLE_include_directive : require
#include "interface/bench.h"

layout(local_size_x_id = 0) in;

layout(std430, binding = 0) writeonly buffer Result { vec4 result[]; };

void main() {
  const uint id = gl_GlobalInvocationID.x;
  const vec4 m = vec4(pc.multiplier), c = vec4(pc.addend);
  vec4 x[kBenchFmaChains];
  for (uint k = 0; k < kBenchFmaChains; ++k) x[k] = vec4(float(id & 255u), float(k), 0.5, 0.25) * 0.001;
  for (uint i = 0; i < pc.iterations; ++i) {
    for (uint r = 0; r < kBenchFmaRounds; ++r) {
      for (uint k = 0; k < kBenchFmaChains; ++k) x[k] = fma(x[k], m, c);
    }
  }
  vec4 sum = vec4(0.0);
  for (uint k = 0; k < kBenchFmaChains; ++k) sum += x[k];
  result[id] = sum;
}
