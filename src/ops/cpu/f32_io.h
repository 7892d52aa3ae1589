#pragma once
// Float32 access to host tensors of any float dtype for the CPU kernels: inputs are read in place when
// already float32 and widened once otherwise; outputs are written in float32 and rounded once.
#include <cstddef>
#include <memory>
#include <vector>

#include "dattn/core/dtype.h"
#include "dattn/core/tensor.h"

namespace dattn::ops::cpu {

// Float32 scratch buffers reused across op calls. A large fresh allocation is mmapped, zeroed and
// page-faulted on every call, which costs ten times the conversion itself (a bf16 weight of Wan2.2-5B's
// FFN is 176 MB in float32); pooled buffers keep their pages. Thread-safe.
class Scratch {
 public:
  explicit Scratch(std::size_t n);
  ~Scratch();
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  float* data() { return buf_.data(); }

 private:
  std::vector<float> buf_;  // size >= n; only the first n elements are used
};

// dattn's exact conversions, run in parallel chunks.
void widen_parallel(const void* src, DType t, float* dst, std::size_t n);
void narrow_parallel(const float* src, DType t, void* dst, std::size_t n);

class F32View {
 public:
  explicit F32View(const Tensor& t);
  const float* data() const { return ptr_; }

 private:
  std::unique_ptr<Scratch> buf_;
  const float* ptr_ = nullptr;
};

class F32Sink {
 public:
  explicit F32Sink(Tensor& t);
  float* data() { return ptr_; }
  // Rounds the float32 values into the tensor (a no-op for float32 tensors).
  void finish();

 private:
  Tensor& t_;
  std::unique_ptr<Scratch> buf_;
  float* ptr_ = nullptr;
};

}  // namespace dattn::ops::cpu
