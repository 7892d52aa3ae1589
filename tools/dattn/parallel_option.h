#pragma once
// The parallel flags of dattn generate and dattn serve (--tensor-parallel-size, --ulysses-degree,
// --cfg-parallel-size), the --guidance option they interact with, and the ranks a run joins.
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "dattn/core/device.h"
#include "dattn/parallel/groups.h"
#include "dattn/parallel/world.h"
#include "dattn/pipeline/guidance.h"

namespace dattn::tool {

struct ParallelFlags {
  parallel::ParallelDegrees degrees;
};

void add_parallel_options(CLI::App& app, ParallelFlags& flags);

// --guidance's value: sequential, batched or cfg-parallel; nullopt when not given.
std::optional<GuidanceMode> guidance_from_option(const std::string& text);

// The ranks of a run and their groups. The World keeps MPI initialised while the run lasts.
struct RunRanks {
  parallel::World world;
  parallel::ParallelGroups groups;
  int device_index = 0;  // the GPU of this rank on a CUDA run: its rank on this host
};

// On CUDA, each rank takes its own GPU: UserError "--device cuda: <what>, which has G visible GPU(s) ..."
// when `ranks_on_host` ranks outnumber this host's GPUs. No-op for the CPU.
void require_gpu_per_rank(Device device, int ranks_on_host, const std::string& what);

// Joins the ranks mpirun started (or this process alone), checks the degrees against their number and,
// on CUDA, that this host has a GPU for each of its ranks. Ranks other than 0 print nothing from here
// on but their errors (rank_output.h). UserError naming the flag and what was expected.
RunRanks join_ranks(const ParallelFlags& flags, Device device);

// The guidance mode of a run: CfgParallel with a CFG group of 2 (refusing another explicit --guidance),
// the given one otherwise.
std::optional<GuidanceMode> run_guidance(const ParallelFlags& flags, std::optional<GuidanceMode> given);

}  // namespace dattn::tool
