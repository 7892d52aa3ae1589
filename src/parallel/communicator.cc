// The transport-independent helpers of communicator.h.
#include "dattn/parallel/communicator.h"

namespace dattn::parallel {

Tensor all_gather_on_device(Communicator& communicator, const Tensor& local) {
  if (communicator.moves(local.device())) return communicator.all_gather(local);
  return communicator.all_gather(local.to(Device::CPU)).to(local.device());
}

}  // namespace dattn::parallel
