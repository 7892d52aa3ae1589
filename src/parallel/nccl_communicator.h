#pragma once
// NcclCommunicator: the collectives over NCCL for CUDA tensors of the current run context's device,
// queued on its stream (built when cmake/Parallel.cmake finds NCCL in a CUDA build with MPI).
#include <memory>

#include "dattn/parallel/communicator.h"

namespace dattn::parallel {

// The NCCL communicator of `bootstrap`'s ranks on GPU `device_index`: rank 0 makes the NCCL unique id and
// `bootstrap` (an MPI communicator) broadcasts it. Collective over `bootstrap`. Its collectives run on
// the stream of the CUDA run context bound when they are called.
std::shared_ptr<Communicator> make_nccl_communicator(Communicator& bootstrap, int device_index);

}  // namespace dattn::parallel
