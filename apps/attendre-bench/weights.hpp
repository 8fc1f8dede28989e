// The weight-reading products over the presets' matrix shapes in every
// weight encoding the kernels decode (F32, F16, BF16 and the GGUF block
// types): matvec (one row, decoding) and matmul (a chunk of S rows), each
// dispatched alone and timed with GPU timestamps, rated by the encoded
// weight bytes it reads against the device's copy bandwidth.
#pragma once

#include "options.hpp"
#include "results.hpp"

#include <attendre/context.hpp>

namespace bench {

void sweep_weight_kernels(attendre::Context& context, const Options& options, Results& results);

}  // namespace bench
