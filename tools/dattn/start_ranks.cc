// Starting the ranks of a one-host run (see start_ranks.h).
#include "dattn/start_ranks.h"

#include <unistd.h>

#include <algorithm>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dattn/core/error.h"
#include "dattn/parallel/groups.h"
#include "dattn/parallel/self_start.h"
#include "dattn/parallel/world.h"

namespace dattn::tool {
namespace {

// "--cfg-parallel-size 2", or "--ulysses-degree 2 x --cfg-parallel-size 2 = 4 ranks": the flags that ask.
std::string asked(const parallel::ParallelDegrees& d) {
  std::string text;
  int flags = 0;
  for (const auto& [flag, v] : {std::pair{"--tensor-parallel-size", d.tensor_parallel},
                                std::pair{"--ulysses-degree", d.ulysses}, std::pair{"--cfg-parallel-size", d.cfg}}) {
    if (v == 1) continue;
    text += (flags++ ? " x " : "") + std::string(flag) + " " + std::to_string(v);
  }
  return flags > 1 ? text + " = " + std::to_string(d.product()) + " ranks" : text;
}

}  // namespace

void start_ranks_when_alone(const ParallelFlags& flags, Device device, const std::vector<std::string>& args) {
  const parallel::ParallelDegrees& d = flags.degrees;
  if (d.product() <= 1 || !parallel::launch_from_environment().variable.empty() || !parallel::self_start_enabled())
    return;
  if (parallel::started_by_self_start())
    throw UserError("this process was started by dattn's launcher (DATTN_MPIRUN) without an MPI launcher's rank "
                    "variables (OMPI_COMM_WORLD_SIZE or PMI_SIZE): expected DATTN_MPIRUN to name OpenMPI's mpirun");
  parallel::check_degrees(d, d.product());  // each degree's own range; the product is what is started
  if (!parallel::built_with_mpi()) parallel::check_degrees(d, 1);  // refuses: "... this build of dattn has no MPI"
  const int ranks = d.product();
  require_gpu_per_rank(device, ranks, asked(d) + " starts " + std::to_string(ranks) + " ranks on this host");
  if (device == Device::CPU) {  // each rank holds the model: far more than the cores only fills the memory
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int most = std::max(8, 4 * threads);
    if (ranks > most)
      throw UserError(asked(d) + " starts " + std::to_string(ranks) + " ranks on this host's CPU, which has " +
                      std::to_string(threads) + " hardware threads: expected at most " + std::to_string(most) +
                      " (4 a thread); start more across hosts with mpirun");
  }
  const std::string exe = parallel::this_executable();
  const parallel::Launcher launcher = parallel::find_launcher();
  if (launcher.path.empty())
    throw UserError(asked(d) + ": dattn starts the " + std::to_string(ranks) + " ranks with OpenMPI's mpirun, but " +
                    launcher.missing + " (install openmpi-bin, or set DATTN_MPIRUN to it); or start them yourself: " +
                    parallel::shell_line(parallel::self_start_command("mpirun", ranks, exe, args, false)));
  parallel::exec_self_start(parallel::self_start_command(launcher.path, ranks, exe, args, geteuid() == 0));
}

}  // namespace dattn::tool
