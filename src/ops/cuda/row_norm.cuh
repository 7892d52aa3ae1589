#pragma once
// One kernel for the three row normalisations (layer_norm, rms_norm, layer_norm_modulated): one block
// per row of D elements. The row is read once into shared memory as float32 (when it fits), the mean
// and then the variance are reduced from there in two passes (no one-pass cancellation on rows with a
// large mean), and the output is written from shared memory. Rows too long for shared memory are read
// again from global memory (L2) instead.
#include "ops/cuda/common.cuh"
#include "ops/cuda/token_rows.cuh"

namespace dattn::ops::cuda {

enum class NormKind { Layer, Rms, LayerModulated };

struct RowNormArgs {
  const void* x = nullptr;
  void* y = nullptr;
  Elt ex = Elt::F32;  // x and y share the dtype
  i64 rows = 0, d = 0;
  float eps = 0;
  const void* w = nullptr;  // Layer: weight and bias or neither; Rms: weight or none (any float dtype)
  const void* b = nullptr;
  Elt ew = Elt::F32, eb = Elt::F32;
  const float* params = nullptr;  // LayerModulated: [R, K, D] float32
  int k = 0, shift_k = 0, scale_k = 0;
  TokenRows token_rows;
  bool vec = false;    // 8-wide access (d % 8 == 0, aligned x and y)
  bool cached = false; // the row is kept in shared memory (d floats of dynamic shared memory)
};

template <NormKind K>
__global__ void row_norm_kernel(RowNormArgs p) {
  extern __shared__ float row_cache[];
  __shared__ float scratch[32];
  const i64 r = blockIdx.x;
  const i64 base = r * p.d;
  const int tid = threadIdx.x, nt = blockDim.x;
  const auto value = [&](i64 i) { return p.cached ? row_cache[i] : load1(p.x, p.ex, base + i); };

  // Pass 1: the sum (and, cached, the copy into shared memory).
  float s = 0;
  if (p.vec) {
    for (i64 v = tid; v < p.d / 8; v += nt) {
      float x[8];
      load8(p.x, p.ex, base + v * 8, x);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        s += K == NormKind::Rms ? x[j] * x[j] : x[j];
        if (p.cached) row_cache[v * 8 + j] = x[j];
      }
    }
  } else {
    for (i64 i = tid; i < p.d; i += nt) {
      const float x = load1(p.x, p.ex, base + i);
      s += K == NormKind::Rms ? x * x : x;
      if (p.cached) row_cache[i] = x;
    }
  }
  const float total = block_sum(s, scratch);  // its barriers also publish row_cache
  const float inv_d = 1.0f / static_cast<float>(p.d);
  float mean = 0, inv;
  if (K == NormKind::Rms) {
    inv = 1.0f / sqrtf(total * inv_d + p.eps);  // IEEE sqrt and division: rsqrtf is 2 ulp
  } else {
    mean = total * inv_d;
    float q = 0;
    for (i64 i = tid; i < p.d; i += nt) {
      const float c = value(i) - mean;
      q += c * c;
    }
    inv = 1.0f / sqrtf(block_sum(q, scratch) * inv_d + p.eps);
  }

  const float* shift = nullptr;
  const float* scale = nullptr;
  if (K == NormKind::LayerModulated) {
    const float* prow = p.params + i64{p.token_rows.row(r)} * p.k * p.d;
    shift = prow + i64{p.shift_k} * p.d;
    scale = prow + i64{p.scale_k} * p.d;
  }
  const auto out = [&](i64 i, float x) {
    float n = (K == NormKind::Rms ? x : x - mean) * inv;
    if (K == NormKind::LayerModulated) return n * (1.0f + scale[i]) + shift[i];
    if (p.w) n *= load1(p.w, p.ew, i);
    if (K == NormKind::Layer && p.b) n += load1(p.b, p.eb, i);
    return n;
  };
  if (p.vec) {
    for (i64 v = tid; v < p.d / 8; v += nt) {
      float x[8];
      if (p.cached) {
#pragma unroll
        for (int j = 0; j < 8; ++j) x[j] = row_cache[v * 8 + j];
      } else {
        load8(p.x, p.ex, base + v * 8, x);
      }
#pragma unroll
      for (int j = 0; j < 8; ++j) x[j] = out(v * 8 + j, x[j]);
      store8(p.y, p.ex, base + v * 8, x);
    }
  } else {
    for (i64 i = tid; i < p.d; i += nt) store1(p.y, p.ex, base + i, out(i, value(i)));
  }
}

// Fills vec, cached and the launch shape, then launches on `stream`.
template <NormKind K>
void launch_row_norm(RowNormArgs p, DType dtype, const char* op, cudaStream_t stream) {
  if (p.rows == 0 || p.d == 0) return;
  p.vec = p.d % 8 == 0 && can_vec8(p.x, dtype) && can_vec8(p.y, dtype);
  constexpr i64 kMaxCacheBytes = 48 * 1024;  // the default dynamic shared memory limit
  const i64 cache_bytes = p.d * static_cast<i64>(sizeof(float));
  p.cached = cache_bytes <= kMaxCacheBytes;
  // About 4 vectors (32 elements) per thread: D = 3072 gets 96 threads, 5120 gets 160.
  const i64 per_thread = p.vec ? 32 : 8;
  i64 threads = (p.d + per_thread - 1) / per_thread;
  threads = (threads + 31) / 32 * 32;
  threads = threads < 32 ? 32 : (threads > 512 ? 512 : threads);
  if (p.rows > 0x7fffffff) throw UserError(std::string(op) + " (cuda): too many rows");
  row_norm_kernel<K><<<static_cast<unsigned>(p.rows), static_cast<unsigned>(threads),
                       p.cached ? static_cast<std::size_t>(cache_bytes) : 0, stream>>>(p);
  check_launch(op);
}

}  // namespace dattn::ops::cuda
