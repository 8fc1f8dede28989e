// What a replay will take, computed before it starts: the bytes of the
// result files against the free space where --out lives, and the host
// memory the chosen path holds against the machine's. A run that cannot fit
// is refused in a moment, with the figure needed, the figure available and
// the flag to change, instead of failing hours in or taking the machine down.
#pragma once

#include "cli.hpp"
#include "common/human_bytes.hpp"
#include "inputs.hpp"

#include <attendre/config.hpp>

#include <cstdint>
#include <filesystem>
#include <string>

namespace attendre::replay {

using apps::human_bytes;

// Throws io_error when the three result files need more than the file
// system holding `out` (or its nearest existing parent) has free, e.g.
// "the results need 25.6 GiB (retained.npy and scores.npy are steps x M =
// 3 x 268435456) but /tmp has 12.1 GiB free; lower --kv-capacity ...".
void check_disk_space(const Options& options, const Inputs& inputs, const LayerConfig& config, uint64_t steps);

// Throws out_of_host_memory when what the run holds on the host (the inputs,
// the outputs, and on --device cpu the reference's memories) is more than
// this machine's physical memory.
void check_host_memory(const Options& options, const Inputs& inputs, const LayerConfig& config, uint64_t steps);

}  // namespace attendre::replay
