#pragma once
// The parallel degrees of a run and the groups of ranks they make. world size = tensor_parallel x
// ulysses x cfg. Ranks are laid out tensor-parallel innermost, then Ulysses, then CFG (as vLLM-Omni's
// "tp-sp-pp-cfg-dp" order): rank = tp + T * (u + U * c), so the ranks that exchange the most (tensor
// parallel, then Ulysses) are neighbours, on one host when the hosts' ranks are consecutive.
#include <cstdint>
#include <memory>

#include "dattn/core/device.h"

#include "dattn/parallel/communicator.h"

namespace dattn::parallel {

// The most ranks a run takes (each degree and their product).
inline constexpr int kMaxRanks = 1024;

struct ParallelDegrees {
  int tensor_parallel = 1;  // --tensor-parallel-size: each layer's heads and FFN split over ranks
  int ulysses = 1;          // --ulysses-degree: the sequence split over ranks, heads exchanged around attention
  int cfg = 1;              // --cfg-parallel-size: the guidance branches on different ranks (1 or 2)
  // The rank count, without overflow: 0 when a degree is below 1 and kMaxRanks + 1 past kMaxRanks (both
  // refused by check_degrees, which names the flag).
  int product() const {
    if (tensor_parallel < 1 || ulysses < 1 || cfg < 1) return 0;
    const std::int64_t two = std::int64_t{tensor_parallel} * ulysses;  // below 2^62
    if (two > kMaxRanks || two * cfg > kMaxRanks) return kMaxRanks + 1;
    return static_cast<int>(two * cfg);
  }
  bool parallel() const { return product() > 1; }
};

// UserError naming the flag and what was expected: a degree below 1 or above kMaxRanks, cfg not 1 or 2, a
// product above kMaxRanks or that is
// not the world's size (with how the ranks were started), a multi-rank run in a build without MPI.
void check_degrees(const ParallelDegrees& degrees, int world_size);

// The communicators of one rank. All are size 1 (the single-process one) for a run of one rank.
struct ParallelGroups {
  ParallelDegrees degrees;
  std::shared_ptr<Communicator> world, tensor_parallel, ulysses, cfg;
};

// A single-process run's groups.
ParallelGroups single_process_groups();
// Splits `world` (whose size check_degrees accepted) into the groups of the rank layout above.
// Collective over `world`.
ParallelGroups make_groups(const std::shared_ptr<Communicator>& world, const ParallelDegrees& degrees);

// The groups a run on `device` communicates through: on CUDA in a build with NCCL, an NCCL communicator
// (on GPU `device_index`, bootstrapped through the MPI group) for each group of more than one rank;
// otherwise `groups` itself (CUDA tensors then go through the host). Collective over the world.
ParallelGroups with_device_transport(const ParallelGroups& groups, Device device, int device_index);

}  // namespace dattn::parallel
