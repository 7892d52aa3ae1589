// World::join and the launcher's environment (see world.h).
#include "dattn/parallel/world.h"

#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>

#include "dattn/core/error.h"
#include "dattn/core/whole_number.h"
#include "parallel/mpi_join.h"

namespace dattn::parallel {
namespace {

// The variable's value as a whole number >= minimum; nullopt when unset. A malformed value is the
// launcher's environment gone wrong, refused rather than read as 0.
std::optional<int> env_int(const char* name, int minimum) {
  const char* text = std::getenv(name);
  if (text == nullptr || *text == '\0') return std::nullopt;
  const std::optional<std::uint64_t> v = parse_whole_number(text, 1u << 20);
  if (!v || *v < static_cast<std::uint64_t>(minimum))
    throw UserError(std::string("environment variable ") + name + "='" + text + "': expected a whole number >= " +
                    std::to_string(minimum) + " (set by mpirun for each rank)");
  return static_cast<int>(*v);
}

}  // namespace

bool built_with_nccl() {
#ifdef DATTN_WITH_NCCL
  return true;
#else
  return false;
#endif
}

LaunchInfo launch_from_environment() {
  LaunchInfo info;
  struct Names {
    const char *size, *rank, *local_rank;
  };
  // OpenMPI's mpirun first; then the PMI names of MPICH / Hydra and Slurm's PMI.
  for (const Names n : {Names{"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"},
                        Names{"PMI_SIZE", "PMI_RANK", "MPI_LOCALRANKID"}}) {
    const std::optional<int> size = env_int(n.size, 1);
    if (!size) continue;
    info.size = *size;
    info.rank = env_int(n.rank, 0).value_or(0);
    info.local_rank = env_int(n.local_rank, 0).value_or(info.rank);
    info.variable = n.size;
    if (info.rank >= info.size)
      throw UserError(std::string(n.rank) + "=" + std::to_string(info.rank) + ": expected a rank below " + n.size +
                      "=" + std::to_string(info.size));
    return info;
  }
  return info;
}

World World::join() {
  const LaunchInfo launch = launch_from_environment();
  World w;
  w.local_rank_ = launch.local_rank;
  // A process not started by a launcher, or started as one rank, runs alone: no MPI set-up to pay for.
  w.communicator_ = launch.size > 1 ? join_mpi_world(launch) : make_single_process_communicator();
  return w;
}

}  // namespace dattn::parallel
