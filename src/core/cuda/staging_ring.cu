#include "core/cuda/staging_ring.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <memory>

#include "core/cuda/check.cuh"
#include "dattn/core/parallel_copy.h"

namespace dattn::cuda {
namespace {

// Pieces start 256-byte aligned in staging: the DMA engines read aligned sources fastest.
constexpr std::size_t kAlign = 256;
constexpr char kRingKey = 0;

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

StagingRing::StagingRing(void* stream) : stream_(stream) {
  stats_.staging_made = true;
  try {
    for (std::size_t i = 0; i < kUploadBuffers; ++i) {
      void* p = nullptr;
      DATTN_CUDA_CHECK(cudaHostAlloc(&p, kUploadBufferBytes, cudaHostAllocDefault));
      buffers_[i] = static_cast<char*>(p);
      cudaEvent_t e = nullptr;
      DATTN_CUDA_CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
      events_[i] = e;
    }
  } catch (...) {
    release();  // what was made before the failure
    throw;
  }
}

StagingRing::~StagingRing() { release(); }

void StagingRing::release() noexcept {
  for (std::size_t i = 0; i < kUploadBuffers; ++i) {
    if (events_[i]) cudaEventSynchronize(static_cast<cudaEvent_t>(events_[i]));
    if (events_[i]) cudaEventDestroy(static_cast<cudaEvent_t>(events_[i]));
    if (buffers_[i]) cudaFreeHost(buffers_[i]);
    events_[i] = nullptr, buffers_[i] = nullptr;
  }
  cudaGetLastError();  // may run at exit, after the runtime: nothing to report then
}

void StagingRing::next_buffer() {
  open_ = (open_ + 1) % kUploadBuffers;
  // Its last DMA must be done before the host writes into it again (never-recorded events are ready).
  const auto t0 = std::chrono::steady_clock::now();
  DATTN_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(events_[open_])));
  stats_.dma_wait_s += seconds_since(t0);
  used_ = 0;
  ++stats_.reuses;
}

void StagingRing::copy(void* dst, const void* src, std::size_t n) {
  const auto* from = static_cast<const char*>(src);
  copy_with(dst, n, [from](char* stage, std::size_t at, std::size_t bytes) { parallel_copy(stage, from + at, bytes); });
}

void StagingRing::copy_with(void* dst, std::size_t n, const Fill& fill) {
  const std::lock_guard<std::mutex> lock(mutex_);
  auto* to = static_cast<char*>(dst);
  const auto s = static_cast<cudaStream_t>(stream_);
  for (std::size_t at = 0; at < n;) {
    if (used_ >= kUploadBufferBytes) next_buffer();
    const std::size_t piece = std::min(n - at, kUploadBufferBytes - used_);
    char* stage = buffers_[open_] + used_;
    const auto t0 = std::chrono::steady_clock::now();
    fill(stage, at, piece);
    stats_.host_copy_s += seconds_since(t0);
    DATTN_CUDA_CHECK(cudaMemcpyAsync(to + at, stage, piece, cudaMemcpyHostToDevice, s));
    DATTN_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(events_[open_]), s));
    used_ = std::min(kUploadBufferBytes, (used_ + piece + kAlign - 1) / kAlign * kAlign);
    ++stats_.copies;
    stats_.bytes += piece;
    at += piece;
  }
}

void StagingRing::download(void* dst, const void* src, std::size_t n) {
  const std::lock_guard<std::mutex> lock(mutex_);
  const auto s = static_cast<cudaStream_t>(stream_);
  auto t0 = std::chrono::steady_clock::now();
  for (void* e : events_) DATTN_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(e)));  // uploads' DMAs
  stats_.dma_wait_s += seconds_since(t0);
  const std::size_t pieces = (n + kUploadBufferBytes - 1) / kUploadBufferBytes;
  const auto piece_bytes = [&](std::size_t k) { return std::min(kUploadBufferBytes, n - k * kUploadBufferBytes); };
  const auto enqueue = [&](std::size_t k) {
    const std::size_t b = k % kUploadBuffers;
    DATTN_CUDA_CHECK(cudaMemcpyAsync(buffers_[b], static_cast<const char*>(src) + k * kUploadBufferBytes,
                                     piece_bytes(k), cudaMemcpyDeviceToHost, s));
    DATTN_CUDA_CHECK(cudaEventRecord(static_cast<cudaEvent_t>(events_[b]), s));
    ++stats_.copies;
  };
  for (std::size_t k = 0; k < std::min(pieces, kUploadBuffers); ++k) enqueue(k);
  for (std::size_t k = 0; k < pieces; ++k) {
    const std::size_t b = k % kUploadBuffers;
    t0 = std::chrono::steady_clock::now();
    DATTN_CUDA_CHECK(cudaEventSynchronize(static_cast<cudaEvent_t>(events_[b])));
    stats_.dma_wait_s += seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    parallel_copy(static_cast<char*>(dst) + k * kUploadBufferBytes, buffers_[b], piece_bytes(k));
    stats_.host_copy_s += seconds_since(t0);
    if (k + kUploadBuffers < pieces) enqueue(k + kUploadBuffers);  // the buffer just emptied
  }
  stats_.downloaded_bytes += n;
  open_ = 0, used_ = 0;  // every DMA is done: the next upload starts on an idle buffer
}

void StagingRing::count_conversion() {
  const std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.conversions;
}

UploadStats StagingRing::stats() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

const StagingRing* find_staging_ring() {
  return static_cast<const StagingRing*>(current_context(Device::CUDA).extension(&kRingKey));
}

StagingRing& staging_ring() {
  RunContext& context = current_context(Device::CUDA);
  return context.extension_or<StagingRing>(&kRingKey, [&] { return std::make_unique<StagingRing>(context.stream()); });
}

}  // namespace dattn::cuda
