#pragma once
// A communicator: the ranks of one group of a multi-process run and the collectives between them. One
// process per rank; every rank of a group calls the same collectives in the same order with tensors of
// the same shape and dtype (a mismatch is an error, not a hang, where the transport can tell).
//
//   auto world = parallel::World::join();               // mpirun's ranks, or this process alone
//   Tensor both = world.communicator()->all_gather(v);  // [1, ...] on each rank -> [P, ...] on every rank
//
// Transports: SingleProcessCommunicator (size 1, every collective is the identity), MpiCommunicator
// (OpenMPI, host tensors), NcclCommunicator (CUDA tensors, built with CUDA and NCCL).
#include <chrono>
#include <memory>
#include <string_view>

#include "dattn/core/tensor.h"

namespace dattn::parallel {

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "single-process", "mpi" or "nccl", for messages and reports.
  virtual std::string_view transport() const = 0;
  // Whether the collectives take tensors on `device` (MPI: host tensors; NCCL: CUDA tensors).
  virtual bool moves(Device device) const = 0;

  // In place: every rank ends with the element-wise sum over the ranks. fp32 and fp64 are summed in their
  // dtype; MPI sums bf16 and fp16 in float32 and rounds once (MPI has no 16-bit float type).
  virtual void all_reduce_sum(Tensor& tensor) = 0;
  // Each rank's `local` (same shape and dtype everywhere), concatenated along dimension 0 in rank order.
  virtual Tensor all_gather(const Tensor& local) = 0;
  // `input` split along scatter_dim into size() equal parts, part j sent to rank j; the parts received are
  // concatenated along gather_dim in rank order. Ulysses: [B, S/P, H, D] with scatter_dim 2, gather_dim 1
  // -> [B, S, H/P, D]; scatter_dim 1, gather_dim 2 undoes it. scatter_dim's size must divide by size().
  virtual Tensor all_to_all(const Tensor& input, int scatter_dim, int gather_dim) = 0;
  // In place: root's tensor on every rank (the others' tensors give the shape and dtype).
  virtual void broadcast(Tensor& tensor, int root) = 0;
  // broadcast for a wait that may be long (a server's other ranks waiting for rank 0's next request): a
  // waiting rank checks every `poll` and sleeps between checks instead of spinning a core (MPI's blocking
  // collectives spin). It skips broadcast's check that the ranks' tensors match: the callers send a
  // fixed shape. Every rank, the root too, calls this for it (MPI does not pair it with a broadcast). The
  // default is broadcast.
  virtual void broadcast_after_wait(Tensor& tensor, int root, std::chrono::milliseconds poll) {
    (void)poll;
    broadcast(tensor, root);
  }
  virtual void barrier() = 0;
  // The ranks that pass the same `color` form a new communicator, ranked by `key` (ties by this one's
  // rank). Collective over this communicator.
  virtual std::shared_ptr<Communicator> split(int color, int key) = 0;
};

// all_gather of a tensor on any device: through the host when the transport does not move that
// device's tensors (a CUDA run over MPI without NCCL), the result on the tensor's device.
Tensor all_gather_on_device(Communicator& communicator, const Tensor& local);

// all_reduce_sum of a tensor on any device (in place), through the host like all_gather_on_device.
void all_reduce_sum_on_device(Communicator& communicator, Tensor& tensor);

// all_to_all of a tensor on any device, through the host like all_gather_on_device.
Tensor all_to_all_on_device(Communicator& communicator, const Tensor& input, int scatter_dim, int gather_dim);

// Size 1: the collectives return their input (all_gather a copy of it), split returns another one.
std::shared_ptr<Communicator> make_single_process_communicator();

}  // namespace dattn::parallel
