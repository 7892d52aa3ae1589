// NcclCommunicator (see nccl_communicator.h). Compiled against NCCL 2.28's nccl.h; not yet run on GPUs
// (docs/parallel.md).
#include "parallel/nccl_communicator.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>

#include "dattn/core/error.h"
#include "dattn/core/run_context.h"
#include "parallel/part_layout.h"

namespace dattn::parallel {
namespace {

void check_nccl(ncclResult_t rc, const char* what) {
  if (rc != ncclSuccess) throw std::runtime_error(std::string("NCCL ") + what + " failed: " + ncclGetErrorString(rc));
}

void check_cuda(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(rc));
}

void require_device(const Tensor& t, const char* op) {
  if (!t.defined() || t.device() != Device::CUDA)
    throw UserError(std::string("NCCL ") + op + ": a " + (t.defined() ? t.describe() : std::string("undefined")) +
                    " tensor; the NCCL communicator moves CUDA tensors");
}

ncclDataType_t nccl_type(DType dtype, const char* op) {
  switch (dtype) {
    case DType::F32: return ncclFloat32;
    case DType::F64: return ncclFloat64;
    case DType::BF16: return ncclBfloat16;
    case DType::F16: return ncclFloat16;
    default: throw UserError(std::string("NCCL ") + op + ": " + std::string(dtype_name(dtype)) + " is not summed");
  }
}

// Bytes move as ncclUint8 whatever the dtype (gathers, exchanges, broadcasts convert nothing).
std::size_t byte_count(const Tensor& t) { return t.bytes(); }

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, int rank, int size) : comm_(comm), rank_(rank), size_(size) {}
  ~NcclCommunicator() override { ncclCommDestroy(comm_); }
  NcclCommunicator(const NcclCommunicator&) = delete;
  NcclCommunicator& operator=(const NcclCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view transport() const override { return "nccl"; }
  bool moves(Device device) const override { return device == Device::CUDA; }

  void all_reduce_sum(Tensor& t) override {
    require_device(t, "all_reduce_sum");
    check_nccl(ncclAllReduce(t.data(), t.data(), static_cast<std::size_t>(t.numel()), nccl_type(t.dtype(), "all_reduce_sum"),
                             ncclSum, comm_, stream()),
               "ncclAllReduce");
  }

  Tensor all_gather(const Tensor& local) override {
    require_device(local, "all_gather");
    if (local.ndim() == 0) throw UserError("NCCL all_gather: a scalar tensor; expected at least one dimension");
    Shape shape = local.shape();
    shape[0] *= size_;
    Tensor out = Tensor::empty(shape, local.dtype(), Device::CUDA);
    check_nccl(ncclAllGather(local.data(), out.data(), byte_count(local), ncclUint8, comm_, stream()), "ncclAllGather");
    return out;
  }

  Tensor all_to_all(const Tensor& input, int scatter_dim, int gather_dim) override {
    require_device(input, "all_to_all");
    const AllToAllShapes s = all_to_all_shapes(input.shape(), scatter_dim, gather_dim, size_);
    const std::size_t esize = dtype_size(input.dtype());
    Tensor send = Tensor::empty(input.shape(), input.dtype(), Device::CUDA);
    Tensor received = Tensor::empty(input.shape(), input.dtype(), Device::CUDA);
    strided_parts(static_cast<const std::byte*>(input.data()), input.shape(), scatter_dim, esize,
                  static_cast<std::byte*>(send.data()), true);
    const std::size_t part = shape_numel(s.part) * esize;
    check_nccl(ncclGroupStart(), "ncclGroupStart");
    for (int peer = 0; peer < size_; ++peer) {
      check_nccl(ncclSend(static_cast<const std::byte*>(send.data()) + peer * part, part, ncclUint8, peer, comm_, stream()),
                 "ncclSend");
      check_nccl(ncclRecv(static_cast<std::byte*>(received.data()) + peer * part, part, ncclUint8, peer, comm_, stream()),
                 "ncclRecv");
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd");
    Tensor out = Tensor::empty(s.output, input.dtype(), Device::CUDA);
    strided_parts(static_cast<const std::byte*>(received.data()), s.output, gather_dim, esize,
                  static_cast<std::byte*>(out.data()), false);
    return out;
  }

  void broadcast(Tensor& t, int root) override {
    require_device(t, "broadcast");
    if (root < 0 || root >= size_)
      throw UserError("NCCL broadcast from rank " + std::to_string(root) + " of " + std::to_string(size_));
    check_nccl(ncclBroadcast(t.data(), t.data(), byte_count(t), ncclUint8, root, comm_, stream()), "ncclBroadcast");
  }

  void barrier() override {
    // One summed element, waited for: every rank has reached this point when it returns.
    Tensor one = Tensor::zeros({1}, DType::F32, Device::CUDA);
    all_reduce_sum(one);
    check_cuda(cudaStreamSynchronize(stream()), "cudaStreamSynchronize");
  }

  std::shared_ptr<Communicator> split(int color, int key) override {
    ncclComm_t part = nullptr;
    check_nccl(ncclCommSplit(comm_, color, key, &part, nullptr), "ncclCommSplit");
    int rank = 0, size = 1;
    check_nccl(ncclCommUserRank(part, &rank), "ncclCommUserRank");
    check_nccl(ncclCommCount(part, &size), "ncclCommCount");
    return std::make_shared<NcclCommunicator>(part, rank, size);
  }

 private:
  static cudaStream_t stream() { return static_cast<cudaStream_t>(current_context(Device::CUDA).stream()); }

  // The device version of pack_parts (pack) and unpack_parts: one 2-D copy per part, each row one
  // outer index's block of the part, queued on the stream.
  void strided_parts(const std::byte* src, const Shape& whole, int d, std::size_t esize, std::byte* dst, bool pack) const {
    const AroundDim a = around_dim(whole, d);
    const std::size_t block = static_cast<std::size_t>(a.dim / size_ * a.inner) * esize;
    const std::size_t pitch = static_cast<std::size_t>(a.dim * a.inner) * esize;
    const auto rows = static_cast<std::size_t>(a.outer);
    for (int p = 0; p < size_; ++p) {
      const std::size_t strided = static_cast<std::size_t>(p) * block, packed = static_cast<std::size_t>(p) * block * rows;
      const cudaError_t rc = pack ? cudaMemcpy2DAsync(dst + packed, block, src + strided, pitch, block, rows,
                                                      cudaMemcpyDeviceToDevice, stream())
                                  : cudaMemcpy2DAsync(dst + strided, pitch, src + packed, block, block, rows,
                                                      cudaMemcpyDeviceToDevice, stream());
      check_cuda(rc, "cudaMemcpy2DAsync");
    }
  }

  ncclComm_t comm_;
  int rank_, size_;
};

}  // namespace

std::shared_ptr<Communicator> make_nccl_communicator(Communicator& bootstrap, int device_index) {
  ncclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (bootstrap.rank() == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  Tensor bytes = Tensor::empty({static_cast<std::int64_t>(sizeof id)}, DType::I8);
  std::memcpy(bytes.data(), &id, sizeof id);
  bootstrap.broadcast(bytes, 0);
  std::memcpy(&id, bytes.data(), sizeof id);
  check_cuda(cudaSetDevice(device_index), "cudaSetDevice");
  ncclComm_t comm = nullptr;
  check_nccl(ncclCommInitRank(&comm, bootstrap.size(), id, bootstrap.rank()), "ncclCommInitRank");
  return std::make_shared<NcclCommunicator>(comm, bootstrap.rank(), bootstrap.size());
}

}  // namespace dattn::parallel
