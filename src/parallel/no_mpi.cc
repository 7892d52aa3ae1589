// A build without MPI: a launch of several ranks is refused with what to do instead.
#include <memory>
#include <string>

#include "dattn/core/error.h"
#include "parallel/mpi_join.h"

namespace dattn::parallel {

bool built_with_mpi() { return false; }

std::shared_ptr<Communicator> join_mpi_world(const LaunchInfo& launch) {
  throw UserError("this process was started as one of " + std::to_string(launch.size) + " ranks (" + launch.variable +
                  "=" + std::to_string(launch.size) +
                  "), but this build of dattn has no MPI: install libopenmpi-dev and configure with -DDATTN_MPI=on, "
                  "or run one process");
}

}  // namespace dattn::parallel
