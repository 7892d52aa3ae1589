#include "attention/backends/sage_attn/sage_quant.h"

#include <algorithm>
#include <cmath>

#include "dattn/core/dtype.h"

// The scheme is specified one fp32 operation at a time (docs/backend-semantics.md, SAGE_ATTN): no
// contraction into FMA even where -march allows it, so results reproduce bit for bit.
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

namespace dattn::sage {

std::vector<float> smooth_k(float* k, std::int64_t n, std::int64_t d, const KeyValid& valid) {
  std::vector<float> mean(d, 0.0f);
  std::int64_t count = 0;
  for (std::int64_t j = 0; j < n; ++j) {
    if (!is_valid(valid, j)) continue;
    ++count;
    for (std::int64_t c = 0; c < d; ++c) mean[c] += k[j * d + c];
  }
  if (count > 0)
    for (auto& m : mean) m /= static_cast<float>(count);
  for (std::int64_t j = 0; j < n; ++j) {
    float* row = k + j * d;
    if (is_valid(valid, j)) {
      for (std::int64_t c = 0; c < d; ++c) row[c] -= mean[c];
    } else {
      // Padding keys count as 0 in the INT8 block amax (and may hold anything, even NaN).
      std::fill(row, row + d, 0.0f);
    }
  }
  return mean;
}

float q_fold_factor(float softmax_scale) { return softmax_scale * kLog2e; }

void fold_q_scale(float* q, std::int64_t n, float softmax_scale) {
  const float f = q_fold_factor(softmax_scale);
  for (std::int64_t i = 0; i < n; ++i) q[i] *= f;
}

std::int8_t quantize_int8(float x, float inv) {
  // nearbyint rounds ties to even in the default rounding mode; |x * inv| may exceed 127 by an ulp.
  const float r = std::nearbyint(x * inv);
  return static_cast<std::int8_t>(std::clamp(r, -kInt8Max, kInt8Max));
}

Int8Blocks quantize_int8_blocks(const float* x, std::int64_t rows, std::int64_t d, std::int64_t block_rows) {
  Int8Blocks out;
  out.rows = rows;
  out.dim = d;
  out.block_rows = block_rows;
  out.data.assign(rows * d, 0);
  out.scale.assign((rows + block_rows - 1) / block_rows, 0.0f);
  for (std::int64_t blk = 0; blk * block_rows < rows; ++blk) {
    const std::int64_t r0 = blk * block_rows, r1 = std::min(rows, r0 + block_rows);
    float amax = 0.0f;
    for (std::int64_t i = r0 * d; i < r1 * d; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float inv = kInt8Max / amax;
    // amax 0 (or tiny enough that 127 / amax overflows) leaves scale 0 and zeros, never NaN.
    if (!(amax > 0.0f) || !std::isfinite(inv)) continue;
    out.scale[blk] = amax / kInt8Max;
    for (std::int64_t i = r0 * d; i < r1 * d; ++i) out.data[i] = quantize_int8(x[i], inv);
  }
  return out;
}

Fp8Channels quantize_v_e4m3(const float* v, std::int64_t n, std::int64_t d, const KeyValid& valid) {
  Fp8Channels out;
  out.rows = n;
  out.dim = d;
  out.data.assign(n * d, 0);  // 0x00 is +0 in e4m3
  std::vector<float> amax(d, 0.0f);
  for (std::int64_t j = 0; j < n; ++j) {
    if (!is_valid(valid, j)) continue;
    for (std::int64_t c = 0; c < d; ++c) amax[c] = std::max(amax[c], std::fabs(v[j * d + c]));
  }
  out.scale.resize(d);
  for (std::int64_t c = 0; c < d; ++c) {
    const float s = amax[c] / kE4m3Max;
    out.scale[c] = s == 0.0f ? 1.0f : s;  // all-zero (or underflowing) channel: avoid 0 / 0
  }
  for (std::int64_t j = 0; j < n; ++j) {
    if (!is_valid(valid, j)) continue;
    for (std::int64_t c = 0; c < d; ++c) out.data[j * d + c] = f32_to_e4m3(v[j * d + c] / out.scale[c]);
  }
  return out;
}

}  // namespace dattn::sage
