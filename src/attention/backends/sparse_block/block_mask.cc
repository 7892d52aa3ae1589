// Block mask estimation for SPARSE_BLOCK. Every sum here runs in a fixed order in fp32 (rows and keys in
// groups of kPoolGroupRows, see pool_rows; channels ascending), so a CUDA port that keeps the order
// reproduces the mask exactly.
#include "attention/backends/sparse_block/block_mask.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include "attention/backends/f32_view.h"
#include "dattn/core/error.h"

namespace dattn::sparse {
namespace {


// NaN scores order first (as +inf), so the sort below always sees a strict weak order and a block whose
// pooled Q or K holds NaN is kept rather than dropped: corrupt inputs must reach the output, not vanish.
float sort_key(float s) { return std::isnan(s) ? std::numeric_limits<float>::infinity() : s; }

// Fewest leading blocks of `order` whose estimated mass w = softmax_j(s_j + log(valid_keys_j)) reaches
// the threshold; every block when rounding keeps the total just below it.
std::int64_t cdf_block_count(std::span<const float> scores, std::span<const std::int32_t> valid_keys,
                             const std::vector<std::int32_t>& order, double threshold) {
  std::vector<float> logit(order.size());
  float max_logit = -std::numeric_limits<float>::infinity();
  for (std::size_t k = 0; k < order.size(); ++k) {
    const std::int32_t j = order[k];
    logit[k] = scores[j] + std::log(static_cast<float>(valid_keys[j]));  // a block stands for all its keys
    max_logit = std::max(max_logit, logit[k]);
  }
  float total = 0.0f;
  for (float& x : logit) {
    x = std::exp(x - max_logit);
    total += x;
  }
  float mass = 0.0f;
  for (std::size_t k = 0; k < order.size(); ++k) {
    mass += logit[k] / total;
    if (mass >= static_cast<float>(threshold)) return static_cast<std::int64_t>(k) + 1;
  }
  return static_cast<std::int64_t>(order.size());
}

// The sum of rows [begin, end) into sum[0, D) (overwritten): fp32 sums over groups of kPoolGroupRows rows
// in row order, then the group sums added in group order, so that a GPU can sum the groups in parallel
// and still give the same bits. row(i) is the row's data, or nullptr to skip it (an invalid key).
// Returns the number of rows summed.
template <typename Row>
std::int32_t pool_rows(std::int64_t begin, std::int64_t end, std::int64_t D, float* sum, float* part, Row row) {
  std::fill_n(sum, D, 0.0f);
  std::int32_t n = 0;
  for (std::int64_t g = begin; g < end; g += kPoolGroupRows) {
    std::fill_n(part, D, 0.0f);
    for (std::int64_t i = g; i < std::min(end, g + kPoolGroupRows); ++i) {
      const float* x = row(i);
      if (!x) continue;
      ++n;
      for (std::int64_t d = 0; d < D; ++d) part[d] += x[d];
    }
    for (std::int64_t d = 0; d < D; ++d) sum[d] += part[d];
  }
  return n;
}

}  // namespace

void check_mask_options(const BlockMaskOptions& options) {
  if (options.block_size <= 0) throw std::invalid_argument("block mask: block size must be positive");
  const auto in_unit = [](const char* name, const std::optional<double>& value) {
    if (value && !(*value > 0.0 && *value <= 1.0))
      throw std::invalid_argument(std::string("block mask: ") + name + " " + std::to_string(*value) +
                                  " is not in (0, 1]");
  };
  in_unit("density", options.density);
  in_unit("cdf_threshold", options.cdf_threshold);
}

std::int64_t density_block_count(double density, std::int64_t n_valid_blocks) {
  if (n_valid_blocks <= 0) return 0;
  // A product within 1e-9 of an integer is that integer: 0.3 * 10 is 3.0000000000000004 in binary
  // and must keep 3 blocks, not 4.
  const double raw = density * static_cast<double>(n_valid_blocks);
  const double nearest = std::round(raw);
  const double count = std::abs(raw - nearest) < 1e-9 ? nearest : std::ceil(raw);
  return std::clamp(static_cast<std::int64_t>(count), std::int64_t{1}, n_valid_blocks);
}

std::vector<std::int32_t> select_key_blocks(std::span<const float> scores, std::span<const std::int32_t> valid_keys,
                                            std::int64_t query_block, const BlockMaskOptions& options) {
  std::vector<std::int32_t> order;
  for (std::size_t j = 0; j < scores.size(); ++j)
    if (valid_keys[j] > 0) order.push_back(static_cast<std::int32_t>(j));
  if (order.empty()) return order;
  // Score descending; the stable sort keeps ascending block index among equal scores.
  std::stable_sort(order.begin(), order.end(),
                   [&](std::int32_t a, std::int32_t b) { return sort_key(scores[a]) > sort_key(scores[b]); });
  if (options.keep_diagonal) {
    auto diagonal = std::find(order.begin(), order.end(), static_cast<std::int32_t>(query_block));
    if (diagonal != order.end()) std::rotate(order.begin(), diagonal, diagonal + 1);
  }
  const auto valid_blocks = static_cast<std::int64_t>(order.size());
  std::int64_t keep = density_block_count(options.density.value_or(kDefaultDensity), valid_blocks);
  if (options.cdf_threshold) {
    const std::int64_t by_mass = cdf_block_count(scores, valid_keys, order, *options.cdf_threshold);
    // Both given: the smaller set wins. cdf_threshold alone: the default density does not apply.
    keep = options.density ? std::min(keep, by_mass) : by_mass;
  }
  order.resize(static_cast<std::size_t>(keep));
  return order;
}

BlockMask estimate_block_mask(const AttentionProblem& p, const BlockMaskOptions& options) {
  const AttentionShape& sh = p.shape;
  if (sh.dtype != DType::F32 && sh.dtype != DType::BF16 && sh.dtype != DType::F16 && sh.dtype != DType::F64)
    throw UserError("block mask: dtype " + std::string(dtype_name(sh.dtype)) + " is not a float input type");
  check_mask_options(options);
  const std::int64_t B = sh.batch, Sq = sh.seq_q, Sk = sh.seq_k, Hq = sh.heads_q, Hkv = sh.heads_kv;
  const std::int64_t D = sh.head_dim, group = Hq / Hkv, bs = options.block_size;
  BlockMask mask;
  mask.block_size = bs;
  mask.batch = B;
  mask.heads = Hq;
  mask.query_blocks = (Sq + bs - 1) / bs;
  mask.key_blocks = (Sk + bs - 1) / bs;
  mask.kept.resize(B * Hq * mask.query_blocks);
  const std::int64_t nqb = mask.query_blocks, nkb = mask.key_blocks;

  const F32View q(p.q, sh.dtype, B * Sq * Hq * D);
  const F32View k(p.k, sh.dtype, B * Sk * Hkv * D);
  std::vector<std::uint8_t> valid(B * Sk);
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t j = 0; j < Sk; ++j) valid[b * Sk + j] = p.key_valid(b, j) ? 1 : 0;
  const float scale = p.softmax_scale();

#pragma omp parallel
  {
    std::vector<float> q_mean(nqb * D), k_mean(nkb * D), scores(nkb), part(D);
    std::vector<std::int32_t> valid_keys(nkb);
#pragma omp for collapse(2) schedule(dynamic)
    for (std::int64_t b = 0; b < B; ++b) {
      for (std::int64_t h = 0; h < Hq; ++h) {
        // 1. Pool: mean of each query block's rows and of each key block's valid keys.
        for (std::int64_t qb = 0; qb < nqb; ++qb) {
          const std::int64_t end = std::min(Sq, (qb + 1) * bs);
          pool_rows(qb * bs, end, D, q_mean.data() + qb * D, part.data(), [&](std::int64_t i) {
            return q.data() + ((b * Sq + i) * Hq + h) * D;
          });
          for (std::int64_t d = 0; d < D; ++d) q_mean[qb * D + d] /= static_cast<float>(end - qb * bs);
        }
        for (std::int64_t kb = 0; kb < nkb; ++kb) {
          valid_keys[kb] = pool_rows(kb * bs, std::min(Sk, (kb + 1) * bs), D, k_mean.data() + kb * D, part.data(),
                                     [&](std::int64_t j) {
                                       return valid[b * Sk + j] ? k.data() + ((b * Sk + j) * Hkv + h / group) * D
                                                                : nullptr;
                                     });
          if (valid_keys[kb] == 0) continue;
          for (std::int64_t d = 0; d < D; ++d) k_mean[kb * D + d] /= static_cast<float>(valid_keys[kb]);
        }
        // 2-4. Score every (query block, key block) pair, then order and count per query block.
        for (std::int64_t qb = 0; qb < nqb; ++qb) {
          for (std::int64_t kb = 0; kb < nkb; ++kb) {
            float dot = 0.0f;
            for (std::int64_t d = 0; d < D; ++d) dot += q_mean[qb * D + d] * k_mean[kb * D + d];
            scores[kb] = scale * dot;
          }
          mask.kept[(b * Hq + h) * nqb + qb] = select_key_blocks(scores, valid_keys, qb, options);
        }
      }
    }
  }
  return mask;
}

}  // namespace dattn::sparse
