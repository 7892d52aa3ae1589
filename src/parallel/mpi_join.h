#pragma once
// The MPI side of World::join: mpi_communicator.cc with MPI, no_mpi.cc without it.
#include <memory>

#include "dattn/parallel/communicator.h"
#include "dattn/parallel/world.h"

namespace dattn::parallel {

// MPI_COMM_WORLD of the ranks `launch` describes (MPI initialised on first use). Without MPI, a
// UserError saying this build cannot join them.
std::shared_ptr<Communicator> join_mpi_world(const LaunchInfo& launch);

}  // namespace dattn::parallel
