#pragma once
// Host -> device copies of weights at the speed of the bus. Each CUDA run context owns a small ring of
// pinned staging buffers (made on its first upload, freed with the context): host threads copy the
// source into one buffer while the DMAs out of the others run, each buffer reused only after its last
// copy has finished (an event per buffer). A call returns once the source bytes have been read (the
// source may go away) and the copies are queued on the context's stream: work queued later on that
// stream sees the data, and a download waits for it; the host does not wait for the bus.
#include <cstddef>
#include <cstdint>

#include "dattn/core/dtype.h"
#include "dattn/core/tensor.h"

namespace dattn {

// The staging ring's geometry: 4 buffers of 32 MiB (128 MiB pinned per context). Pieces larger than a
// buffer are split across buffers; small ones share a buffer, each with its own DMA.
inline constexpr std::size_t kUploadBuffers = 4;
inline constexpr std::size_t kUploadBufferBytes = std::size_t{32} << 20;

// What the current CUDA context's ring has done since it was made.
struct UploadStats {
  bool staging_made = false;  // the ring exists (pinned buffers allocated)
  std::size_t copies = 0;     // DMAs queued (one per piece)
  std::size_t bytes = 0;      // bytes sent through staging
  std::size_t reuses = 0;     // moves to the ring's next buffer (each waiting for that buffer's last DMA)
  std::size_t conversions = 0;  // tensors whose dtype was converted on the GPU
  // Where the uploading thread's time went: copying into staging (the host side), and waiting for a
  // buffer's last DMA before reusing it (the bus side). A load whose time is mostly the first is
  // limited by the host's reads, mostly the second by the bus.
  double host_copy_s = 0, dma_wait_s = 0;
  std::size_t downloaded_bytes = 0;  // device -> host bytes through the ring (download_bytes)
};

// Copies n bytes from host memory `src` (pageable, e.g. a mapped file) to device memory `dst` of the
// current CUDA context through its staging ring. Throws (naming the CUDA call) on a runtime failure,
// UserError in a build without CUDA.
void upload_bytes(void* dst, const void* src, std::size_t n);

// Copies n bytes at `offset` of the open file `fd` to device memory `dst` through the same ring, the host
// side read with pread (parallel_read: no mapping is touched, so no page faults). `what` names the file
// in errors (UserError when the file ends early or a read fails).
void upload_file_bytes(void* dst, int fd, std::uint64_t offset, std::size_t n, const char* what);

// Copies n bytes from device memory `src` of the current CUDA context to host memory `dst` (pageable)
// through the same ring, after the work queued on the context's stream: the DMA of a piece into one
// buffer runs while host threads copy the previous piece out of another (a pageable destination is
// written, and its pages faulted in, by several threads, where one cudaMemcpy would do it on one).
// Returns with dst written. Tensor::to(Device::CPU) takes it for copies of kDownloadThroughRingBytes or
// more. Throws as upload_bytes.
void download_bytes(void* dst, const void* src, std::size_t n);
inline constexpr std::size_t kDownloadThroughRingBytes = kUploadBufferBytes / 2;

// A new CUDA tensor (current context) of `dtype` with the values of host tensor `host`: the stored
// bytes are uploaded and, when the dtypes differ among F32, BF16 and F16, converted by a kernel with
// exactly the host's rounding (dtype.h: nearest even, the same bits as Tensor::to(dtype)). Other pairs
// (an F64 source) are converted on the host first, then uploaded. `host` must be a CPU tensor.
Tensor upload_tensor(const Tensor& host, DType dtype);

// upload_tensor for a tensor of `shape` stored in dtype `stored` at `offset` of the open file `fd`, its
// bytes read with upload_file_bytes. `stored` must equal `dtype` or convert on the GPU (converts_on_device).
Tensor upload_tensor_from_file(int fd, std::uint64_t offset, const Shape& shape, DType stored, DType dtype,
                               const char* what);

// Whether upload_tensor converts `from` -> `to` on the GPU (both among F32, BF16, F16).
bool converts_on_device(DType from, DType to);

UploadStats upload_stats();

// Host-to-device bandwidth in bytes per second on the current CUDA context's stream, measured with
// `bytes` copied in one cudaMemcpyAsync from pinned memory (allocated for the measurement and freed),
// the best of `rounds`: the bus's rate, which the uploads are measured against (bench/load_bench.cc).
double pinned_upload_bandwidth(std::size_t bytes, int rounds = 3);

}  // namespace dattn
