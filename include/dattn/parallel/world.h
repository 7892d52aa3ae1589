#pragma once
// The processes of one run. dattn runs one process per rank: mpirun (or another MPI launcher) starts them
// on one host or across hosts, and World::join() connects them through MPI. A process started alone is a
// world of one. The MPI library is initialised by the first join() and finalised when the last World and
// communicator made from it are gone (not while an exception unwinds: a rank that failed must not wait in
// MPI_Finalize for ranks that are still working; mpirun ends them when it sees the failed exit status).
#include <memory>
#include <string>

#include "dattn/parallel/communicator.h"

namespace dattn::parallel {

// True when this binary was built with the MPI communicator (cmake -DDATTN_MPI=auto found MPI, or on).
bool built_with_mpi();
// True when this binary was built with the NCCL communicator (a CUDA build that found NCCL).
bool built_with_nccl();

// What the launcher put in the environment: OpenMPI's OMPI_COMM_WORLD_{SIZE,RANK,LOCAL_RANK}, or the
// PMI/PMIx ones (PMI_SIZE, PMI_RANK, MPI_LOCALRANKID) other launchers set. size 1 when none is set.
struct LaunchInfo {
  int size = 1;
  int rank = 0;
  int local_rank = 0;  // the rank among those on this host: which GPU a rank uses
  std::string variable;  // the variable size was read from; "" when not launched by a launcher
};
LaunchInfo launch_from_environment();

class World {
 public:
  // Joins the ranks a launcher started (MPI_COMM_WORLD), or makes a world of one when no launcher
  // started this process. UserError when a launcher started several ranks and this build has no MPI.
  static World join();

  const std::shared_ptr<Communicator>& communicator() const { return communicator_; }
  int rank() const { return communicator_->rank(); }
  int size() const { return communicator_->size(); }
  int local_rank() const { return local_rank_; }

 private:
  std::shared_ptr<Communicator> communicator_;
  int local_rank_ = 0;
};

}  // namespace dattn::parallel
