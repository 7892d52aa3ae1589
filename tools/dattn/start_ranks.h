#pragma once
// One command on one host: when no launcher started this process and the parallel flags ask for N > 1
// ranks, dattn becomes mpirun starting N copies of itself (parallel/self_start.h).
#include <string>
#include <vector>

#include "dattn/core/device.h"
#include "dattn/parallel_option.h"

namespace dattn::tool {

// Returns when there is nothing to start: a degree product of 1, a process a launcher started (it joins
// in join_ranks), or DATTN_SPAWN=off (join_ranks then refuses the product). Otherwise checks, before any
// work, the degrees, MPI in this build, a GPU per rank on CUDA and the launcher, and execs it with `args`
// (the command line after the program name); UserError naming what is missing and the mpirun command
// that would start the ranks instead.
void start_ranks_when_alone(const ParallelFlags& flags, Device device, const std::vector<std::string>& args);

}  // namespace dattn::tool
