#include "dattn/attention/reference.h"

#include <cmath>
#include <limits>

#include "dattn/core/dtype.h"

namespace dattn {
namespace {

// The general mask's contribution to score (b, h, i, j): 0 to keep, -inf to hide, or the additive value.
double general_mask_term(const AttentionProblem& p, std::int64_t b, std::int64_t h, std::int64_t i, std::int64_t j) {
  const GeneralMask& m = *p.mask;
  const std::int64_t mh = m.heads == 1 ? 0 : h;
  const std::int64_t idx = ((b * m.heads + mh) * p.shape.seq_q + i) * p.shape.seq_k + j;
  if (m.type == GeneralMaskType::Boolean)
    return static_cast<const std::uint8_t*>(m.data)[idx] ? 0.0 : -std::numeric_limits<double>::infinity();
  return static_cast<const float*>(m.data)[idx];
}

}  // namespace

void attention_reference_f64(const AttentionProblem& p, std::vector<double>& out64) {
  p.validate();
  const auto& s = p.shape;
  const std::int64_t B = s.batch, Sq = s.seq_q, Sk = s.seq_k, Hq = s.heads_q, Hkv = s.heads_kv, D = s.head_dim;
  std::vector<double> q(B * Sq * Hq * D), k(B * Sk * Hkv * D), v(B * Sk * Hkv * D);
  to_f64(p.q, s.dtype, q.data(), q.size());
  to_f64(p.k, s.dtype, k.data(), k.size());
  to_f64(p.v, s.dtype, v.data(), v.size());
  out64.assign(B * Sq * Hq * D, 0.0);
  const double scale = p.scale ? double(*p.scale) : 1.0 / std::sqrt(double(D));
  const std::int64_t group = Hq / Hkv;

#pragma omp parallel for collapse(2) schedule(dynamic)
  for (std::int64_t b = 0; b < B; ++b) {
    for (std::int64_t h = 0; h < Hq; ++h) {
      const std::int64_t hk = h / group;
      std::vector<double> score(Sk);
      std::vector<char> hidden(Sk);
      for (std::int64_t i = 0; i < Sq; ++i) {
        const double* qi = &q[((b * Sq + i) * Hq + h) * D];
        double mx = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < Sk; ++j) {
          double sc = -std::numeric_limits<double>::infinity();
          const double term = p.mask ? general_mask_term(p, b, h, i, j) : 0.0;
          // A key hidden by padding or a boolean 0 is never scored (torch's masked_fill replaces even a
          // NaN score); an additive mask is added to the score, NaN included, as torch adds it.
          const bool masked = !p.key_valid(b, j) || !p.causal_visible(i, j) || (p.mask && p.mask->type == GeneralMaskType::Boolean &&
                                                     term == -std::numeric_limits<double>::infinity());
          if (!masked) {
            const double* kj = &k[((b * Sk + j) * Hkv + hk) * D];
            double dot = 0;
            for (std::int64_t d = 0; d < D; ++d) dot += qi[d] * kj[d];
            sc = dot * scale + term;
          }
          score[j] = sc;
          // NaN wins the max (std::max would drop it): a NaN score makes the whole row NaN, as in torch.
          if (sc > mx || std::isnan(sc)) mx = std::isnan(mx) ? mx : sc;
        }
        double* o = &out64[((b * Sq + i) * Hq + h) * D];
        if (mx == -std::numeric_limits<double>::infinity()) continue;  // no valid key: zeros
        double sum = 0;
        for (std::int64_t j = 0; j < Sk; ++j) {
          hidden[j] = score[j] == -std::numeric_limits<double>::infinity();  // masked: takes no part
          score[j] = std::exp(score[j] - mx);
          sum += score[j];
        }
        for (std::int64_t j = 0; j < Sk; ++j) {
          // Only masked keys are skipped (their V may hold anything); a key whose weight underflows to
          // 0 still takes part, so a NaN in its V reaches the row as 0 * NaN does in torch.
          if (hidden[j]) continue;
          const double w = score[j] / sum;
          const double* vj = &v[((b * Sk + j) * Hkv + hk) * D];
          for (std::int64_t d = 0; d < D; ++d) o[d] += w * vj[d];
        }
      }
    }
  }
}

}  // namespace dattn
