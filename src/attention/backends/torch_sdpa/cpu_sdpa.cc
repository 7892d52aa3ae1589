// Reference attention: one fp32 score row per query, softmax with the max subtracted, then P.V.
#include "attention/backends/torch_sdpa/cpu_sdpa.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "attention/backends/f32_view.h"
#include "dattn/core/error.h"

namespace dattn::sdpa {
namespace {

constexpr float kNegInf = -std::numeric_limits<float>::infinity();


}  // namespace

void sdpa_attention_cpu(const AttentionProblem& p) {
  const AttentionShape& sh = p.shape;
  if (sh.dtype != DType::F32 && sh.dtype != DType::BF16 && sh.dtype != DType::F16 && sh.dtype != DType::F64)
    throw UserError("sdpa (cpu): dtype " + std::string(dtype_name(sh.dtype)) + " is not a float input type");
  const std::int64_t B = sh.batch, Sq = sh.seq_q, Sk = sh.seq_k, Hq = sh.heads_q, Hkv = sh.heads_kv;
  const std::int64_t D = sh.head_dim, group = Hq / Hkv;
  const F32View q(p.q, sh.dtype, B * Sq * Hq * D);
  const F32View k(p.k, sh.dtype, B * Sk * Hkv * D);
  const F32View v(p.v, sh.dtype, B * Sk * Hkv * D);
  std::vector<float> out_copy;
  float* out = static_cast<float*>(p.out);
  if (sh.dtype != DType::F32) {
    out_copy.resize(B * Sq * Hq * D);
    out = out_copy.data();
  }
  std::vector<std::uint8_t> valid(B * Sk);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t j = 0; j < Sk; ++j) valid[b * Sk + j] = p.key_valid(b, j) ? 1 : 0;
  const float scale = p.softmax_scale();
  const GeneralMask* mask = p.mask ? &*p.mask : nullptr;
  const bool causal = sh.causal();

#pragma omp parallel
  {
    std::vector<float> scores(Sk), acc(D);
    std::vector<char> hidden(Sk);
#pragma omp for collapse(2) schedule(dynamic)
    for (std::int64_t b = 0; b < B; ++b) {
      for (std::int64_t h = 0; h < Hq; ++h) {
        const std::int64_t hkv = h / group;
        for (std::int64_t i = 0; i < Sq; ++i) {
          const float* qi = q.data() + ((b * Sq + i) * Hq + h) * D;
          // The general mask row of (b, h, i); its heads are 1 (broadcast) or Hq.
          const std::int64_t mask_row = mask ? ((b * mask->heads + (mask->heads == 1 ? 0 : h)) * Sq + i) * Sk : 0;
          float row_max = kNegInf;
          for (std::int64_t j = 0; j < Sk; ++j) {
            float s = kNegInf;
            // Causal keys after the query are hidden like padding (never scored, V never read).
            if (valid[b * Sk + j] && (!causal || j <= i)) {
              const float* kj = k.data() + ((b * Sk + j) * Hkv + hkv) * D;
              float dot = 0.0f;
#pragma omp simd reduction(+ : dot)
              for (std::int64_t d = 0; d < D; ++d) dot += qi[d] * kj[d];
              s = scale * dot;
              if (mask && mask->type == GeneralMaskType::Boolean) {
                if (static_cast<const std::uint8_t*>(mask->data)[mask_row + j] == 0) s = kNegInf;
              } else if (mask) {
                s += static_cast<const float*>(mask->data)[mask_row + j];
              }
            }
            scores[j] = s;
            if (s > row_max || s != s) row_max = row_max != row_max ? row_max : s;  // NaN wins, as in torch
          }
          float* oi = out + ((b * Sq + i) * Hq + h) * D;
          if (row_max == kNegInf) {  // every key hidden: zeros, never NaN
            std::fill(oi, oi + D, 0.0f);
            continue;
          }
          float sum = 0.0f;
          for (std::int64_t j = 0; j < Sk; ++j) {
            hidden[j] = scores[j] == kNegInf;
            scores[j] = std::exp(scores[j] - row_max);
            sum += scores[j];
          }
          std::fill(acc.begin(), acc.end(), 0.0f);
          for (std::int64_t j = 0; j < Sk; ++j) {
            // Hidden keys are skipped, not multiplied by 0, so whatever padding holds (even NaN) never
            // reaches the output; a visible key whose weight underflows to 0 still takes part (0 * NaN).
            if (hidden[j]) continue;
            const float pj = scores[j] / sum;
            const float* vj = v.data() + ((b * Sk + j) * Hkv + hkv) * D;
#pragma omp simd
            for (std::int64_t d = 0; d < D; ++d) acc[d] += pj * vj[d];
          }
          std::copy(acc.begin(), acc.end(), oi);
        }
      }
    }
  }
  if (sh.dtype != DType::F32) from_f32(out_copy.data(), sh.dtype, p.out, out_copy.size());
}

}  // namespace dattn::sdpa
