// MpiCommunicator: the collectives over an MPI communicator for host tensors, and the MPI library's
// set-up and tear-down (see world.h).
#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "dattn/core/error.h"
#include "parallel/mpi_join.h"
#include "parallel/part_layout.h"

namespace dattn::parallel {
namespace {

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  throw std::runtime_error(std::string("MPI ") + what + " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

// MPI initialised for as long as a World or communicator uses it. MPI can be initialised once per
// process, so the session is the process's one (a weak reference: the last user finalises it).
class MpiSession {
 public:
  static std::shared_ptr<MpiSession> acquire() {
    static std::mutex mutex;
    static std::weak_ptr<MpiSession> current;
    std::lock_guard<std::mutex> lock(mutex);
    if (auto s = current.lock()) return s;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) throw std::logic_error("MPI was finalised in this process and cannot be initialised again");
    auto s = std::shared_ptr<MpiSession>(new MpiSession());
    current = s;
    return s;
  }
  ~MpiSession() {
    // A rank unwinding from an error must not wait in MPI_Finalize for ranks still working: it exits
    // with its error status and mpirun ends the others.
    if (std::uncaught_exceptions() == 0) MPI_Finalize();
  }

 private:
  MpiSession() {
    int provided = 0;
    // One thread at a time talks to MPI (OpenMP workers never do), not always the one that joined: a
    // server's rank 0 runs its jobs on the queue's worker thread (serve/rank_relay.h).
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    // Errors come back as return codes, reported as exceptions with MPI's text, not as an abort.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  }
};

void require_host(const Tensor& t, const char* op) {
  if (!t.defined()) throw UserError(std::string("MPI ") + op + ": an undefined tensor");
  if (t.device() != Device::CPU)
    throw UserError(std::string("MPI ") + op + ": a " + t.describe() +
                    " tensor; the MPI communicator moves host tensors (CUDA tensors go through NCCL)");
}

class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, std::shared_ptr<MpiSession> session) : comm_(comm), session_(std::move(session)) {
    check_mpi(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (comm_ != MPI_COMM_WORLD && !finalized) MPI_Comm_free(&comm_);
  }
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view transport() const override { return "mpi"; }
  bool moves(Device device) const override { return device == Device::CPU; }

  void all_reduce_sum(Tensor& t) override {
    require_host(t, "all_reduce_sum");
    require_same_everywhere(t, "all_reduce_sum");
    const int n = count(static_cast<std::size_t>(t.numel()), "all_reduce_sum");
    switch (t.dtype()) {
      case DType::F32:
        check_mpi(MPI_Allreduce(MPI_IN_PLACE, t.data(), n, MPI_FLOAT, MPI_SUM, comm_), "MPI_Allreduce");
        return;
      case DType::F64:
        check_mpi(MPI_Allreduce(MPI_IN_PLACE, t.data(), n, MPI_DOUBLE, MPI_SUM, comm_), "MPI_Allreduce");
        return;
      case DType::BF16:
      case DType::F16: {
        std::vector<float> sum(static_cast<std::size_t>(n));
        to_f32(t.data(), t.dtype(), sum.data(), sum.size());
        check_mpi(MPI_Allreduce(MPI_IN_PLACE, sum.data(), n, MPI_FLOAT, MPI_SUM, comm_), "MPI_Allreduce");
        from_f32(sum.data(), t.dtype(), t.data(), sum.size());
        return;
      }
      default:
        throw UserError("MPI all_reduce_sum: a " + t.describe() + " tensor; expected fp32, fp64, bf16 or fp16");
    }
  }

  Tensor all_gather(const Tensor& local) override {
    require_host(local, "all_gather");
    require_same_everywhere(local, "all_gather");
    if (local.ndim() == 0) throw UserError("MPI all_gather: a scalar tensor; expected at least one dimension");
    Shape shape = local.shape();
    shape[0] *= size_;
    Tensor out = Tensor::empty(shape, local.dtype());
    const Element e = element(local.dtype());
    check_mpi(MPI_Allgather(local.data(), count(static_cast<std::size_t>(local.numel()), "all_gather"), e.type,
                            out.data(), count(static_cast<std::size_t>(local.numel()), "all_gather"), e.type, comm_),
              "MPI_Allgather");
    return out;
  }

  Tensor all_to_all(const Tensor& input, int scatter_dim, int gather_dim) override {
    require_host(input, "all_to_all");
    require_same_everywhere(input, "all_to_all");
    const AllToAllShapes s = all_to_all_shapes(input.shape(), scatter_dim, gather_dim, size_);
    const std::size_t esize = dtype_size(input.dtype());
    std::vector<std::byte> send(input.bytes()), received(input.bytes());
    pack_parts(static_cast<const std::byte*>(input.data()), input.shape(), scatter_dim, size_, esize, send.data());
    const Element e = element(input.dtype());
    const int part = count(static_cast<std::size_t>(shape_numel(s.part)), "all_to_all");
    check_mpi(MPI_Alltoall(send.data(), part, e.type, received.data(), part, e.type, comm_), "MPI_Alltoall");
    Tensor out = Tensor::empty(s.output, input.dtype());
    unpack_parts(received.data(), s.output, gather_dim, size_, esize, static_cast<std::byte*>(out.data()));
    return out;
  }

  void broadcast(Tensor& t, int root) override {
    require_host(t, "broadcast");
    if (root < 0 || root >= size_)
      throw UserError("MPI broadcast from rank " + std::to_string(root) + " of " + std::to_string(size_));
    require_same_everywhere(t, "broadcast");
    const Element e = element(t.dtype());
    check_mpi(MPI_Bcast(t.data(), count(static_cast<std::size_t>(t.numel()), "broadcast"), e.type, root, comm_),
              "MPI_Bcast");
  }

  void broadcast_after_wait(Tensor& t, int root, std::chrono::milliseconds poll) override {
    require_host(t, "broadcast");
    if (root < 0 || root >= size_)
      throw UserError("MPI broadcast from rank " + std::to_string(root) + " of " + std::to_string(size_));
    MPI_Request request = MPI_REQUEST_NULL;
    check_mpi(MPI_Ibcast(t.data(), count(static_cast<std::size_t>(t.numel()), "broadcast"), element(t.dtype()).type,
                         root, comm_, &request),
              "MPI_Ibcast");
    for (int done = 0;;) {
      check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), "MPI_Test");
      if (done) return;
      std::this_thread::sleep_for(poll);
    }
  }

  void barrier() override { check_mpi(MPI_Barrier(comm_), "MPI_Barrier"); }

  std::shared_ptr<Communicator> split(int color, int key) override {
    if (color < 0) throw UserError("MPI split: color " + std::to_string(color) + ": expected >= 0");
    MPI_Comm part = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(comm_, color, key, &part), "MPI_Comm_split");
    MPI_Comm_set_errhandler(part, MPI_ERRORS_RETURN);
    return std::make_shared<MpiCommunicator>(part, session_);
  }

 private:
  // The MPI datatype moving one element of a dtype as it is (bytes, no conversion).
  struct Element {
    MPI_Datatype type = MPI_DATATYPE_NULL;
  };
  static Element element(DType dtype) {
    const std::size_t size = dtype_size(dtype);
    switch (size) {
      case 1: return {MPI_BYTE};
      case 2: return {MPI_UINT16_T};
      case 4: return {MPI_UINT32_T};
      case 8: return {MPI_UINT64_T};
      default: throw UserError("MPI: elements of " + std::to_string(size) + " bytes are not supported");
    }
  }
  // MPI counts are ints: a message of more elements is refused, not wrapped.
  static int count(std::size_t n, const char* op) {
    if (n > static_cast<std::size_t>(INT32_MAX))
      throw UserError(std::string("MPI ") + op + ": " + std::to_string(n) + " elements in one message; at most " +
                      std::to_string(INT32_MAX));
    return static_cast<int>(n);
  }
  // Every rank must pass the same element count, dtype and rank (a mismatch would corrupt or hang the
  // collective): one small all-reduce compares them (max of v and of -v: equal everywhere iff max == -max(-v)).
  void require_same_everywhere(const Tensor& t, const char* op) {
    std::int64_t v[4] = {t.numel(), static_cast<std::int64_t>(t.dtype()) * 64 + t.ndim(), 0, 0};
    v[2] = -v[0];
    v[3] = -v[1];
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, v, 4, MPI_INT64_T, MPI_MAX, comm_), "MPI_Allreduce");
    if (v[0] != -v[2] || v[1] != -v[3])
      throw UserError(std::string("MPI ") + op + ": the ranks passed tensors of different sizes or dtypes (rank " +
                      std::to_string(rank_) + ": " + t.describe() + "); every rank must pass the same shape and dtype");
  }

  MPI_Comm comm_;
  std::shared_ptr<MpiSession> session_;
  int rank_ = 0, size_ = 1;
};

}  // namespace

bool built_with_mpi() { return true; }

std::shared_ptr<Communicator> join_mpi_world(const LaunchInfo& launch) {
  auto session = MpiSession::acquire();
  auto world = std::make_shared<MpiCommunicator>(MPI_COMM_WORLD, std::move(session));
  if (world->size() != launch.size || world->rank() != launch.rank)
    throw UserError("MPI says this is rank " + std::to_string(world->rank()) + " of " + std::to_string(world->size()) +
                    ", the launcher's environment " + launch.variable + " says rank " + std::to_string(launch.rank) +
                    " of " + std::to_string(launch.size) + ": expected the same (a dattn built against another MPI "
                    "than the mpirun that started it?)");
  return world;
}

}  // namespace dattn::parallel
