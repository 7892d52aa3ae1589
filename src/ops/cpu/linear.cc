// Linear layer on the CPU: one float32 GEMM through OpenBLAS.
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <stdexcept>

#include "ops/cpu/cpu_ops.h"
#include "ops/cpu/f32_io.h"

namespace dattn::ops::cpu {

void gemm_xwt(const float* x, std::int64_t m, std::int64_t k, const float* w, std::int64_t n,
              const float* bias, float* y) {
  if (m > INT_MAX || n > INT_MAX || k > INT_MAX)
    throw std::length_error("gemm_xwt: dimension beyond the BLAS integer range");
  if (m == 0 || n == 0) return;
  // The bias is the initial value of C (beta = 1), so the GEMM adds to it in one pass.
  if (bias) {
#pragma omp parallel for schedule(static)
    for (std::int64_t i = 0; i < m; ++i) std::memcpy(y + i * n, bias, sizeof(float) * n);
  }
  if (k == 0) {
    if (!bias) std::fill(y, y + m * n, 0.0f);
    return;
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(m), static_cast<int>(n),
              static_cast<int>(k), 1.0f, x, static_cast<int>(k), w, static_cast<int>(k), bias ? 1.0f : 0.0f, y,
              static_cast<int>(n));
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  const std::int64_t out = weight.dim(0), in = weight.dim(1);
  const std::int64_t rows = in ? x.numel() / in : 0;
  Shape shape = x.shape();
  shape.back() = out;
  Tensor y = Tensor::empty(shape, x.dtype());
  F32View xv(x), wv(weight), bv(bias);
  F32Sink ys(y);
  gemm_xwt(xv.data(), rows, in, wv.data(), out, bv.data(), ys.data());
  ys.finish();
  return y;
}

}  // namespace dattn::ops::cpu
