#pragma once
// The pinned staging ring behind upload.h, one per CUDA run context (a RunContext extension made on the
// context's first upload). Compiled only in CUDA builds (staging_ring.cu).
#include <array>
#include <cstddef>
#include <functional>
#include <mutex>

#include "dattn/core/run_context.h"
#include "dattn/core/upload.h"

namespace dattn::cuda {

class StagingRing final : public RunContext::Extension {
 public:
  // Allocates the pinned buffers and their events on the current device; throws naming the call.
  explicit StagingRing(void* stream);
  ~StagingRing() override;
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;

  // Copies n host bytes to device `dst`: piece by piece into the open buffer (parallel host copy), one
  // cudaMemcpyAsync per piece on the stream; a full buffer is left for the next, which is first waited
  // for (its event: its last DMA). Returns with the source read and every piece queued.
  void copy(void* dst, const void* src, std::size_t n);
  // The same for a source that is not in memory: fill(stage, at, bytes) writes the source's bytes
  // [at, at + bytes) into the pinned `stage` (a file read, upload_file_bytes).
  using Fill = std::function<void(char* stage, std::size_t at, std::size_t bytes)>;
  void copy_with(void* dst, std::size_t n, const Fill& fill);
  // Copies n device bytes at `src` to host `dst` (download_bytes): after every DMA the ring has queued,
  // piece k into buffer k mod kUploadBuffers, each piece copied out by host threads once its DMA is
  // done while the next ones run. Returns with dst written and every buffer free.
  void download(void* dst, const void* src, std::size_t n);
  void count_conversion();
  UploadStats stats() const;

 private:
  void next_buffer();
  void release() noexcept;

  void* stream_ = nullptr;
  std::array<char*, kUploadBuffers> buffers_{};
  std::array<void*, kUploadBuffers> events_{};  // cudaEvent_t, recorded after each DMA out of the buffer
  std::size_t open_ = 0;  // the buffer being filled
  std::size_t used_ = 0;  // bytes of it already handed to DMAs
  UploadStats stats_;
  mutable std::mutex mutex_;  // one upload at a time per context (a server's threads may share one)
};

// The ring of the current CUDA context, made on first use.
StagingRing& staging_ring();
// The current CUDA context's ring when it has one (nullptr before its first upload).
const StagingRing* find_staging_ring();

}  // namespace dattn::cuda
