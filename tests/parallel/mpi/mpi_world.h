#pragma once
// The ranks of dattn_tests_parallel_mpi (main in collectives_under_mpirun.cc): the world it joined and
// the size --ranks=N said the launch should have, shared by the binary's test files.
#include <memory>

#include "dattn/parallel/communicator.h"

namespace dattn::testing {

extern std::shared_ptr<parallel::Communicator> g_world;
extern int g_expected_ranks;

}  // namespace dattn::testing
