// with_device_transport (see groups.h): NCCL for the groups of a CUDA run when this build has it.
#include <memory>

#include "dattn/parallel/groups.h"
#ifdef DATTN_WITH_NCCL
#include "parallel/nccl_communicator.h"
#endif

namespace dattn::parallel {

ParallelGroups with_device_transport(const ParallelGroups& groups, Device device, int device_index) {
#ifdef DATTN_WITH_NCCL
  if (device != Device::CUDA || groups.world->size() == 1) return groups;
  ParallelGroups out = groups;
  // The same order on every rank (tensor parallel, Ulysses, CFG), so each group's set-up meets its peers'.
  for (std::shared_ptr<Communicator>* g : {&out.tensor_parallel, &out.ulysses, &out.cfg})
    if ((*g)->size() > 1) *g = make_nccl_communicator(**g, device_index);
  return out;
#else
  (void)device;
  (void)device_index;
  return groups;
#endif
}

}  // namespace dattn::parallel
