// Float32 views and sinks over host tensors, with pooled scratch memory (see f32_io.h).
#include "ops/cpu/f32_io.h"

#include <algorithm>
#include <cstdint>
#include <mutex>

namespace dattn::ops::cpu {
namespace {

std::mutex pool_mutex;
std::vector<std::vector<float>> pool;  // idle buffers

constexpr std::size_t kChunk = std::size_t{1} << 16;

}  // namespace

Scratch::Scratch(std::size_t n) {
  {
    std::lock_guard<std::mutex> lock(pool_mutex);
    // The smallest idle buffer that fits; when none does, the largest (grown below, once).
    auto best = pool.end();
    for (auto it = pool.begin(); it != pool.end(); ++it) {
      if (best == pool.end()) best = it;
      else if (it->size() >= n) best = (best->size() < n || it->size() < best->size()) ? it : best;
      else if (best->size() < n && it->size() > best->size()) best = it;
    }
    if (best != pool.end()) {
      buf_ = std::move(*best);
      pool.erase(best);
    }
  }
  if (buf_.size() < n) buf_.resize(n);
}

Scratch::~Scratch() {
  std::lock_guard<std::mutex> lock(pool_mutex);
  pool.push_back(std::move(buf_));
}

void widen_parallel(const void* src, DType t, float* dst, std::size_t n) {
  const std::int64_t chunks = static_cast<std::int64_t>((n + kChunk - 1) / kChunk);
  const std::size_t esize = dtype_size(t);
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::size_t begin = static_cast<std::size_t>(c) * kChunk, len = std::min(kChunk, n - begin);
    to_f32(static_cast<const unsigned char*>(src) + begin * esize, t, dst + begin, len);
  }
}

void narrow_parallel(const float* src, DType t, void* dst, std::size_t n) {
  const std::int64_t chunks = static_cast<std::int64_t>((n + kChunk - 1) / kChunk);
  const std::size_t esize = dtype_size(t);
#pragma omp parallel for schedule(static)
  for (std::int64_t c = 0; c < chunks; ++c) {
    const std::size_t begin = static_cast<std::size_t>(c) * kChunk, len = std::min(kChunk, n - begin);
    from_f32(src + begin, t, static_cast<unsigned char*>(dst) + begin * esize, len);
  }
}

F32View::F32View(const Tensor& t) {
  if (!t.defined()) return;
  if (t.dtype() == DType::F32) {
    ptr_ = t.data_as<float>();
    return;
  }
  const auto n = static_cast<std::size_t>(t.numel());
  buf_ = std::make_unique<Scratch>(n);
  widen_parallel(t.data(), t.dtype(), buf_->data(), n);
  ptr_ = buf_->data();
}

F32Sink::F32Sink(Tensor& t) : t_(t) {
  if (t.dtype() == DType::F32) {
    ptr_ = t.data_as<float>();
  } else {
    buf_ = std::make_unique<Scratch>(static_cast<std::size_t>(t.numel()));
    ptr_ = buf_->data();
  }
}

void F32Sink::finish() {
  if (buf_) narrow_parallel(ptr_, t_.dtype(), t_.data(), static_cast<std::size_t>(t_.numel()));
}

}  // namespace dattn::ops::cpu
