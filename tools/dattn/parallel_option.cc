// The parallel flags and the ranks of a run (see parallel_option.h).
#include "dattn/parallel_option.h"

#include <string>

#include "dattn/core/error.h"
#include "dattn/integer_option.h"
#include "dattn/rank_output.h"

namespace dattn::tool {

void add_parallel_options(CLI::App& app, ParallelFlags& flags) {
  const std::string group = "Parallel (one process per rank: dattn starts them on one host, mpirun across hosts; docs/parallel.md)";
  add_integer_option(app, "--tensor-parallel-size", flags.degrees.tensor_parallel,
                 "Ranks that split each block's heads and FFN columns, each reading only its weight slices (heads and FFN must divide by it)")
      ->group(group)->capture_default_str();
  add_integer_option(app, "--ulysses-degree", flags.degrees.ulysses,
                 "Ranks that split the video tokens, exchanging heads around self-attention (heads and the latent tokens must divide by it)")
      ->group(group)->capture_default_str();
  add_integer_option(app, "--cfg-parallel-size", flags.degrees.cfg,
                 "1, or 2: the conditional and unconditional guidance branches on two ranks (guidance scale > 1)")
      ->group(group)->capture_default_str();
}

std::optional<GuidanceMode> guidance_from_option(const std::string& text) {
  if (text.empty()) return std::nullopt;
  if (auto mode = parse_guidance_mode(text)) return mode;
  throw UserError("--guidance '" + text + "': expected sequential, batched or cfg-parallel");
}

void require_gpu_per_rank(Device device, int ranks_on_host, const std::string& what) {
  if (device != Device::CUDA) return;
  const int gpus = cuda_device_count();
  if (ranks_on_host > gpus)
    throw UserError("--device cuda: " + what + ", which has " + std::to_string(gpus) +
                    " visible GPU(s): expected at most " + std::to_string(gpus) + " ranks per host");
}

RunRanks join_ranks(const ParallelFlags& flags, Device device) {
  RunRanks r{parallel::World::join(), {}, 0};
  quiet_other_ranks(r.world.rank());
  parallel::check_degrees(flags.degrees, r.world.size());
  if (device == Device::CUDA && r.world.size() > 1) {
    require_gpu_per_rank(device, r.world.local_rank() + 1,
                         "rank " + std::to_string(r.world.rank()) + " is rank " + std::to_string(r.world.local_rank()) +
                             " on its host");
    r.device_index = r.world.local_rank();
  }
  r.groups = r.world.size() > 1 ? parallel::make_groups(r.world.communicator(), flags.degrees)
                                : parallel::single_process_groups();
  r.groups = parallel::with_device_transport(r.groups, device, r.device_index);
  return r;
}

std::optional<GuidanceMode> run_guidance(const ParallelFlags& flags, std::optional<GuidanceMode> given) {
  if (flags.degrees.cfg != 2) return given;
  if (given && *given != GuidanceMode::CfgParallel)
    throw UserError("--cfg-parallel-size 2 with --guidance " + std::string(guidance_mode_name(*given)) +
                    ": expected --guidance cfg-parallel, or no --guidance");
  return GuidanceMode::CfgParallel;
}

}  // namespace dattn::tool
