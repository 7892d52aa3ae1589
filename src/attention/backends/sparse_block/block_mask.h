#pragma once
// SPARSE_BLOCK's block mask: which key blocks each query block attends to, estimated per call from
// mean-pooled Q and K (docs/backend-semantics.md, SPARSE_BLOCK steps 1-4). Public so that tests and a
// CUDA kernel can compare masks block for block.
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "dattn/attention/problem.h"

namespace dattn::sparse {

inline constexpr std::int64_t kDefaultBlockSize = 128;
inline constexpr double kDefaultDensity = 0.25;
// Pooling sums a block's rows in groups of this many (each in row order), then the group sums in order:
// the grouping lets the CUDA estimator sum groups in parallel and still match the CPU bit for bit.
inline constexpr std::int64_t kPoolGroupRows = 16;  // applies only when neither density nor cdf_threshold is given

struct BlockMaskOptions {
  std::int64_t block_size = kDefaultBlockSize;  // 64 or 128, for query and key blocks alike
  std::optional<double> density;                // (0, 1]; explicit only when the user gave it
  std::optional<double> cdf_threshold;          // (0, 1]
  bool keep_diagonal = true;
};

struct BlockMask {
  std::int64_t block_size = 0, batch = 0, heads = 0, query_blocks = 0, key_blocks = 0;
  // Kept key block indices per (b, query head h, query block qb) at (b * heads + h) * query_blocks + qb,
  // in mask order (the diagonal first when kept, then by estimated score, descending).
  std::vector<std::vector<std::int32_t>> kept;

  const std::vector<std::int32_t>& at(std::int64_t b, std::int64_t h, std::int64_t qb) const {
    return kept[(b * heads + h) * query_blocks + qb];
  }
};

// Throws std::invalid_argument naming the field when block_size is not positive or density /
// cdf_threshold (when given) is outside (0, 1]: the backend checks user extras before this, so
// a failure here is a caller's bug. The CPU and CUDA estimators both call it.
void check_mask_options(const BlockMaskOptions& options);

// Whether the options keep every key block whatever the inputs (density 1, no cdf threshold): the
// mask then need not be estimated, and the result is FLASH_ATTN's.
inline bool keeps_every_block(const BlockMaskOptions& options) {
  return options.density.has_value() && *options.density >= 1.0 && !options.cdf_threshold.has_value();
}

// Blocks that a density keeps out of n valid ones: max(1, ceil(density * n)), 0 when n is 0.
std::int64_t density_block_count(double density, std::int64_t n_valid_blocks);

// Steps 2-4 for one query block. scores[j] = scale * qm . km[j] for every key block j; valid_keys[j]
// is its number of valid keys (0 excludes block j). Returns the kept blocks in mask order.
std::vector<std::int32_t> select_key_blocks(std::span<const float> scores, std::span<const std::int32_t> valid_keys,
                                            std::int64_t query_block, const BlockMaskOptions& options);

// Steps 1-4 for every (b, h, query block) of a problem (any float input dtype, converted exactly to
// fp32; key padding applies; GQA: query head h pools the keys of kv head h / (Hq / Hkv)).
BlockMask estimate_block_mask(const AttentionProblem& problem, const BlockMaskOptions& options);

}  // namespace dattn::sparse
