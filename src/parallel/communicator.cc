// The transport-independent helpers of communicator.h.
#include "dattn/parallel/communicator.h"

#include "dattn/core/stage_timer.h"

namespace dattn::parallel {

// The models' collectives all pass here, so `--op-times` reports them as one stage, "communication": the
// transfer, the copies through the host, and the wait for the slowest rank (a share of the step).
constexpr const char* kStage = "communication";

Tensor all_gather_on_device(Communicator& communicator, const Tensor& local) {
  StageScope scope(kStage);
  if (communicator.moves(local.device())) return communicator.all_gather(local);
  return communicator.all_gather(local.to(Device::CPU)).to(local.device());
}

void all_reduce_sum_on_device(Communicator& communicator, Tensor& tensor) {
  StageScope scope(kStage);
  if (communicator.moves(tensor.device())) return communicator.all_reduce_sum(tensor);
  Tensor host = tensor.to(Device::CPU);
  communicator.all_reduce_sum(host);
  tensor.copy_from(host);
}

Tensor all_to_all_on_device(Communicator& communicator, const Tensor& input, int scatter_dim, int gather_dim) {
  StageScope scope(kStage);
  if (communicator.moves(input.device())) return communicator.all_to_all(input, scatter_dim, gather_dim);
  return communicator.all_to_all(input.to(Device::CPU), scatter_dim, gather_dim).to(input.device());
}

}  // namespace dattn::parallel
