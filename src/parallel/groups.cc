// The degrees' checks and the rank layout (see groups.h).
#include "dattn/parallel/groups.h"

#include <cstdint>

#include <string>

#include "dattn/core/error.h"
#include "dattn/parallel/world.h"

namespace dattn::parallel {

void check_degrees(const ParallelDegrees& d, int world_size) {
  auto at_least_one = [](int v, const char* flag) {
    if (v < 1) throw UserError(std::string(flag) + " " + std::to_string(v) + ": expected a whole number >= 1");
  };
  at_least_one(d.tensor_parallel, "--tensor-parallel-size");
  at_least_one(d.ulysses, "--ulysses-degree");
  at_least_one(d.cfg, "--cfg-parallel-size");
  if (d.cfg > 2)
    throw UserError("--cfg-parallel-size " + std::to_string(d.cfg) +
                    ": expected 1 or 2 (the conditional and unconditional branches of guidance)");
  // Degrees split attention heads, which models count in tens: past kMaxRanks a value is a typo, and the
  // product (an int) could wrap (641 x 6700417 made 1 and ran as one process).
  const auto at_most = [](int v, const char* flag) {
    if (v > kMaxRanks)
      throw UserError(std::string(flag) + " " + std::to_string(v) + ": expected at most " + std::to_string(kMaxRanks));
  };
  at_most(d.tensor_parallel, "--tensor-parallel-size");
  at_most(d.ulysses, "--ulysses-degree");
  if (std::int64_t{d.tensor_parallel} * d.ulysses * d.cfg > kMaxRanks)
    throw UserError("--tensor-parallel-size " + std::to_string(d.tensor_parallel) + " x --ulysses-degree " +
                    std::to_string(d.ulysses) + " x --cfg-parallel-size " + std::to_string(d.cfg) +
                    ": expected at most " + std::to_string(kMaxRanks) + " ranks in all");
  if (d.product() == world_size) return;
  const std::string product = "--tensor-parallel-size " + std::to_string(d.tensor_parallel) + " x --ulysses-degree " +
                              std::to_string(d.ulysses) + " x --cfg-parallel-size " + std::to_string(d.cfg) + " = " +
                              std::to_string(d.product()) + " ranks";
  if (world_size == 1) {
    if (!built_with_mpi())
      throw UserError(product + ", but this process runs alone and this build of dattn has no MPI to start ranks "
                                "with (install libopenmpi-dev and configure with -DDATTN_MPI=on)");
    throw UserError(product + ", but this process runs alone: start " + std::to_string(d.product()) +
                    " ranks with mpirun -np " + std::to_string(d.product()) + " dattn ...");
  }
  throw UserError(product + ", but " + std::to_string(world_size) + " ranks were started: expected degrees whose " +
                  "product is " + std::to_string(world_size));
}

ParallelGroups single_process_groups() {
  ParallelGroups g;
  g.world = g.tensor_parallel = g.ulysses = g.cfg = make_single_process_communicator();
  return g;
}

ParallelGroups make_groups(const std::shared_ptr<Communicator>& world, const ParallelDegrees& degrees) {
  check_degrees(degrees, world->size());
  const int r = world->rank(), t = degrees.tensor_parallel, u = degrees.ulysses;
  const int tp = r % t, sp = (r / t) % u, cfg = r / (t * u);
  ParallelGroups g;
  g.degrees = degrees;
  g.world = world;
  // Ranks that share every other coordinate form the group of one axis, ordered by that axis.
  g.tensor_parallel = world->split(sp + u * cfg, tp);
  g.ulysses = world->split(tp + t * cfg, sp);
  g.cfg = world->split(tp + t * sp, cfg);
  return g;
}

}  // namespace dattn::parallel
